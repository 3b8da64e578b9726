"""The issue record: imported, found again by key, moved, refreshed three ways.

An issue is imported (`_import`) with the status staged with it, found by its key when the
target holds it as ours (its `unique`), and refreshed by a later run three ways
(`pipelines.sync.three_way`, the fields as `fields` names them, in verify's form
`verify.IssueForms`): what changed only at the source is edited, what changed only in the
target kept, what changed on both sides settled by `[sync] conflicts`.

A moved issue (`follow_moves`, `move_in_target`) comes back from the scroll under its new key, naming its old ones in `aliases`
(the old key still finds it). Before the ledger is planned, `follow_moves` renames the loaded
issue's rows, its own and those of every record under it, from the old key to the new one
and drops what was staged under the old key: the records are the same records, already in
the target, so nothing is imported twice. The issue's next refresh then moves the target
issue to the mapped queue (`move_in_target`, the issue spec's `relocate`), and the engine
records its new target key, which every record under it is written to from then on
(`TargetKeys`).

The plan yields each rename (`Renamed`) for the engine to record, in the plan's transaction,
with the deletion of what was staged under the old key (`delete_record`, `delete_under`).

`haul plan` previews a changed issue (`IssuePreview`, read only): a move when its queue at the
source maps elsewhere than where it is, an update naming each field that differs and how, a
conflict where a field changed on both sides, `not updatable` for a field changed at the source
that no update call can change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog

from haul.connectors.errors import AmbiguousWriteError, ConflictError
from haul.connectors.tracker import TrackerClient
from haul.connectors.tracker_reads import IssueReads
from haul.pipelines.services import Entity
from haul.pipelines.specs import (
    EntitySpec,
    Fields,
    Order,
    RecordFailure,
    Renamed,
    Sent,
    Unclaimed,
    each_record,
)
from haul.pipelines.sync.preview import Change, conflicted, how, updated
from haul.pipelines.sync.three_way import with_decisions
from haul.pipelines.tracker.issues.fields import (
    FieldChanges,
    diff_fields,
    import_only,
    same,
    updatable,
)
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad
from haul.pipelines.tracker.issues.statuses import carried_by_import
from haul.pipelines.tracker.issues.verify import IssueForms, TrackerVerifier
from haul.pipelines.tracker.target import moved_issues
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)
# edits of a person between the refresh's read and its write, before the record fails for now
MAX_STALE = 3

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


class IssueRecord:
    """Sends, finds, moves and refreshes issues in one target org."""

    def __init__(self, load: TreeLoad, forms: IssueForms) -> None:
        self.load, self.forms = load, forms
        self.reads = IssueReads(load.client, lambda: changed_target_keys(load.store))

    def spec(self) -> EntitySpec:
        return EntitySpec(
            "issue", "issue", each_record("issue"), self.send, self.find,
            refresh=self.refresh, relocate=self.relocate,
            order=Order(refused_twice=True),  # imported under its key: a second is a 409
        )  # fmt: skip

    async def send(self, record: StagedRecord, parent: str | None) -> Sent:
        """Import the issue; the status staged with it is in the target with it. Never into
        a queue whose configuration (its permission scheme) the load failed to set."""
        self._refuse_unconfigured_queue(record)
        reply = await self.load.client.import_issue(self.load.transform.issue_body(record.raw))
        key = self.load.made("issue", str(reply["key"]))
        settled = carried_by_import(self.load.store, record.source_id)
        return Sent(key, settled, written=self.forms.source(record))

    def _refuse_unconfigured_queue(self, record: StagedRecord) -> None:
        """Fail closed: an issue of a queue whose configuration row (the organisation layer's
        `queue_config`, settled before any issue) failed is not imported, so none lands in a
        queue still open to more people than the source's."""
        queue, configured = record.source_id.rpartition("-")[0], self.load.configured
        if queue not in configured:  # settled before the trees: asked once a queue
            configured[queue] = self.load.store.ledger.get("queue_config", queue)
        row = configured[queue]
        if row is not None and row.status == "failed":
            raise RecordFailure(
                f"queue {self.load.transform.queues.queue(queue)}'s permissions and issue types"
                f" are not set in the target ({row.error}): fix that, then run haul"
                " load --retry-failed"
            )

    async def find(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        """The target issue under the record's key, if haul made it (its `unique` is ours):
        an issue someone else made under that key is not this record. Its import wrote the
        staged fields: they are its base."""
        transform = self.load.transform
        found = await self.load.client.find_issue(transform.queues.key(record.source_id))
        if found is None or found.get("unique") != f"{transform.unique_prefix}:{record.source_id}":
            return None
        return Sent(str(found["key"]), written=self.forms.source(record))

    async def relocate(self, record: StagedRecord, target_key: str) -> str:
        """An issue moved to another queue at the source moves in the target first; its key
        now (the engine records a new one before the refresh)."""
        queue_key = str((record.raw.get("queue") or {}).get("key"))
        queue = self.load.transform.queues.queue(queue_key)
        key = await move_in_target(self.load.client, record.source_id, target_key, queue)
        if key != target_key:
            self.load.changes[("issue", "moved")] += 1
        return key

    async def refresh(self, record: StagedRecord, key: str) -> Fields:
        """The issue's fields, three ways (`fields`): what changed only at the source is
        edited in the target (where `relocate` put it), what changed only there is kept,
        what changed on both sides is a conflict, settled by `[sync] conflicts`. The edit is
        sent even when it carries nothing: imports keep the source's times, so a comment added
        at the source after the issue was loaded lies outside the target issue's window, and
        the ordinary edit moves it to now. The edit names the version it was judged against
        (the API's lock): a person's edit in between makes it a 409, and the issue is read and
        judged again, so that edit is kept or a conflict, never overwritten unseen. Answers
        what haul has now written (the new base)."""
        for attempt in range(MAX_STALE):
            try:
                return await self._refresh_once(record, key, counted=attempt > 0)
            except ConflictError as exc:  # edited in the target since it was read: again
                log.info("issue_version_stale", issue=key, error=str(exc))
        raise RecordFailure(
            f"issue {key} kept changing in the target while it was brought up to date"
            f" ({MAX_STALE} edits in between); the next run tries again"
        )

    async def _refresh_once(self, record: StagedRecord, key: str, *, counted: bool) -> Fields:
        source, base, compared, target, version = await self._three_sides(record, key)
        if not counted:  # once an issue, however often it is judged
            self._count_not_updatable(source, base)

        async def edit(names: list[str]) -> None:
            body = self.forms.edit(record, source, names)
            await self.load.client.update_issue(key, body, version=version)

        written = await self.load.three_way.settle(
            "issue", record.source_id, (compared, target), edit, always=True
        )
        return written | {name: source[name] for name in import_only(source)}

    async def _three_sides(
        self, record: StagedRecord, key: str
    ) -> tuple[Fields, Fields | None, Fields, Fields, int | None]:
        """The issue's staged fields, its base, the updatable ones at the source and in the
        target issue `key`, and the version of the target issue they were read at."""
        found = await self.reads.issue(key)
        if found is None:
            raise RecordFailure(f"issue {key} is not in the target")
        source = self.forms.source(record)
        base = self.load.store.written.base("issue", record.source_id)
        compared = {name: value for name, value in source.items() if updatable(name)}
        target = self.forms.target(found, {**compared, **(base or {})})
        target = {name: value for name, value in target.items() if updatable(name)}
        version = found.get("version")
        return source, base, compared, target, version if isinstance(version, int) else None

    async def field_changes(self, record: StagedRecord, key: str) -> tuple[FieldChanges, Fields]:
        """What the next refresh of the issue would carry, keep and find in conflict, and the
        target's values now (read only: `haul plan`'s preview). A field no update call can
        change that changed at the source is among those carried: the preview names it."""
        source, base, compared, target, _ = await self._three_sides(record, key)
        written_as = self.load.transform.references.written_as
        changes, _ = with_decisions(  # what the refresh will do of a conflict decided
            diff_fields(compared, base, target, written_as),
            self.load.store.conflicts.decisions("issue", record.source_id),
        )
        fixed = {name: source[name] for name in import_only(source)
                 if base is not None and not same(base.get(name), source.get(name))}  # fmt: skip
        return FieldChanges(changes.carried | fixed, changes.kept, changes.conflicts), target

    def _count_not_updatable(self, source: Fields, base: Fields | None) -> None:
        """Each field changed at the source that no update call can change, by name (what the
        load could not carry, in haul status and the report)."""
        for name in import_only(source):
            if base is not None and not same(base.get(name), source.get(name)):
                self.load.not_updatable[name] += 1


def changed_target_keys(store: StagingStore) -> list[str]:
    """The target keys of the loaded issues whose staged record changed: what the load will
    refresh, in the order it walks them."""
    return [row.target_id for row in store.ledger.iter_changed("issue") if row.target_id]


def issue_record(load: TreeLoad) -> IssueRecord:
    """The issue kind of one target org, comparing in verify's form."""
    verifier = TrackerVerifier(load.client, load.transform, load.prints)
    return IssueRecord(load, IssueForms(verifier, load.transform))


def issue_spec(load: TreeLoad) -> EntitySpec:
    """The issue's spec."""
    return issue_record(load).spec()


@dataclass(frozen=True)
class FieldPreview:
    """One issue's fields the next load changes: `update` field -> (the target's value, the
    source's), `conflicts` field -> (the source's value, the target's); `not_updatable`: the
    fields changed at the source that no update call can change (`fields.import_only`),
    field -> (the target's value, the source's)."""

    update: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    conflicts: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    not_updatable: dict[str, tuple[Any, Any]] = field(default_factory=dict)


class IssuePreview(KindPreview):
    """`haul plan`'s preview of a changed issue: its move, then its fields."""

    def __init__(self, load: TreeLoad) -> None:
        super().__init__()
        self.load, self.record = load, issue_record(load)

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        return self._moved(row, record) + await self._fields(row, record)

    async def field_preview(self, row: LedgerRow, record: StagedRecord) -> FieldPreview:
        """Per issue, the fields the next load updates and those in conflict, three ways
        (`fields.diff_fields`: the source, what haul last wrote, the target now): a field
        changed only in the target is kept, so it is in neither."""
        changes, target = await self.record.field_changes(record, row.target_id or "")
        fixed = set(import_only(changes.carried))
        carried = {name: (target.get(name), value) for name, value in changes.carried.items()}
        return FieldPreview(
            update={name: both for name, both in carried.items() if name not in fixed},
            conflicts=dict(changes.conflicts),
            not_updatable={name: both for name, both in carried.items() if name in fixed},
        )

    async def _fields(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        fields = await self.field_preview(row, record)
        changes = [updated(row, tuple(fields.update), how(fields.update))]
        if not fields.update:  # the edit is sent all the same: the record changed
            changes = [updated(row, (), "changed at the source; no edited field differs")]
        if fields.conflicts:
            changes.append(conflicted(row, fields.conflicts))
        if fields.not_updatable:
            detail = f"no update call changes it: {how(fields.not_updatable)}"
            fixed = Change(row.entity, row.source_id, row.target_id or "", "not updatable",
                           tuple(fields.not_updatable), detail, writes=0)  # fmt: skip
            changes.append(fixed)
        return changes

    def _moved(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        """A move when the issue's queue at the source maps elsewhere than where it is."""
        source_queue = str((record.raw.get("queue") or {}).get("key") or "")
        wanted = self.load.transform.queues.queue(source_queue)
        now = (row.target_id or "").rpartition("-")[0]
        if not now or wanted == now:
            return []
        detail = f"from queue {now} to {wanted} (moved at the source to {source_queue})"
        return [Change(row.entity, row.source_id, row.target_id or "", "move", ("queue",), detail)]


ISSUE = Kind(
    Entity("issue", source_count="source_issue_count"),
    each_record("issue"),
    issue_spec,
    preview=IssuePreview,
)
