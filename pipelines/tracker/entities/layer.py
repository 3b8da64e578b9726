"""The entities of `[scope] entities` (projects, portfolios, goals and what hangs off them:
comments, checklists, files, links, access) as the tracker service plugs them in: their plans,
extract (`extract`), load specs (`specs`, `bodies`, `prints`, `access`), plan decisions and
check findings (`checks`), export tables (`export`) and what they leave out; `ENTITIES` is
the layer the service loops over.

Nothing here when the scope names no entity type (the default): no stream, no plan, no spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.config.mapping_files import read_groups_csv
from haul.pipelines.engine import PlanFn
from haul.pipelines.findings import Finding
from haul.pipelines.planner import Planner
from haul.pipelines.services import Entity, SourceParts, sync_changes
from haul.pipelines.specs import EntitySpec
from haul.pipelines.tracker.entities.access import EntityHolders
from haul.pipelines.tracker.entities.bodies import EntityBodies, not_carried
from haul.pipelines.tracker.entities.checks import EntityPlanner, entity_findings
from haul.pipelines.tracker.entities.export import TABLES
from haul.pipelines.tracker.entities.extract import EntityDrain, EntityStream, entity_extract
from haul.pipelines.tracker.entities.prints import EntityPrints
from haul.pipelines.tracker.entities.specs import ENTITY_PLANS, EntityLoad
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.target import TrackerTarget
from haul.pipelines.tracker.transform import Transform
from haul.state.store import StagingStore


def entity_plans(config: Config) -> dict[str, PlanFn]:
    """The ledger plans of the entities in scope and of what hangs off them."""
    kinds = config.scope.entity_types
    if not kinds:
        return {}
    return {name: plan for name, plan in ENTITY_PLANS.items() if name not in _unchosen(kinds)}


def entity_source(
    client: TrackerClient, store: StagingStore, config: Config
) -> tuple[list[EntityStream], list[EntityDrain]]:
    """The streams and drains of the entity types in scope."""
    return entity_extract(client, store, config.scope.entity_types)


@dataclass
class EntityTarget:
    """The entities' part of one target org's load."""

    kinds: tuple[str, ...]
    bodies: EntityBodies
    load: EntityLoad | None

    @property
    def specs(self) -> list[EntitySpec]:
        return self.load.specs(self.kinds) if self.load else []

    def not_carried(self) -> dict[str, int]:
        """What the load leaves out of the staged entities, counted from the store."""
        return dict(sorted(not_carried(self.bodies, self.kinds).items())) if self.kinds else {}

    def changes(self) -> Mapping[tuple[str, str], int]:
        return self.load.changes if self.load else {}

    def planner(self, rest: Planner) -> Planner:
        """`rest`, with fail-closed access rows as conflicts."""
        return EntityPlanner(self.bodies, rest) if self.kinds else rest

    def findings(self) -> list[Finding]:
        """`haul check`'s findings on entity permissions (none when no entity is in scope)."""
        return entity_findings(self.bodies, self.kinds) if self.kinds else []


async def entity_target(target: TrackerTarget) -> EntityTarget:
    """The entities' load against one target org (its groups read once, when in scope)."""
    client, store, transform, keys = target.client, target.store, target.transform, target.keys
    kinds = target.config.scope.entity_types
    groups_file = target.config.mapping.groups_file
    groups = await _groups(client) if kinds else {}
    holders = EntityHolders(
        login_of=_strict_login(transform),
        uids=target.uids,
        groups=groups,
        group_file=read_groups_csv(groups_file) if groups_file and kinds else {},
        source_logins=transform.users.source_logins,
    )
    bodies = EntityBodies(store, transform, holders, target.myself or "", keys.key)
    if not kinds:
        return EntityTarget((), bodies, None)
    prints = EntityPrints(client, bodies, target.uids, _target_of(store))
    return EntityTarget(kinds, bodies, EntityLoad(client, store, bodies, prints, keys.current))


async def entity_checks(
    config: Config,
    client: TrackerClient,
    store: StagingStore | None,
    side: str,
    target: TrackerTarget | None,
) -> list[Finding]:
    """`haul check`'s findings on entity permissions, against the target."""
    if target is None or not config.scope.entity_types:
        return []
    return (await entity_target(target)).findings()


async def entities_target_part(target: TrackerTarget) -> TargetPart:
    """The entities in scope into one target org; `haul plan` fails their access closed."""
    entities = await entity_target(target)
    return TargetPart(
        entities.specs,
        not_carried=entities.not_carried,
        changes=lambda: sync_changes(entities.changes(), {}),
        wraps_planner=entities.planner,
    )


async def _groups(client: TrackerClient) -> dict[str, str]:
    """Target group name -> id; none where the service lists no groups (then a group maps
    only to an id `mapping.groups_file` gives)."""
    try:
        return {str(group.get("name")): str(group["id"]) for group in await client.list_groups()}
    except NotFoundError:
        return {}


def _unchosen(kinds: tuple[str, ...]) -> set[str]:
    return {kind for kind in ("portfolio", "project", "goal") if kind not in kinds}


def _strict_login(transform: Transform) -> Callable[[object], str | None]:
    users = transform.users

    def login(ref: object) -> str | None:
        if not ref:
            return None
        uid = str(ref.get("id")) if isinstance(ref, dict) else str(ref)
        source = users.source_logins.get(uid, uid)
        mapped = users.explicit.get(source)
        if mapped is not None:
            return mapped
        return source if source in users.target_logins else None

    return login


def _target_of(store: StagingStore) -> Callable[[str, str], str | None]:
    def target_of(entity: str, source_id: str) -> str | None:
        row = store.ledger.get(entity, source_id)
        return row.target_id if row is not None and row.status == "done" else None

    return target_of


def entity_streams(client: TrackerClient, store: StagingStore, config: Config) -> SourceParts:
    """The extract of the entity types in scope (`entity_source`)."""
    streams, drains = entity_source(client, store, config)
    return SourceParts(list(streams), list(drains))


ENTITIES = Layer(
    "entities",
    entities=(  # each after its parents' types
        Entity("entity_access", optional=True),
        Entity("entity_comment", optional=True),
        Entity("entity_checklist", optional=True),
        Entity("entity_attachment", optional=True, files=True),
        Entity("portfolio", optional=True),
        Entity("project", optional=True),
        Entity("goal", optional=True),
        Entity("entity_link", optional=True),
    ),
    tables=TABLES,
    plans=entity_plans,
    source=entity_streams,
    checks=entity_checks,
    target=entities_target_part,
)
