"""What a later run carries of the changes at the source since the last one, beyond each
record's own fields: status changes through the target's workflow (`statuses`), issues moved
to another queue (`moves`), records deleted at the source (`deletions`).

Status changes and moves are planned with the issues (an issue's plan reads them); deletions
are found after everything else is planned, and mirrored only when `[sync] deletions` says so.
"""

from __future__ import annotations

from collections.abc import Mapping

from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.services import Entity
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.sync.deletions import DELETED, deletion_plan
from haul.pipelines.tracker.sync.undo import TrackerRemovals
from haul.pipelines.tracker.target import TrackerTarget


def deletion_plans(config: Config) -> Mapping[str, PlanFn]:
    """Deleted sub-records found; mirroring, one `deletion` row each (else only reported)."""
    mirror = config.sync.deletions == "mirror"
    return {("deletion" if mirror else "deleted_at_source"): deletion_plan(mirror)}


async def sync_target(target: TrackerTarget) -> TargetPart:
    """How `haul undo` takes back each kind of record the tracker loads."""
    removals = TrackerRemovals(target.client, target.store, target.transform.queues)
    return TargetPart(removals=removals.removals())


SYNC = Layer(
    "sync",
    entities=(
        Entity("issue_status", optional=True),  # a status changed at the source after the load
        Entity("deletion", staged=DELETED, optional=True),  # [sync] deletions = "mirror"
    ),
    plans=deletion_plans,
    target=sync_target,
)
