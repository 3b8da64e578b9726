"""Issues moved to another queue at the source, followed in the ledger and in the target.

A moved issue comes back from the scroll under its new key, naming its old ones in `aliases`
(the old key still finds it). Before the ledger is planned, `follow_moves` renames the loaded
issue's rows, its own and those of every record under it, from the old key to the new one
and drops what was staged under the old key: the records are the same records, already in
the target, so nothing is imported twice. The issue's next refresh then moves the target
issue to the mapped queue (`move_in_target`, the issue spec's `relocate`), and the engine
records its new target key, which every record under it is written to from then on
(`TargetKeys`).

The plan yields each rename (`Renamed`) for the engine to record, in the plan's transaction,
with the deletion of what was staged under the old key (`delete_record`, `delete_under`).
"""

from __future__ import annotations

from collections.abc import Iterator

import structlog

from haul.connectors.errors import AmbiguousWriteError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import RecordFailure, Renamed
from haul.pipelines.tracker.target import moved_issues
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

# records whose source id is "<issue key>/..." (a comment's attachment: under its comment's)
UNDER_ISSUE = (
    "comment", "comment_attachment", "worklog", "attachment", "checklist", "link", "issue_status",
)  # fmt: skip


def follow_moves(store: StagingStore) -> Iterator[Renamed]:
    """Rename the rows of each issue loaded under an old key to its new key (a plan that
    plans nothing: it runs first, so the issue's own plan finds the renamed row). What was
    staged under the old key goes in the same transaction (the new key's drain staged it
    again)."""
    ledger = store.ledger
    for old, new in moved_issues(store).items():
        row = ledger.get("issue", old)
        if row is None or ledger.get("issue", new) is not None:
            continue
        with store.transaction():
            yield issue_renamed(old, new)  # the engine renames the rows here
            store.delete_record("issue", old)
            store.delete_under(old)
        log.info("issue_move_followed", source=old, now=new, target=row.target_id)


def issue_renamed(old: str, new: str) -> Renamed:
    """The ledger rows of issue `old` and of everything under it, now under `new`."""
    return Renamed(("issue",), old, new, under=UNDER_ISSUE, parents=True)


async def move_in_target(
    client: TrackerClient, source_key: str, target_key: str, queue: str
) -> str:
    """Move the target issue into `queue` unless it is there; return its key now (the engine
    records it: the spec's `relocate`). A lost reply is settled by reading the issue under
    its old key."""
    if _queue_of(target_key) == queue:
        return target_key
    moved = await client.get_issue(target_key)  # an earlier run may have moved it already
    if _queue_of(str(moved["key"])) != queue:
        try:
            moved = await client.move_issue(target_key, queue)
        except AmbiguousWriteError:
            moved = await client.get_issue(target_key)  # the old key finds it either way
            if _queue_of(str(moved["key"])) != queue:
                raise RecordFailure(f"moving {target_key} to {queue} stayed uncertain") from None
    new_key = str(moved["key"])
    log.info("issue_moved_in_target", source=source_key, was=target_key, now=new_key)
    return new_key


def _queue_of(key: str) -> str:
    return key.rsplit("-", 1)[0]
