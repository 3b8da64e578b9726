"""What the next load does with each tracker record changed at the source, for `haul plan`.

Asked with reads only (`pipelines.sync.preview`): an issue moved to another queue at the
source is a move, its fields an update naming each field that differs and how, a conflict
where a field changed on both sides, `not updatable` naming a field changed at the source that
no update call can change; an edited checklist an update counting the items edited, added and
removed, three ways (its items changed on both sides a conflict); a walked status a
transition; a mirrored deletion or a replaced file's old copy a delete. Which issue fields
change comes from one hook, `TrackerPreview.pending_field_changes`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.sync.preview import Change, updated
from haul.pipelines.sync.three_way_items import settle_items
from haul.pipelines.tracker.children.checklist_sync import (
    ChecklistEdits,
    checklist_edits,
    item_rule,
    source_items,
)
from haul.pipelines.tracker.children.replaced import REPLACED, described
from haul.pipelines.tracker.issues.fields import FieldChanges, import_only
from haul.pipelines.tracker.transform import Transform
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

Fields = dict[str, Any]
# (expected from the staged record, found in the target or None): the verifier's compare
Compare = Callable[[LedgerRow, StagedRecord], Awaitable[tuple[Fields, Fields | None]]]
# a pending row whose write is not a create -> what it is
ACTIONS = {"issue_status": "transition", "deletion": "delete", REPLACED: "delete"}
# what the refresh of a sub-record edits
REFRESHED = {"comment": ("text",), "worklog": ("duration", "comment")}


@dataclass(frozen=True)
class FieldPreview:
    """One issue's fields the next load changes: `update` field -> (the target's value, the
    source's), `conflicts` field -> (the source's value, the target's); `not_updatable`: the
    fields changed at the source that no update call can change (`issues.fields.import_only`),
    field -> (the target's value, the source's)."""

    update: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    conflicts: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    not_updatable: dict[str, tuple[Any, Any]] = field(default_factory=dict)


@dataclass
class TrackerPreview:
    """The tracker's `ChangePreview`, for one target org."""

    client: TrackerClient
    store: StagingStore
    transform: Transform
    compare: Compare
    # the issue load's three-way diff of one issue (`issues.record.IssueRecord.field_changes`), read only
    field_changes: Callable[[StagedRecord, str], Awaitable[tuple[FieldChanges, Fields]]]

    def pending(self, row: LedgerRow, record: StagedRecord) -> Change | None:
        """A status walk, a mirrored deletion (a skip when the file's replacement deletes
        it), a replaced file's old copy."""
        action, raw = ACTIONS.get(row.entity), record.raw
        if action is None:
            return None
        if row.entity == "issue_status":
            detail = f"to {(raw.get('status') or {}).get('key')}"
        elif row.entity == REPLACED:
            detail = described(raw)
        elif self.store.get_record(REPLACED, str(raw.get("source_id"))) is not None:
            action, detail = "skip", "deleted by its replacement"
        else:
            detail = f"{raw.get('entity')} {raw.get('target_id')}: {raw.get('reason')}"
        return Change(row.entity, row.source_id, row.target_id or "", action, (), detail)

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        if row.entity == "issue":
            return self._moved(row, record) + await self._issue(row, record)
        if row.entity == "checklist":
            return await self._checklist(row, record)
        if row.entity == "issue_access":
            return await self._access(row, record)
        return [updated(row, REFRESHED.get(row.entity, ()), "changed at the source")]

    async def pending_field_changes(self, row: LedgerRow, record: StagedRecord) -> FieldPreview:
        """The hook: per issue, the fields the next load updates and those in conflict, three
        ways (`issues.fields.diff_fields`: the source, what haul last wrote, the target now):
        a field changed only in the target is kept, so it is in neither."""
        changes, target = await self.field_changes(record, row.target_id or "")
        fixed = set(import_only(changes.carried))
        carried = {name: (target.get(name), value) for name, value in changes.carried.items()}
        return FieldPreview(
            update={name: both for name, both in carried.items() if name not in fixed},
            conflicts=dict(changes.conflicts),
            not_updatable={name: both for name, both in carried.items() if name in fixed},
        )

    async def _issue(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        fields = await self.pending_field_changes(row, record)
        target = row.target_id or ""
        changes = [updated(row, tuple(fields.update), _how(fields.update))]
        if not fields.update:  # the edit is sent all the same: the record changed
            changes = [updated(row, (), "changed at the source; no edited field differs")]
        if fields.conflicts:
            changes.append(_conflict(row, target, fields.conflicts))
        if fields.not_updatable:
            detail = f"no update call changes it: {_how(fields.not_updatable)}"
            fixed = Change(row.entity, row.source_id, target, "not updatable",
                           tuple(fields.not_updatable), detail, writes=0)  # fmt: skip
            changes.append(fixed)
        return changes

    async def _access(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        """An update only when the target's list differs: its refresh edits nothing else."""
        expected, found = await self.compare(row, record)
        if found == expected:
            return []
        was = (found or {}).get("access")
        return [updated(row, ("access",), _how({"access": (was, expected.get("access"))}))]

    def _moved(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        """A move when the issue's queue at the source maps elsewhere than where it is."""
        source_queue = str((record.raw.get("queue") or {}).get("key") or "")
        wanted = self.transform.queues.queue(source_queue)
        now = (row.target_id or "").rpartition("-")[0]
        if not now or wanted == now:
            return []
        detail = f"from queue {now} to {wanted} (moved at the source to {source_queue})"
        return [Change(row.entity, row.source_id, row.target_id or "", "move", ("queue",), detail)]

    async def _checklist(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        """The items the next load edits, adds and removes, three ways against the base when
        there is one (a person's edit in the target is kept, so it is not listed), and the
        items changed on both sides as a conflict."""
        key, target = (row.target_id or "").removesuffix("/checklist"), row.target_id or ""
        wanted = [self.transform.checklist_body(item) for item in record.raw["items"]]
        listed = await self.client.list_checklist(key)
        base = self.store.written.base("checklist", row.source_id)
        if base is None:
            edits = checklist_edits(listed, wanted)
        else:
            items = source_items(record.raw["items"], wanted)
            settling = settle_items(items, base["items"], listed, item_rule("keep-target"))
            edits = ChecklistEdits(
                settling.edit, [body for _, body in settling.add], settling.remove
            )
            if settling.conflicts:
                return [*self._items(row, edits), _conflict(row, target, settling.conflicts)]
        return self._items(row, edits)

    @staticmethod
    def _items(row: LedgerRow, edits: ChecklistEdits) -> list[Change]:
        if edits.empty:
            return []
        writes = len(edits.edit) + bool(edits.add) + len(edits.remove)
        detail = edits.described()
        return [Change(row.entity, row.source_id, row.target_id or "", "update", ("items",),
                       detail, writes)]  # fmt: skip


def _conflict(row: LedgerRow, target: str, conflicts: dict[str, tuple[Any, Any]]) -> Change:
    """Fields (or items) changed on both sides, with both values: no write."""
    detail = "; ".join(
        f"{name}: source {ours!r}, target {theirs!r}" for name, (ours, theirs) in conflicts.items()
    )
    return Change(row.entity, row.source_id, target, "conflict", tuple(conflicts), detail, writes=0)


def _how(update: dict[str, tuple[Any, Any]]) -> str:
    """ "summary: 'Old' -> 'New'; tags: [] -> ['x']" (long values cut short)."""
    return "; ".join(
        f"{name}: {_short(old)} -> {_short(new)}" for name, (old, new) in update.items()
    )


def _short(value: Any, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
