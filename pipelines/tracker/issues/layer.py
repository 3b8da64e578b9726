"""The trees: issues with their comments, worklogs, attachments, checklists and access lists,
then the links between them once both ends exist.

Its extract is each scoped queue's issue scroll (`scroll`) and the issue drain (`drain`); its
load the issue specs (`specs`: what a record's body is, how it is sent and found again, with
`fingerprints` and `probes`), its plan decisions `plan`, its verify `verify`, its export the
staged tables (`export`). Moved issues are followed before the issues are planned (the sync
layer's `moves`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

import structlog

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.services import Details, Entity, SourceParts
from haul.pipelines.streams import NOT_STAGED, ExtractStats, not_staged
from haul.pipelines.tracker.issues.drain import IssueDrain
from haul.pipelines.tracker.issues.export import TABLES
from haul.pipelines.tracker.issues.link_survey import LinkSurvey
from haul.pipelines.tracker.issues.scroll import IssueScroll, keyless_name
from haul.pipelines.tracker.issues.specs import PLANS
from haul.pipelines.tracker.issues.worklog_bulk import BulkWorklogs
from haul.pipelines.tracker.layer import Layer
from haul.pipelines.tracker.sync.deletions import find_vanished_issues
from haul.pipelines.tracker.sync.moves import follow_moves
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
)
