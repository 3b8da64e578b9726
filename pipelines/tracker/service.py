"""The tracker as a service: its entities, client, extract parts, load parts, checks, tables.

The load, plan and verify need the target's dictionaries, queues and users: the target context
(`pipelines.tracker.target.TrackerTarget`) is built once per command and handed to every part:
it stages them under `target.` (not for verify, which writes nothing but its results), builds
the transform from both orgs' staged dictionaries, and its preflight stops before any write if
the target lacks a queue or a dictionary key. Back-filled form answers load here as issues
(`pipelines.tracker.backfill`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

import structlog

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.tables import REGISTRY, Registry
from haul.pipelines.findings import Finding
from haul.pipelines.forms.staged import check_rules
from haul.pipelines.services import Details, Entity, SourceParts, TargetParts, core_options
from haul.pipelines.specs import EntitySpec
from haul.pipelines.streams import NOT_STAGED, ExtractStats, not_staged
from haul.pipelines.tracker import export, export_planning, export_structure
from haul.pipelines.tracker.backfill import TrackerBackfill, tracker_plans
from haul.pipelines.tracker.checks import checked_target, tracker_checks, tracker_checks_across
from haul.pipelines.tracker.deletions import (
    DELETED,
    DeletionSync,
    deleted_counts,
    deleted_in_target,
    deletion_plan,
    find_vanished_issues,
)
from haul.pipelines.tracker.drain import IssueDrain
from haul.pipelines.tracker.entity_layer import (
    EntityTarget,
    entity_plans,
    entity_source,
    entity_target,
)
from haul.pipelines.tracker.fingerprints import TrackerFingerprints
from haul.pipelines.tracker.moves import follow_moves
from haul.pipelines.tracker.organisation import ORG_PLANS, OrganisationLoad
from haul.pipelines.tracker.plan import TrackerPlanner
from haul.pipelines.tracker.planning_layer import (
    PlanningLoad,
    planning_load,
    planning_plans,
    planning_streams,
)
from haul.pipelines.tracker.probes import TargetProbe
from haul.pipelines.tracker.specs import PLANS, TrackerLoad
from haul.pipelines.tracker.statuses import StatusSync, done_statuses
from haul.pipelines.tracker.streams import IssueScroll, dictionary_streams, structure_streams
from haul.pipelines.tracker.target import TrackerTarget
from haul.pipelines.tracker.transform import Transform
from haul.pipelines.tracker.verify import TrackerVerifier
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)
TABLE_MODULES = (export, export_structure, export_planning)  # imported for their tables

ENTITIES = (
    Entity("status"),
    Entity("issuetype"),
    Entity("priority"),
    Entity("resolution"),
    Entity("queue"),
    Entity("field_category"),
    Entity("field"),
    Entity("local_field"),
    Entity("component"),
    Entity("version"),
    Entity("board"),
    Entity("board_column"),
    Entity("sprint"),
    Entity("issue", source_count="source_issue_count"),
    Entity("comment"),
    Entity("comment_attachment", staged="attachment"),
    Entity("worklog"),
    Entity("attachment", files=True),
    Entity("checklist"),
    Entity("issue_status", optional=True),  # a status changed at the source after the load
    Entity("issue_access", staged="issue"),  # an issue whose source lists anyone on `access`
    Entity("link"),
    Entity("remote_link"),  # the planning layer beside the issues (`planning_layer`)
    Entity("filter", optional=True),  # [scope] filters = "all"
    Entity("dashboard", optional=True),  # [scope] dashboards = "all"
    Entity("dashboard_widget", optional=True),
    Entity("autoaction"),
    Entity("deletion", staged=DELETED, optional=True),  # [sync] deletions = "mirror"
    Entity("backfill_issue", staged="survey_answer", optional=True),
    Entity("backfill_attachment", staged="survey_file", optional=True),
    # the planning layer's entities ([scope] entities), each after its parents' types
    Entity("entity_access", optional=True),
    Entity("entity_comment", optional=True),
    Entity("entity_checklist", optional=True),
    Entity("entity_attachment", optional=True, files=True),
    Entity("portfolio", optional=True),
    Entity("project", optional=True),
    Entity("goal", optional=True),
    Entity("entity_link", optional=True),
    Entity("changelog", loads=False),  # no import endpoint: staged for exports only
)


class TrackerService:
    """The issue tracker: issues and everything hanging off them."""

    name: str = "tracker"
    entities: tuple[Entity, ...] = ENTITIES

    @property
    def tables(self) -> Registry:
        return REGISTRY.of_service(self.name)

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        # moves are followed before anything is planned, deletions found after
        mirror = config.sync.deletions == "mirror"
        deletions = {("deletion" if mirror else "deleted_at_source"): deletion_plan(mirror)}
        return {"issue_move": follow_moves, **ORG_PLANS, **PLANS, **entity_plans(config), **planning_plans(config),
                **tracker_plans(config), **deletions}  # fmt: skip

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
        tuning = config.tuning
        scrolls = [
            IssueScroll(
                client,
                queue,
                narrowing=config.scope.query,
                per_scroll=tuning.per_scroll,
                ttl_ms=tuning.scroll_ttl_ms,
                lookback=timedelta(minutes=tuning.lookback_minutes),
            )
            for queue in config.scope.queues
        ]
        drain = IssueDrain(
            client,
            store,
            concurrent=tuning.concurrency > 1,
            changelog=stage_changelog(store, *config.stages_changelog),
        )

        async def details(stats: ExtractStats) -> Details:
            return {
                "source_issue_count": await find_vanished_issues(
                    client, store, config.scope.queues, config.scope.query
                ),
                "issues_staged": stats.staged["issue"],
                "issues_drained": stats.drained["issue"],
                "attachment_bytes": drain.attachment_bytes,
                "scroll_restarts": sum(scroll.restarts for scroll in scrolls),
            }

        streams = [*dictionary_streams(client), *structure_streams(client, config.scope.queues)]
        streams += planning_streams(client, config)
        entity_streams, entity_drains = entity_source(client, store, config)
        return SourceParts([*streams, *entity_streams, *scrolls], [drain, *entity_drains], details)

    async def target(
        self, config: Config, client: TrackerClient, store: StagingStore, *, read_only: bool = False
    ) -> TargetParts:
        target = await TrackerTarget.of(config, client, store, read_only=read_only)
        target.preflight()
        check_rules(config, store, "tracker")
        transform = target.transform
        organisation = OrganisationLoad(client, store, transform, config.mapping.create_missing)
        backfill, load, planning = _backfill(target), _issue_load(target), planning_load(target)
        entities = await entity_target(target)
        specs = organisation.specs() + load.specs() + planning.specs + backfill.specs()
        specs += entities.specs
        return TargetParts(
            specs,
            in_target=_in_target(target),
            unmapped_users=lambda: sorted(transform.users.unmapped | backfill.defaulted),
            planner=entities.planner(_planner(target, specs)),
            verifier=TrackerVerifier(client, transform, load.prints),
            not_carried=lambda: _not_carried(transform, planning, entities),
            changes=lambda: _changes(store, load.changes, entities.changes()),
        )

    async def checks(
        self, config: Config, client: TrackerClient, store: StagingStore | None, side: str
    ) -> list[Finding]:
        target = await checked_target(config, client, store, side)
        found = await tracker_checks(config, client, store, side, target)
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
        return await tracker_checks_across(config, source, target, store)


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


def _issue_load(target: TrackerTarget) -> TrackerLoad:
    """The issues and what hangs off them: found by their fingerprints, statuses walked
    through the target's workflow, deletions mirrored when `[sync] deletions = "mirror"`."""
    client, transform, keys = target.client, target.transform, target.keys
    prints = TrackerFingerprints(client, transform, target.uids, keys.key)
    statuses = StatusSync(client, transform, keys.key, done_statuses(target.store))
    mirror = target.config.sync.deletions == "mirror"
    deletions = DeletionSync(client, keys.key) if mirror else None
    probe = TargetProbe(client)
    return TrackerLoad(client, target.store, transform, probe, prints, keys, statuses, deletions)


def _in_target(target: TrackerTarget) -> Callable[[], Awaitable[dict[str, int]]]:
    """The target's own count of the migrated queues' issues."""
    queues = sorted({target.transform.queues.queue(queue) for queue in target.config.scope.queues})

    async def in_target() -> dict[str, int]:
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
    transform: Transform, planning: PlanningLoad, entities: EntityTarget
) -> dict[str, int]:
    """What the load left out of records it still loaded ("field: why" -> how many)."""
    dropped = transform.structure.dropped if transform.structure else {}
    carried = {f"{field}: {why}": n for (field, why), n in sorted(dropped.items())}
    return carried | planning.not_carried() | entities.not_carried()


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


def stage_changelog(store: StagingStore, wanted: bool, because: str) -> bool:
    """Say in the store whether this extract stages changelogs and `because` of which setting
    (`haul export` warns when it does not); when they are wanted again after extracts that
    skipped them, every issue is drained once more, since its drained mark was set without
    its changelog."""
    skipped = not_staged(store)
    with store.transaction():
        if wanted and "changelog" in skipped:
            again = store.forget_drained("issue")
            log.info("changelog_staged_again", issues_to_drain=again)
            skipped.pop("changelog")
        elif not wanted:
            skipped["changelog"] = because
        store.set_checkpoint(NOT_STAGED, skipped)
    return wanted


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
