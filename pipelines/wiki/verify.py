"""How a wiki page and a grid's contents are read back from the target and compared.

Attachments, grids (their title) and comments are compared through their fingerprints
(`WikiLoad.attachment`, `.grid`, `.comment`: the same fields their `find` matches on; a
back-filled grid's is `GridBackfill.grid`). This verifier covers those that have none: a page
(found by its target slug, compared on its slug, title and content with links rewritten and
the provenance line), a page's access (its policy and entries after mapping, and who reads it
with inheritance resolved: a page someone opened wider by hand in the target differs) and a
grid's contents, migrated or back-filled: its columns, its number of rows, and each cell of
the rows both hold, one field per cell (`cell row 3, column email`), so one changed cell is
one difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from haul.connectors.errors import NotFoundError
from haul.connectors.wiki import WikiClient
from haul.pipelines.sync.three_way import changed_where
from haul.pipelines.verifying import Fields
from haul.pipelines.wiki.access import current, readers
from haul.pipelines.wiki.backfill import survey_grid
from haul.pipelines.wiki.grids import columns_of, rows_of
from haul.pipelines.wiki.load import WikiLoad
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord


@dataclass
class WikiVerifier:
    """Both fingerprints of one loaded page or grid content."""

    client: WikiClient
    load: WikiLoad

    compares: ClassVar[frozenset[str]] = frozenset(
        ("wiki_page", "wiki_page_access", "wiki_grid_rows", "backfill_grid_rows")
    )

    async def compare(self, row: LedgerRow, record: StagedRecord) -> tuple[Fields, Fields | None]:
        """(what the load wrote, what the target holds now, or None when it is gone)."""
        compare = {
            "wiki_page": self._wiki_page,
            "wiki_page_access": self._wiki_page_access,
            "backfill_grid_rows": self._backfill_grid_rows,
        }.get(row.entity, self._wiki_grid_rows)
        try:
            return await compare(row, record)
        except NotFoundError:
            return {}, None

    def known(self, row: LedgerRow, name: str, expected: Any, found: Any) -> str:
        """Why a page's title or body differs, when its base tells: a person's edit in the
        target, or a conflict (`pipelines.three_way.changed_where`)."""
        if row.entity != "wiki_page" or name not in ("title", "content"):
            return ""
        base = self.load.store.written.base(row.entity, row.source_id)
        if base is None or name not in base:
            return ""
        return changed_where(expected, base[name], found)

    async def _wiki_page(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]:
        expected = {
            "slug": self.load.target_slug(record.source_id),
            "title": record.raw.get("title"),
            "content": self.load.page_content(record),
        }
        page = await self.client.get_page_by_id(int(row.target_id or 0))
        return expected, {key: page.get(key) for key in expected}

    async def _wiki_page_access(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]:
        access = self.load.access
        holders = access.holders
        expected = {
            **access.wanted(record).described(),
            "readers": readers(record.raw, holders),
        }
        page = await self.client.get_access(int(row.target_id or 0))
        now, _ = current(page, holders)
        found = {**now.described(), "readers": readers(page, None, me=holders.directory.me)}
        return expected, found

    async def _wiki_grid_rows(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]:
        grid = await self.client.get_grid(row.target_id or "")
        return by_cell(record.raw, self.load.grids.wanted(record.raw), grid)

    async def _backfill_grid_rows(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]:
        source = survey_grid(self.load.store, record, self.load.mirror)
        grid = await self.client.get_grid(row.target_id or "")
        return by_cell(source, rows_of(source), grid)


def by_cell(
    source: Mapping[str, Any], wanted: list[dict[str, Any]], grid: Mapping[str, Any]
) -> tuple[Fields, Fields]:
    """Both sides of a grid as fields: its columns (slug and type), its number of rows, and
    one field per cell of the rows both sides hold (a missing or extra row shows in the count,
    not as a row of differing cells)."""
    found_rows = rows_of(grid)
    expected: Fields = {
        "columns": [[c["slug"], c["type"]] for c in columns_of(source)],
        "rows": len(wanted),
    }
    found: Fields = {
        "columns": [[c["slug"], c["type"]] for c in columns_of(grid)],
        "rows": len(found_rows),
    }
    for number, (want, have) in enumerate(zip(wanted, found_rows, strict=False), start=1):
        for slug, value in want.items():
            name = f"cell row {number}, column {slug}"
            expected[name], found[name] = value, have.get(slug)
    return expected, found
