"""What hangs under an issue: its comments (and their files), worklogs, files, the texts
written again once their files are in, and its checklist.

Its extract is the issue drain (`drain`): each new or changed issue's listings, staged under
it, skipping what an earlier drain staged and nothing since changed (`since_drain`), with the
bulk reads of a first migration (`link_survey`, `worklog_bulk`) and the files replaced at the
source (`replaced`). Its kinds (`issues.kinds`) load under their issue in the order `KINDS`
lists them, after the issue's own.
"""

from __future__ import annotations

from datetime import timedelta

import structlog

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.findings import Finding
from haul.pipelines.services import Details, Entity, SourceParts
from haul.pipelines.streams import NOT_STAGED, ExtractStats, not_staged
from haul.pipelines.tracker.children.checklists import CHECKLIST
from haul.pipelines.tracker.children.comments import COMMENT
from haul.pipelines.tracker.children.drain import IssueDrain
from haul.pipelines.tracker.children.files import COMMENT_FILE, FILE
from haul.pipelines.tracker.children.link_survey import LinkSurvey
from haul.pipelines.tracker.children.replaced import REPLACEMENT
from haul.pipelines.tracker.children.texts import COMMENT_TEXT_KIND, DESCRIPTION, files_not_migrated
from haul.pipelines.tracker.children.worklog_bulk import BulkWorklogs
from haul.pipelines.tracker.children.worklogs import WORKLOG
from haul.pipelines.tracker.issues.kinds import Kind, kinds_layer
from haul.pipelines.tracker.layer import Layer, on_the_staged_target
from haul.pipelines.tracker.target import TrackerTarget
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

# in the order an issue's children load (and are planned): a comment's files right after it,
# a replaced file once the new one is in, the texts once their files are, the checklist last
KINDS: tuple[Kind, ...] = (
    COMMENT, COMMENT_FILE, WORKLOG, FILE, REPLACEMENT, DESCRIPTION, COMMENT_TEXT_KIND, CHECKLIST,
)  # fmt: skip


def children_source(client: TrackerClient, store: StagingStore, config: Config) -> SourceParts:
    """The drain of every new or changed issue, and the figures the extract reports of it:
    what was drained, the bytes of the attachments, the drain's requests."""
    tuning = config.tuning
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
            "issues_drained": stats.drained["issue"],
            "attachment_bytes": drain.attachment_bytes,
            # the run report's request figures: the drain's listings, and per issue drained
            # (on a later run, per changed issue: issue 42 item 3)
            "issue_drain_requests": drain.listing_requests,
            "per_drained_issue_requests": round(
                drain.listing_requests / max(1, stats.drained["issue"]), 2
            ),
            **(survey.figures() if survey else {}),
            **(bulk.figures() if bulk else {}),
        }

    return SourceParts([], [drain], details)


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


@on_the_staged_target
async def reference_checks(
    config: Config, client: TrackerClient, store: StagingStore, target: TrackerTarget
) -> list[Finding]:
    """`haul check` on the target, once issues are staged: `reference_findings`."""
    return reference_findings(store)


def reference_findings(store: StagingStore) -> list[Finding]:
    """A warning per staged text that shows files the migration does not carry, or one ok."""
    found = [
        Finding("warning", f"{entity} {source_id} shows files that are not migrated"
                f" ({', '.join(files)}): their references will keep pointing at the source",
                "migrate the issues they belong to, or edit the text at the source")
        for entity, source_id, files in files_not_migrated(store)
    ]  # fmt: skip
    return found or [Finding("ok", "every file the staged texts show is migrated with them")]


def children_layer(kinds: tuple[Kind, ...] = KINDS) -> Layer:
    """The children layer of `kinds` (a new kind: one module here, one line in `KINDS`)."""
    changelog = Entity("changelog", loads=False)  # no import endpoint: staged for exports only
    return kinds_layer(
        "children",
        kinds,
        staged_only=(changelog,),
        source=children_source,
        checks=reference_checks,
    )


CHILDREN = children_layer()
