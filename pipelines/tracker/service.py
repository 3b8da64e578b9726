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

The load, plan and verify need the target's dictionaries, queues and users: the target context
(`pipelines.tracker.target.TrackerTarget`) is built once per command and handed to every part:
it stages them under `target.` (not for verify, which writes nothing but its results), builds
the transform from both orgs' staged dictionaries, and its preflight stops before any write if
the target lacks a queue or a dictionary key. Back-filled form answers load here as issues
(`pipelines.tracker.backfill`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.tables import Registry
from haul.pipelines.findings import Finding
from haul.pipelines.forms.staged import check_rules
from haul.pipelines.services import Details, Entity, SourceParts, TargetParts, core_options
from haul.pipelines.shards.units import Unit
from haul.pipelines.specs import EntitySpec
from haul.pipelines.streams import ExtractStats
from haul.pipelines.tracker.backfill.answers import TrackerBackfill
from haul.pipelines.tracker.backfill.layer import BACKFILL
from haul.pipelines.tracker.checks.check import checked_target
from haul.pipelines.tracker.checks.layer import CHECKS
from haul.pipelines.tracker.checks.limits import LimitPlanner, TargetLimits
from haul.pipelines.tracker.entities.layer import ENTITIES, EntityTarget, entity_target
from haul.pipelines.tracker.flow.layer import FLOW
from haul.pipelines.tracker.issues.fingerprints import TargetProbe, TrackerFingerprints
from haul.pipelines.tracker.issues.layer import ISSUES
from haul.pipelines.tracker.issues.plan import TrackerPlanner
from haul.pipelines.tracker.issues.specs import TrackerLoad
from haul.pipelines.tracker.issues.three_way import IssueForms
from haul.pipelines.tracker.issues.verify import TrackerVerifier
from haul.pipelines.tracker.layer import Layer
from haul.pipelines.tracker.organisation.configuration import queue_configuration
from haul.pipelines.tracker.organisation.layer import ORGANISATION
from haul.pipelines.tracker.organisation.shard_units import tracker_units
from haul.pipelines.tracker.organisation.specs import OrganisationLoad
from haul.pipelines.tracker.planning.layer import PLANNING, PlanningLoad, planning_load
from haul.pipelines.tracker.planning.quiet_rules import QuietRules, held_in_target
from haul.pipelines.tracker.sync.deletions import DeletionSync, deleted_counts, deleted_in_target
from haul.pipelines.tracker.sync.layer import SYNC
from haul.pipelines.tracker.sync.preview import TrackerPreview
from haul.pipelines.tracker.sync.statuses import StatusSync, done_statuses
from haul.pipelines.tracker.sync.texts import TextPatches
from haul.pipelines.tracker.sync.undo import TrackerRemovals
from haul.pipelines.tracker.target import TrackerTarget, mentions, source_scan
from haul.pipelines.tracker.transform import Transform
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
        self, config: Config, client: TrackerClient, store: StagingStore, *, read_only: bool = False
    ) -> TargetParts:
        target = await TrackerTarget.of(config, client, store, read_only=read_only)
        target.preflight()
        check_rules(config, store, "tracker")
        transform = target.transform
        configuration = await queue_configuration(target)
        organisation = OrganisationLoad(client, store, transform, config.mapping.create_missing,
                                        restrict=configuration.restrict_new_queue)  # fmt: skip
        limits = TargetLimits(store, config.limits, transform.comment_text)
        backfill, load, planning = (
            _backfill(target),
            _issue_load(target, limits),
            planning_load(target),
        )
        entities = await entity_target(target)
        specs = organisation.specs() + configuration.specs()
        specs += load.specs() + planning.specs + backfill.specs()
        specs += entities.specs
        verifier = TrackerVerifier(client, transform, load.prints, store.written.base)
        return TargetParts(
            specs,
            in_target=_in_target(target),
            unmapped_users=lambda: sorted(transform.users.unmapped | backfill.defaulted),
            planner=LimitPlanner(limits, entities.planner(_planner(target, specs))),
            verifier=verifier,
            not_carried=lambda: (
                _not_carried(transform, planning, entities, load)
                | dict(load.kept)
                | configuration.not_carried()
                | organisation.kept
            ),
            changes=lambda: _changes(store, load.changes, entities.changes()),
            removals=TrackerRemovals(client, store, transform.queues).removals(),
            preview=TrackerPreview(client, store, transform, verifier.compare, load.field_changes),
            references=source_scan(store, config, mentions(transform, config)),
            holding=QuietRules(client, store, transform.queues).holding,
        )

    async def shard_units(self, config: Config, client: TrackerClient) -> list[Unit]:
        """A shard manifest's units: one per queue, cut into windows when large."""
        return await tracker_units(config, client)

    def held_in_target(self, store: StagingStore) -> list[str]:
        """Its triggers and autoactions a killed load left switched off (see `quiet_rules`)."""
        return held_in_target(store)

    async def checks(
        self, config: Config, client: TrackerClient, store: StagingStore | None, side: str
    ) -> list[Finding]:
        target = await checked_target(config, client, store, side)
        found = []
        for layer in LAYERS:
            if layer.checks is not None:
                found += await layer.checks(config, client, store, side, target)
        if target is not None and config.scope.entity_types:
            found += (await entity_target(target)).findings()
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


def _backfill(target: TrackerTarget) -> TrackerBackfill:
    """The back-fills into the tracker, their preflight passed (before any write)."""
    users, dictionaries = target.transform.users, target.transform.dictionaries
    backfill = TrackerBackfill(target.client, target.store, target.config,
                               users.target_logins, dictionaries.target_ids)  # fmt: skip
    if not target.read_only:
        backfill.preflight()
    return backfill


def _issue_load(target: TrackerTarget, limits: TargetLimits) -> TrackerLoad:
    """The issues and what hangs off them: found by their fingerprints, statuses walked
    through the target's workflow, deletions mirrored when `[sync] deletions = "mirror"`."""
    client, transform, keys = target.client, target.transform, target.keys
    prints = TrackerFingerprints(client, transform, target.uids, keys.key)
    statuses = StatusSync(client, transform, keys.key, done_statuses(target.store))
    mirror = target.config.sync.deletions == "mirror"
    deletions = DeletionSync(client, keys.key, transform.queues.queue) if mirror else None
    probe = TargetProbe(client)
    forms = IssueForms(TrackerVerifier(client, transform, prints), transform)
    patches = TextPatches(client, target.store, transform.references, transform.text)
    return TrackerLoad(
        client, target.store, transform, probe, prints, keys, statuses, limits.check, forms,
        deletions, patches=patches, conflicts=target.config.sync.conflicts,
    )  # fmt: skip


def _in_target(target: TrackerTarget) -> Callable[[], Awaitable[dict[str, int]]]:
    """The target's own count of the migrated queues' issues: the scope's, and those an
    earlier run of the same store migrated (a migration done queue by queue)."""
    scope = set(target.config.scope.queues)

    async def in_target() -> dict[str, int]:
        staged = {key.partition("-")[0] for key in target.store.source_ids("issue")}
        queues = sorted({target.transform.queues.queue(queue) for queue in scope | staged})
        # an issue loaded, then deleted in the target because the source deleted it, is
        # accounted for: the ledger still counts it loaded
        gone = deleted_in_target(target.store).get("issue", 0)
        return {"issue": await _issue_count(target.client, queues) + gone}

    return in_target


def _planner(target: TrackerTarget, specs: list[EntitySpec]) -> TrackerPlanner:
    transform = target.transform
    return TrackerPlanner(
        target.client,
        target.store,
        {spec.name: spec for spec in specs},
        transform.unique_prefix,
        transform.queues.key,
        unmapped_access=lambda raw: transform.access(raw).unmapped,
    )


def _not_carried(
    transform: Transform, planning: PlanningLoad, entities: EntityTarget, load: TrackerLoad
) -> dict[str, int]:
    """What the load left out of records it still loaded ("field: why" -> how many), and
    the fields changed at the source that no update call can change (`sync.fields`)."""
    dropped = transform.structure.dropped if transform.structure else {}
    carried = {f"{field}: {why}": n for (field, why), n in sorted(dropped.items())}
    fixed = {
        f"{name}: changed at the source, no update call changes it": n
        for name, n in sorted(load.not_updatable.items())
    }
    left = {f"reference: {what}": n for what, n in sorted(transform.references.left.items())}
    return carried | fixed | left | planning.not_carried() | entities.not_carried()


def _changes(
    store: StagingStore,
    issues: Mapping[tuple[str, str], int],
    entities: Mapping[tuple[str, str], int],
) -> dict[str, dict[str, int]]:
    """What this run did, and what its extract found deleted at the source."""
    runs = store.recent_runs(1)
    since = runs[0]["started_at"] if runs else None
    left = deleted_counts(store, since, out_of_scope=True)
    return sync_changes(issues, deleted_counts(store, since), left) | sync_changes(entities, {})


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
