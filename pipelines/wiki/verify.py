"""How a wiki page and a grid's contents are read back from the target and compared.

Attachments, grids (their title) and comments are compared through their fingerprints
(`WikiLoad.attachment`, `.grid`, `.comment`: the same fields their `find` matches on). This
verifier covers the three that have none: a page (found by its target slug, compared on its
slug, title and content with links rewritten and the provenance line), a page's access (its
policy and entries after mapping, and who reads it with inheritance resolved: a page someone
opened wider by hand in the target differs) and a grid's columns and rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from haul.connectors.errors import NotFoundError
from haul.connectors.wiki import WikiClient
from haul.pipelines.verifying import Fields
from haul.pipelines.wiki.access import current, readers
from haul.pipelines.wiki.grids import columns_of, rows_of
from haul.pipelines.wiki.specs import WikiLoad
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord


@dataclass
class WikiVerifier:
    """Both fingerprints of one loaded page or grid content."""

    client: WikiClient
    load: WikiLoad

    compares: ClassVar[frozenset[str]] = frozenset(
        ("wiki_page", "wiki_page_access", "wiki_grid_rows")
    )

    async def compare(self, row: LedgerRow, record: StagedRecord) -> tuple[Fields, Fields | None]:
        """(what the load wrote, what the target holds now, or None when it is gone)."""
        compare = {
            "wiki_page": self._wiki_page,
            "wiki_page_access": self._wiki_page_access,
        }.get(row.entity, self._wiki_grid_rows)
        try:
            return await compare(row, record)
        except NotFoundError:
            return {}, None

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
        expected = {
            "columns": [(c["slug"], c["type"]) for c in columns_of(record.raw)],
            "rows": self.load.grids.wanted(record.raw),
        }
        found = {
            "columns": [(c["slug"], c["type"]) for c in columns_of(grid)],
            "rows": rows_of(grid),
        }
        return expected, found
