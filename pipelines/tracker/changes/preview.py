"""What the next load does with each tracker record changed at the source, for `haul plan`.

Asked with reads only (`pipelines.sync.preview`). Each kind of the trees previews its own rows
(`issues.kinds.Kind.preview`): an issue moved to another queue at the source is a move, its
fields an update naming each field that differs and how, a conflict where a field changed on
both sides, `not updatable` naming a field changed at the source that no update call can change
(`issues.record`); an edited checklist an update counting the items edited, added and removed,
three ways (`children.checklists`); a walked status a transition (`issues.statuses`); a
replaced file's old copy a delete (`children.replaced`). A mirrored deletion is this layer's: a
delete, unless a kind speaks for it first (a file's replacement deletes the old file itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from haul.pipelines.sync.preview import Change, updated
from haul.pipelines.tracker.issues.kinds import TreeLoad
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord


@dataclass
class TrackerPreview:
    """The tracker's `ChangePreview`, for one target org: its kinds' previews, as the specs
    built through `load` registered them, and the mirrored deletions."""

    load: TreeLoad

    def pending(self, row: LedgerRow, record: StagedRecord) -> Change | None:
        """What a kind says a pending row stands for; else a deletion's delete (else None: a
        create)."""
        for preview in self.load.previews.values():
            if (change := preview.pending(row, record)) is not None:
                return change
        if row.entity != "deletion":
            return None
        raw = record.raw
        detail = f"{raw.get('entity')} {raw.get('target_id')}: {raw.get('reason')}"
        return Change(row.entity, row.source_id, row.target_id or "", "delete", (), detail)

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        preview = self.load.previews.get(row.entity)
        if preview is None:
            return [updated(row, (), "changed at the source")]
        return await preview.changes(row, record)
