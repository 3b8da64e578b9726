"""The tracker as a service: its layers in load order, and the target context they load into.

The tracker is cut along DESIGN's load layers, one folder each, each handing the service one
`Layer` (`pipelines.tracker.layer`: its entities, export tables, plans, extract parts and
checks); the service concatenates them in the order of `LAYERS`::

    organisation/   dictionaries, fields, queues, components, versions, boards, sprints
    issues/         issues and their comments, worklogs, attachments, checklists, links
    entities/       projects, portfolios, goals and what hangs off them
    planning/       saved filters, dashboards, remote links, autoactions
    backfill/       form answers loaded as issues
    sync/           status changes, moves, deletions at the source (planned last)
    flow/           the analysts' flow model (export tables only)
    checks/         what `haul check` finds

The load needs the target's dictionaries, queues and users: they are staged (under `target.`)
when the load starts, the transform is built from both orgs' staged dictionaries, and the
preflight stops before any write if the target lacks a queue or a dictionary key
(`pipelines.tracker.target`); `TrackerService.target` wires each layer's specs to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.tables import Registry
from haul.pipelines.findings import Finding
from haul.pipelines.forms.staged import check_rules
from haul.pipelines.services import Details, Entity, SourceParts, TargetParts, core_options
from haul.pipelines.streams import ExtractStats
from haul.pipelines.tracker.backfill.answers import TrackerBackfill
from haul.pipelines.tracker.backfill.layer import BACKFILL
from haul.pipelines.tracker.checks.layer import CHECKS
from haul.pipelines.tracker.entities.layer import ENTITIES, entity_target
from haul.pipelines.tracker.flow.layer import FLOW
from haul.pipelines.tracker.issues.fingerprints import TrackerFingerprints
from haul.pipelines.tracker.issues.layer import ISSUES
from haul.pipelines.tracker.issues.plan import TrackerPlanner
from haul.pipelines.tracker.issues.probes import TargetProbe
from haul.pipelines.tracker.issues.specs import TrackerLoad
from haul.pipelines.tracker.issues.verify import TrackerVerifier
from haul.pipelines.tracker.layer import Layer
from haul.pipelines.tracker.organisation.layer import ORGANISATION
from haul.pipelines.tracker.organisation.specs import OrganisationLoad, structure_map
from haul.pipelines.tracker.planning.layer import PLANNING, planning_load
from haul.pipelines.tracker.sync.deletions import DeletionSync, deleted_counts, deleted_in_target
from haul.pipelines.tracker.sync.layer import SYNC
from haul.pipelines.tracker.sync.moves import TargetKeys
from haul.pipelines.tracker.sync.statuses import StatusSync, done_statuses
from haul.pipelines.tracker.target import build_transform, preflight, stage_target, target_uids
from haul.state.store import StagingStore

# DESIGN's load order: the organisation as configured, the trees and the links between them,
# the planning layer (its entities first, autoactions last); then the back-filled answers (their
# issues stand alone) and the sync (its deletions are found once everything else is planned);
# the flow model and the checks load nothing. The engine plans, and the reports list, in this
# order; the specs' phases order the load itself.
LAYERS: tuple[Layer, ...] = (ORGANISATION, ISSUES, ENTITIES, PLANNING, BACKFILL, SYNC, FLOW, CHECKS)
ENTITIES_IN_ORDER = tuple(entity for layer in LAYERS for entity in layer.entities)
# the export lists the issues' tables first, then what is derived from them, the planning layer
# and the organisation's structure (`haul export --describe`, README's column reference)
TABLES_IN_ORDER = (ISSUES, FLOW, PLANNING, ENTITIES, ORGANISATION)


class TrackerService:
    """The issue tracker: issues and everything hanging off them."""

    name: str = "tracker"
    entities: tuple[Entity, ...] = ENTITIES_IN_ORDER

    @property
    def tables(self) -> Registry:
        return Registry.of(table for layer in TABLES_IN_ORDER for table in layer.tables)

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        # in the layers' order: moves followed before the issues are planned, deletions last
        return {name: plan for layer in LAYERS for name, plan in layer.plans(config).items()}

    def configured(self, endpoint: Endpoint) -> bool:
        return bool(getattr(endpoint, "tracker_url", None))

    def client(
        self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning
    ) -> TrackerClient:
        # configured() made sure of the URL
        return TrackerClient.connect(
            base_url=endpoint.tracker_url or "", **core_options(endpoint, environ, tuning)
        )

    async def source(
        self, config: Config, client: TrackerClient, store: StagingStore
    ) -> SourceParts:
        parts = [layer.source(client, store, config) for layer in LAYERS if layer.source]

        async def details(stats: ExtractStats) -> Details:
            found: Details = {}
            for part in parts:
                if part.details is not None:
                    found |= await part.details(stats)
            return found

        streams = [stream for part in parts for stream in part.streams]
        return SourceParts(streams, [drain for part in parts for drain in part.drains], details)

    async def target(
        self, config: Config, client: TrackerClient, store: StagingStore
    ) -> TargetParts:
        await stage_target(client, store)
        transform = build_transform(store, config)
        preflight(store, transform, config)
        transform.structure = structure_map(store, config)
        queue_map = transform.queues
        target_queues = sorted({queue_map.queue(queue) for queue in config.scope.queues})

        async def in_target() -> dict[str, int]:
            # an issue loaded, then deleted in the target because the source deleted it, is
            # accounted for: the ledger still counts it loaded
            gone = deleted_in_target(store).get("issue", 0)
            return {"issue": await _issue_count(client, target_queues) + gone}

        def unmapped() -> list[str]:
            return sorted(transform.users.unmapped | backfill.defaulted)

        check_rules(config, store, "tracker")
        backfill = TrackerBackfill(
            client,
            store,
            config,
            transform.users.target_logins,
            transform.dictionaries.target_ids,
        )
        backfill.preflight()
        keys = TargetKeys(store, queue_map)
        prints = TrackerFingerprints(client, transform, target_uids(store), keys.key)
        statuses = StatusSync(client, transform, keys.key, done_statuses(store))
        mirror = config.sync.deletions == "mirror"
        deletions = DeletionSync(client, keys.key) if mirror else None
        load = TrackerLoad(
            client, store, transform, TargetProbe(client), prints, keys, statuses, deletions
        )
        organisation = OrganisationLoad(client, store, transform, config.mapping.create_missing)
        planning = planning_load(client, store, transform, keys, config)
        specs = organisation.specs() + load.specs() + planning.specs + backfill.specs()
        entities = await entity_target(client, store, transform, config, keys.current, keys.key)
        specs += entities.specs
        by_name = {spec.name: spec for spec in specs}
        planner = TrackerPlanner(
            client,
            store,
            by_name,
            transform.unique_prefix,
            queue_map.key,
            unmapped_access=lambda raw: transform.access(raw).unmapped,
        )
        verifier = TrackerVerifier(client, transform, prints)

        def not_carried() -> dict[str, int]:
            dropped = transform.structure.dropped if transform.structure else {}
            carried = {f"{field}: {why}": n for (field, why), n in sorted(dropped.items())}
            return carried | planning.not_carried() | entities.not_carried()

        def changes() -> dict[str, dict[str, int]]:
            """What this run did, and what its extract found deleted at the source."""
            runs = store.recent_runs(1)
            since = runs[0]["started_at"] if runs else None
            left = deleted_counts(store, since, out_of_scope=True)
            issues = sync_changes(load.changes, deleted_counts(store, since), left)
            return issues | sync_changes(entities.changes(), {})

        return TargetParts(
            specs,
            in_target,
            unmapped,
            entities.planner(planner),
            verifier,
            not_carried,
            changes=changes,
        )

    async def checks(
        self, config: Config, client: TrackerClient, store: StagingStore | None, side: str
    ) -> list[Finding]:
        found = []
        for layer in LAYERS:
            if layer.checks is not None:
                found += await layer.checks(config, client, store, side)
        if side == "target" and store is not None and config.scope.entity_types:
            await stage_target(client, store)
            transform = build_transform(store, config)
            keys = TargetKeys(store, transform.queues)
            entities = await entity_target(client, store, transform, config, keys.current, keys.key)
            found += entities.findings()
        return found

    async def checks_across(
        self,
        config: Config,
        source: TrackerClient,
        target: TrackerClient,
        store: StagingStore | None,
    ) -> list[Finding]:
        """Where the target queues' permissions differ from the source queues' (read-only)."""
        found = []
        for layer in LAYERS:
            if layer.checks_across is not None:
                found += await layer.checks_across(config, source, target, store)
        return found


TRACKER = TrackerService()


async def _issue_count(client: TrackerClient, queues: Any, narrowing: str | None = None) -> int:
    total = 0
    for queue in queues:
        query = f"Queue: {queue}" + (f" AND {narrowing}" if narrowing else "")
        total += await client.count_issues(query=query)
    return total


def sync_changes(
    made: Mapping[tuple[str, str], int],
    deleted_at_source: Mapping[str, int],
    out_of_scope: Mapping[str, int] | None = None,
) -> dict[str, dict[str, int]]:
    """Per entity, what the load did (created, updated, moved, deleted), what the source
    deleted (``deleted_at_source``, listed whether or not it was mirrored) and what left the
    scope while still at the source (``out_of_scope``, never deleted in the target)."""
    summary: dict[str, dict[str, int]] = {}
    for (entity, what), count in sorted(made.items()):
        summary.setdefault(entity, {})[what] = count
    for entity, count in sorted(deleted_at_source.items()):
        summary.setdefault(entity, {})["deleted_at_source"] = count
    for entity, count in sorted((out_of_scope or {}).items()):
        summary.setdefault(entity, {})["out_of_scope"] = count
    return summary
