"""The trees: issues with their comments, worklogs, attachments, checklists and access lists,
then the links between them once both ends exist.

Its extract is each scoped queue's issue scroll (`scroll`) and the issue drain (`drain`); its
load the issue specs (`specs`: what a record's body is, how it is sent and found again, with
`fingerprints` and `probes`), its plan decisions `plan`, its verify `verify`, its export the
staged tables (`export`). Moved issues are followed before the issues are planned (the sync
layer's `moves`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

import structlog

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.services import Details, Entity, SourceParts, sync_changes
from haul.pipelines.specs import EntitySpec
from haul.pipelines.streams import NOT_STAGED, ExtractStats, not_staged
from haul.pipelines.tracker.issues.drain import IssueDrain
from haul.pipelines.tracker.issues.export import TABLES
from haul.pipelines.tracker.issues.fingerprints import TargetProbe, TrackerFingerprints
from haul.pipelines.tracker.issues.limits import LimitPlanner, TargetLimits
from haul.pipelines.tracker.issues.link_survey import LinkSurvey
from haul.pipelines.tracker.issues.plan import TrackerPlanner
from haul.pipelines.tracker.issues.scroll import IssueScroll, keyless_name
from haul.pipelines.tracker.issues.specs import PLANS, TrackerLoad
from haul.pipelines.tracker.issues.three_way import IssueForms
from haul.pipelines.tracker.issues.verify import TrackerVerifier
from haul.pipelines.tracker.issues.worklog_bulk import BulkWorklogs
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.sync.deletions import (
    DeletionSync,
    deleted_counts,
    deleted_in_target,
    find_vanished_issues,
)
from haul.pipelines.tracker.sync.moves import follow_moves
from haul.pipelines.tracker.sync.preview import TrackerPreview
from haul.pipelines.tracker.sync.statuses import StatusSync, done_statuses
from haul.pipelines.tracker.sync.texts import TextPatches
from haul.pipelines.tracker.target import TrackerTarget, mentions, source_scan
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)


def issue_plans(config: Config) -> Mapping[str, PlanFn]:
    """Moves are followed before anything of the issues is planned (a plan that plans
    nothing: it renames the rows of an issue loaded under an old key), then the trees."""
    return {"issue_move": follow_moves, **PLANS}


def issue_source(client: TrackerClient, store: StagingStore, config: Config) -> SourceParts:
    """Each scoped queue's scroll, the drain of every new or changed issue, and the figures
    the extract reports: the source's issue count, what was staged and drained, the bytes of
    the attachments and how often a scroll restarted."""
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
    margin = timedelta(minutes=tuning.lookback_minutes)
    # a first migration reads links and worklogs in bulk; a later run drains few issues
    first = tuning.bulk_reads and not store.count_records().get("issue")
    survey = bulk = None
    if first:
        survey = LinkSurvey(
            client,
            sample=tuning.link_audit_sample,
            seed=tuning.link_audit_seed,
            per_scroll=tuning.per_scroll,
            margin=margin,
        )
        bulk = BulkWorklogs(client, queues=frozenset(config.scope.queues), margin=margin)
    drain = IssueDrain(
        client,
        store,
        concurrent=tuning.concurrency > 1,
        changelog=stage_changelog(store, *config.stages_changelog),
        link_survey=survey,
        bulk_worklogs=bulk,
    )

    async def details(stats: ExtractStats) -> Details:
        return {
            "source_issue_count": await find_vanished_issues(
                client, store, config.scope.queues, config.scope.query, keyless_name
            ),
            "issues_staged": stats.staged["issue"],
            "issues_drained": stats.drained["issue"],
            "attachment_bytes": drain.attachment_bytes,
            # the run report's request figures: the drain's listings, and per issue drained
            # (on a later run, per changed issue: issue 42 item 3)
            "issue_drain_requests": drain.listing_requests,
            "per_drained_issue_requests": round(
                drain.listing_requests / max(1, stats.drained["issue"]), 2
            ),
            "scroll_restarts": sum(scroll.restarts for scroll in scrolls),
            **(survey.figures() if survey else {}),
            **(bulk.figures() if bulk else {}),
        }

    return SourceParts(list(scrolls), [drain], details)


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


async def issue_target(target: TrackerTarget) -> TargetPart:
    """The trees and their links into one target org: their specs, `haul plan`'s planner
    (records over a target limit are conflicts), verify and its scan for references to the
    source, the sync's preview, and the target's own count of the migrated queues' issues."""
    client, store, transform = target.client, target.store, target.transform
    limits = TargetLimits(store, target.config.limits, transform.comment_text)
    load = _issue_load(target, limits)
    verifier = TrackerVerifier(client, transform, load.prints, store.written.base)

    def not_carried() -> dict[str, int]:
        fixed = {
            f"{name}: changed at the source, no update call changes it": n
            for name, n in sorted(load.not_updatable.items())
        }
        left = {f"reference: {what}": n for what, n in sorted(transform.references.left.items())}
        return fixed | left | dict(load.kept)

    def planner(specs: list[EntitySpec]) -> LimitPlanner:
        return LimitPlanner(limits, _planner(target, specs))

    return TargetPart(
        load.specs(),
        not_carried=not_carried,
        changes=lambda: _changes(store, load.changes),
        unmapped_users=lambda: transform.users.unmapped,
        planner=planner,
        verifier=verifier,
        references=source_scan(store, target.config, mentions(transform, target.config)),
        preview=TrackerPreview(client, store, transform, verifier.compare, load.field_changes),
        in_target=_in_target(target),
    )


def _issue_load(target: TrackerTarget, limits: TargetLimits) -> TrackerLoad:
    """The issues and what hangs off them: found by their fingerprints, statuses walked
    through the target's workflow, deletions mirrored when `[sync] deletions = "mirror"`."""
    client, transform, keys = target.client, target.transform, target.keys
    prints = TrackerFingerprints(client, transform, target.uids, keys.key)
    statuses = StatusSync(client, transform, keys.key, done_statuses(target.store))
    mirror = target.config.sync.deletions == "mirror"
    wins = target.config.sync.conflicts == "source-wins"
    deletions = (
        DeletionSync(client, keys.key, transform.queues.queue, target.store.written.base, wins)
        if mirror
        else None
    )
    probe = TargetProbe(client)
    forms = IssueForms(TrackerVerifier(client, transform, prints), transform)
    patches = TextPatches(client, target.store, transform.references, transform.text)
    return TrackerLoad(
        client, target.store, transform, probe, prints, keys, statuses, limits.check, forms,
        deletions, patches=patches, conflicts=target.config.sync.conflicts,
    )  # fmt: skip


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


async def _issue_count(client: TrackerClient, queues: Any) -> int:
    return sum([await client.count_issues(query=f"Queue: {queue}") for queue in queues])


def _changes(
    store: StagingStore, issues: Mapping[tuple[str, str], int]
) -> dict[str, dict[str, int]]:
    """What this run did, and what its extract found deleted at the source."""
    runs = store.recent_runs(1)
    since = runs[0]["started_at"] if runs else None
    left = deleted_counts(store, since, out_of_scope=True)
    return sync_changes(issues, deleted_counts(store, since), left)


ISSUES = Layer(
    "issues",
    entities=(
        Entity("issue", source_count="source_issue_count"),
        Entity("comment"),
        Entity("comment_attachment", staged="attachment"),
        Entity("worklog"),
        Entity("attachment", files=True),
        Entity("issue_references", staged="issue", optional=True),  # a description with files
        Entity("comment_references", staged="comment", optional=True),  # a comment with files
        Entity("checklist"),
        Entity("attachment_replaced", optional=True),  # a file uploaded again under its name
        Entity("issue_access", staged="issue"),  # an issue whose source lists anyone on `access`
        Entity("link"),
        Entity("changelog", loads=False),  # no import endpoint: staged for exports only
    ),
    tables=TABLES,
    plans=issue_plans,
    source=issue_source,
    target=issue_target,
)
