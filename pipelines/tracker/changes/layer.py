"""What changed across kinds since the last run, and what takes a migration back.

Records deleted at the source (`deletions`): found once everything else is planned, counted
in the run's details, and mirrored in the target only when `[sync] deletions = "mirror"` (one
`deletion` row each, loaded in their own phase). `haul undo`'s way of taking back each kind
the tracker loads (`undo`). `haul plan`'s preview of what the next load changes (`preview`,
from the kinds' own previews). The extract's count of the source's issues, which
finds on the way the issues gone from it, and the target's own count beside it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.services import Details, Entity, SourceParts, sync_changes
from haul.pipelines.specs import EntitySpec, Order, Phase
from haul.pipelines.streams import ExtractStats
from haul.pipelines.tracker.changes.deletions import (
    DELETED,
    DeletionSync,
    deleted_counts,
    deleted_in_target,
    deletion_plan,
    find_vanished_issues,
)
from haul.pipelines.tracker.changes.preview import TrackerPreview
from haul.pipelines.tracker.changes.undo import TrackerRemovals
from haul.pipelines.tracker.issues.kinds import TreeLoad
from haul.pipelines.tracker.issues.scroll import keyless_name
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.target import TrackerTarget
from haul.state.store import StagedRecord, StagingStore


def deletion_plans(config: Config) -> Mapping[str, PlanFn]:
    """Deleted sub-records found; mirroring, one `deletion` row each (else only reported)."""
    mirror = config.sync.deletions == "mirror"
    return {("deletion" if mirror else "deleted_at_source"): deletion_plan(mirror)}


def changes_source(client: TrackerClient, store: StagingStore, config: Config) -> SourceParts:
    """The source's issue count of the scoped queues, finding the issues gone from it."""

    async def details(stats: ExtractStats) -> Details:
        scope = config.scope
        count = await find_vanished_issues(client, store, scope.queues, scope.query, keyless_name)
        return {"source_issue_count": count}

    return SourceParts([], [], details)


async def changes_target(target: TrackerTarget) -> TargetPart:
    """Mirrored deletions, undo's removals, the sync's preview, what the run changed, and the
    target's own count of the migrated queues' issues."""
    client, store, transform = target.client, target.store, target.transform
    load = TreeLoad.of(target)
    removals = TrackerRemovals(client, store, transform.queues)
    preview = TrackerPreview(load)
    return TargetPart(
        _deletion_specs(target, load),
        changes=lambda: _changes(store, load),
        removals=removals.removals(),
        preview=preview,
        in_target=_in_target(target),
    )


def _deletion_specs(target: TrackerTarget, load: TreeLoad) -> list[EntitySpec]:
    """One spec when `[sync] deletions = "mirror"`: a person's edit since haul wrote the
    record is kept unless `[sync] conflicts = "source-wins"`."""
    if target.config.sync.deletions != "mirror":
        return []
    sync = target.config.sync
    deletions = DeletionSync(
        target.client, target.keys.key, target.transform.queues.queue,
        target.store.written.base, sync.conflicts == "source-wins",
    )  # fmt: skip

    async def send(record: StagedRecord, parent: str | None) -> str:
        done = await deletions.send(record, parent)
        load.changes[(str(record.raw["entity"]), "deleted")] += 1
        return done

    return [
        EntitySpec("deletion", "deleted", deletion_plan(mirror=True), send, deletions.find,
                   order=Order(Phase.DELETIONS, find_first=True)),
    ]  # fmt: skip


def _changes(store: StagingStore, load: TreeLoad) -> dict[str, dict[str, int]]:
    """What this run did, and what its extract found deleted at the source."""
    runs = store.recent_runs(1)
    since = runs[0]["started_at"] if runs else None
    left = deleted_counts(store, since, out_of_scope=True)
    return sync_changes(load.changes, deleted_counts(store, since), left)


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
        counts = [await target.client.count_issues(query=f"Queue: {q}") for q in queues]
        return {"issue": sum(counts) + gone}

    return in_target


CHANGES = Layer(
    "changes",
    entities=(
        Entity("deletion", staged=DELETED, optional=True),  # [sync] deletions = "mirror"
    ),
    plans=deletion_plans,
    source=changes_source,
    target=changes_target,
)
