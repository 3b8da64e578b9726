"""An issue's checklist: its items written after everything else of the issue.

The API takes a checklist only as an ordinary edit (`_import` has no checklist field, nothing
sets `updatedAt` later), so the issue's `updatedAt` becomes the load's time: counted under what
the run did not carry. The row's written base is each item's target id as written, which a later
run settles item by item three ways (`checklist_sync`), and `haul plan` previews the same way.
"""

from __future__ import annotations

from typing import Any

from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Fields, Sent, Unclaimed, each_record
from haul.pipelines.sync.preview import Change, conflicted
from haul.pipelines.sync.three_way_items import settle_items
from haul.pipelines.tracker.children.checklist_sync import (
    ChecklistEdits,
    checklist_base,
    checklist_edits,
    item_rule,
    listed_after_append,
    replay_checklist,
    settle_checklist,
    source_items,
)
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad, issue_of
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord

PLAN_CHECKLISTS = each_record("checklist", parent=issue_of)
CHECKLIST_MOVES_UPDATED = (
    "issue updatedAt: moved to the load's time by the issue's checklist (the API adds a"
    " checklist only as an edit, after the import)"
)


class Checklists:
    """Writes, finds and refreshes checklists in one target org."""

    def __init__(self, load: TreeLoad) -> None:
        self.load = load

    def spec(self) -> EntitySpec:
        return EntitySpec("checklist", "checklist", PLAN_CHECKLISTS, self.send, self.find,
                          refresh=self.refresh)  # fmt: skip

    def _items(self, record: StagedRecord) -> list[dict[str, Any]]:
        return [self.load.transform.checklist_body(item) for item in record.raw["items"]]

    def _source_items(self, record: StagedRecord) -> list[tuple[str, dict[str, Any]]]:
        return source_items(record.raw["items"], self._items(record))

    async def send(self, record: StagedRecord, parent: str | None) -> Sent:
        """The items, after everything else of the issue; answers each item's target id as
        written (the base of a three-way sync)."""
        load = self.load
        key, items = load.parent_key(record, parent), self._items(record)
        listed = None  # the append's reply lists the items with their ids: none read back
        if items:  # else emptied at the source before it was ever loaded: nothing to write
            reply = await load.client.add_checklist_items(key, items)  # all in one request
            listed = await listed_after_append(load.client, key, reply)
            load.kept[CHECKLIST_MOVES_UPDATED] += 1
        written = await checklist_base(load.client, key, self._source_items(record), listed)
        return Sent(f"{key}/checklist", written=written)

    async def find(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        if parent is None:
            return None
        found = await self.load.probe.checklist(parent, self._items(record))
        if found is None:
            return None
        written = await checklist_base(self.load.client, parent, self._source_items(record))
        return Sent(found, written=written)

    async def refresh(self, record: StagedRecord, target_id: str) -> Fields:
        """A checklist edited at the source: its items three ways (`checklist_sync`): edited,
        added and removed in the target where only the source changed them, a person's edit
        kept, an item edited on both sides a conflict; the issue where it is now."""
        load = self.load
        key, items = load.issue_key(record), self._source_items(record)
        base = load.store.written.base("checklist", record.source_id)
        if base is None:  # written before three-way sync: the target made the source's
            if await replay_checklist(load.client, key, self._items(record)):
                load.changes[("checklist", "updated")] += 1
            return await checklist_base(load.client, key, items)
        where = (key, record.source_id)
        return await settle_checklist(load.client, where, items, base["items"], load.three_way)


class ChecklistPreview(KindPreview):
    """`haul plan`'s preview of an edited checklist: the items the next load edits, adds and
    removes, three ways against the base when there is one (a person's edit in the target is
    kept, so it is not listed), and the items changed on both sides as a conflict."""

    def __init__(self, load: TreeLoad) -> None:
        super().__init__()
        self.load = load

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        load = self.load
        key = (row.target_id or "").removesuffix("/checklist")
        wanted = [load.transform.checklist_body(item) for item in record.raw["items"]]
        listed = await load.client.list_checklist(key)
        base = load.store.written.base("checklist", row.source_id)
        if base is None:
            return _items(row, checklist_edits(listed, wanted))
        items = source_items(record.raw["items"], wanted)
        settling = settle_items(items, base["items"], listed, item_rule("keep-target"))
        edits = ChecklistEdits(settling.edit, [body for _, body in settling.add], settling.remove)
        if settling.conflicts:
            return [*_items(row, edits), conflicted(row, settling.conflicts)]
        return _items(row, edits)


def _items(row: LedgerRow, edits: ChecklistEdits) -> list[Change]:
    if edits.empty:
        return []
    writes = len(edits.edit) + bool(edits.add) + len(edits.remove)
    detail = edits.described()
    return [Change(row.entity, row.source_id, row.target_id or "", "update", ("items",),
                   detail, writes)]  # fmt: skip


CHECKLIST = Kind(
    Entity("checklist"),
    PLAN_CHECKLISTS,
    lambda load: Checklists(load).spec(),
    preview=ChecklistPreview,
)
