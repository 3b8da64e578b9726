"""How each wiki entity is read back from the target and fingerprinted on both sides.

The source side is the staged record as the load writes it (content with links rewritten and
the provenance line, comment bodies the same way, grid cells with remapped keys); the target
side is what the ledger's target id names, read back: a page's title and content, an
attachment's name, size and sha256 of its bytes, a grid's columns and rows, a comment's body
and the comment it answers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.wiki import WikiClient
from haul.pipelines.config import Config
from haul.pipelines.wiki.content import Rewriter
from haul.pipelines.wiki.grids import columns_of, rows_of
from haul.pipelines.wiki.service import slug_map
from haul.pipelines.wiki.specs import WikiLoad
from haul.pipelines.wiki.streams import byte_size
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

Fields = dict[str, Any]


class _HashSink:
    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return len(data)


@dataclass
class WikiVerifier:
    """Both fingerprints of one loaded wiki record."""

    client: WikiClient
    store: StagingStore
    load: WikiLoad

    async def compare(self, row: LedgerRow, record: StagedRecord) -> tuple[Fields, Fields | None]:
        """(what the load wrote, what the target holds now, or None when it is gone)."""
        compare = {
            "wiki_page": self._wiki_page,
            "wiki_attachment": self._wiki_attachment,
            "wiki_grid": self._wiki_grid,
            "wiki_grid_rows": self._wiki_grid_rows,
            "wiki_comment": self._wiki_comment,
        }[row.entity]
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

    async def _wiki_attachment(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]:
        page_id = self.store.ledger.target_id("wiki_page", record.parent or "")
        expected = {
            "name": record.raw.get("name"),
            "size": byte_size(record.raw.get("size")),
            "sha256": record.blob,
        }
        async for attachment in self.client.iter_attachments(int(page_id or 0)):
            if str(attachment["id"]) == row.target_id:
                sink = _HashSink()
                await self.client.download_attachment(int(page_id or 0), attachment["id"], sink)
                found = {
                    "name": attachment.get("name"),
                    "size": sink.size,
                    "sha256": sink.hash.hexdigest(),
                }
                return expected, found
        return expected, None

    async def _wiki_grid(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]:
        grid = await self.client.get_grid(row.target_id or "")
        return {"title": record.raw.get("title")}, {"title": grid.get("title")}

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

    async def _wiki_comment(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]:
        page_id, _, comment_id = (row.target_id or "").partition("/")
        expected: Fields = {
            "body": self.load.comment_body(record),
            "reply": bool(row.parent_entity == "wiki_comment"),
        }
        async for comment in self.client.iter_comments(int(page_id)):
            if str(comment["id"]) == comment_id:
                return expected, {
                    "body": comment.get("body"),
                    "reply": bool(comment.get("parent_id")),
                }
        return expected, None


async def wiki_verifier(config: Config, client: WikiClient, store: StagingStore) -> WikiVerifier:
    """The wiki's verifier, with the load's own rewriting."""
    rewriter = Rewriter(slug_map(config), dict(config.mapping.queues))
    load = WikiLoad(client, store, rewriter, config.mapping.wiki_provenance)
    return WikiVerifier(client, store, load)
