"""A page's grids: two ledger rows each. `wiki_grid` makes the grid (found again by its page
and title), `wiki_grid_rows` fills it (found again by comparing columns and rows), so a crash
halfway through the rows resumes from the target's rows instead of taking a half-filled grid
for done. A grid edited at the source has its rows settled three ways (`grids`).
"""

from __future__ import annotations

from haul.pipelines.specs import (
    Conflicted,
    EntitySpec,
    Fields,
    RecordFailure,
    Ref,
    Sent,
    Unclaimed,
    each_record,
)
from haul.pipelines.sync.three_way import FieldChanges, conflict_message
from haul.pipelines.sync.three_way_items import count_settling
from haul.pipelines.wiki.load import BESIDE_SUBPAGES, WikiLoad, created, page_of
from haul.state.store import StagedRecord

PLAN_GRIDS = each_record("wiki_grid", parent=page_of, sort_key=created)
PLAN_GRID_ROWS = each_record("wiki_grid", parent=lambda record: Ref("wiki_grid", record.source_id))
PLANS = {"wiki_grid": PLAN_GRIDS, "wiki_grid_rows": PLAN_GRID_ROWS}


class Grids:
    """Makes, fills and refreshes grids in one target org."""

    def __init__(self, load: WikiLoad) -> None:
        self.load = load

    def specs(self) -> list[EntitySpec]:
        printed = self.load.grid()
        return [
            EntitySpec("wiki_grid", "wiki_grid", PLAN_GRIDS, self.send_grid, printed.find,
                       order=BESIDE_SUBPAGES, fingerprint=printed,
                       claims_with=("backfill_grid",)),
            EntitySpec("wiki_grid_rows", "wiki_grid", PLAN_GRID_ROWS, self.send_grid_rows,
                       self.find_grid_rows, refresh=self.refresh_grid_rows),
        ]  # fmt: skip

    async def send_grid(self, record: StagedRecord, page: str | None) -> str:
        if page is None:
            raise RecordFailure(f"the page of grid {record.source_id} is not loaded")
        grid = await self.load.client.create_grid(int(page), str(record.raw.get("title") or ""))
        return self.load.made("wiki_grid", str(grid["id"]))

    async def send_grid_rows(self, record: StagedRecord, grid: str | None) -> Sent:
        if grid is None:
            raise RecordFailure(f"grid {record.source_id} was not made")
        await self.load.grids.sync(record.raw, grid)
        return Sent(grid, written=await self.load.grids.base(record.raw, grid))

    async def find_grid_rows(
        self, record: StagedRecord, grid: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        if grid is None or not await self.load.grids.matches(record.raw, grid):
            return None  # not (wholly) filled: the next send picks up where it is
        return Sent(grid, written=await self.load.grids.base(record.raw, grid))

    async def refresh_grid_rows(self, record: StagedRecord, target_id: str) -> Fields:
        """A grid edited at the source (its revision moved): its title and columns follow the
        source, its rows three ways (`grids`): a row a person edited in the target only, or
        added there, is kept; one edited on both sides is a conflict (`[sync] conflicts`)."""
        base = self.load.store.written.base("wiki_grid_rows", record.source_id)
        if base is None:  # filled before three-way sync: the target made the source's
            if await self.load.grids.sync(record.raw, target_id):
                self.load.changes[("wiki_grid", "updated")] += 1
            return await self.load.grids.base(record.raw, target_id)
        settling, after, moved = await self.load.grids.settle(
            record.raw, target_id, base["rows"], self.load.conflicts
        )
        if moved and not settling.writes:  # its title or columns only
            self.load.changes[("wiki_grid", "updated")] += 1
        for name, ours, theirs in settling.overwritten:
            self.load.store.written.overwrote(
                "wiki_grid_rows", record.source_id, name, ours, theirs
            )
        count_settling(self.load.three_way, "wiki_grid", settling)
        written: Fields = {"rows": after}
        if settling.conflicts:
            changes = FieldChanges(conflicts=settling.conflicts)
            raise Conflicted(conflict_message(changes), written)
        return written


def specs(load: WikiLoad) -> list[EntitySpec]:
    """The grids' specs: made, then filled."""
    return Grids(load).specs()
