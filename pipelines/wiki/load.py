"""What every kind of wiki record loads with (`WikiLoad`), and how the target should hold it.

The kinds, one module each, in the order a page's rows load: its access (`pages`: right after
the page, before anything under it), the page itself (`pages`), then, all at once, the pages
under it (together, each with its own subtree), its attachments (`attachments`, together),
grids (`grid_load`, together) and comments (`comments`, in thread order): none of them needs
another, so a page's files do not wait for its whole subtree (`beside_earlier`). Deletions
mirrored from the source load last (`deletions`). A page that only its entries read is made
restricted and empty, and its access row grants the entries and then writes the content
(`pipelines.wiki.access_sync`), so no one the source refused reads it at any instant. Each is
found again in the target by what identifies it there (`WikiLoad`'s fingerprints, which verify
compares by too): a page by its target slug, an attachment by (page, name, size), a grid by
(page, title), a grid's content by comparing columns and rows, a comment by (page, text,
parent).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.wiki import WikiClient
from haul.pipelines.downloads import HashSink
from haul.pipelines.specs import Fields, Fingerprint, Order, RecordFailure, Ref
from haul.pipelines.sync.three_way import ConflictRule, ThreeWay
from haul.pipelines.wiki.access_sync import PageAccess
from haul.pipelines.wiki.content import Rewriter, provenance, with_provenance
from haul.pipelines.wiki.grids import GridSync
from haul.pipelines.wiki.ownership import PageOwnership, with_marker
from haul.pipelines.wiki.streams import byte_size
from haul.state.store import StagedRecord, StagingStore

TEXT_CELLS = ("ticket", "string", "ticket_field")  # cells whose tracker keys are remapped
# a page's files and grids: all at once, and beside its subpages (once its access is set)
BESIDE_SUBPAGES = Order(siblings_together=True, beside_earlier=True)


def page_of(record: StagedRecord) -> Ref:
    """The page a record hangs under."""
    return Ref("wiki_page", record.parent or "")


def on_page(record: StagedRecord, page: str | None) -> str | None:
    """Where a page's file or grid lives in the target: its page."""
    return page


def created(record: StagedRecord) -> str:
    """When a record was made at the source (the order its siblings load in)."""
    return str(record.raw.get("created_at") or "")


@dataclass
class WikiLoad:
    """Everything the wiki's specs need to write to one target org."""

    client: WikiClient
    store: StagingStore
    rewriter: Rewriter
    provenance: str
    access: PageAccess
    ownership: PageOwnership  # the line that marks the pages haul made
    mirror: bool = False  # [sync] deletions = "mirror"
    conflicts: ConflictRule = "keep-target"  # [sync] conflicts: a page edited on both sides
    # (entity, what happened) -> how many: created, updated, moved, deleted (the run details)
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.three_way = ThreeWay(
            self.store.written, self.conflicts, self.changes, decisions=self.store.conflicts
        )
        self.grids = GridSync(self.client, self._cell)

    def page_target(self, slug: str) -> str | None:
        """The target id of a page loaded (done) by this migration."""
        row = self.store.ledger.get("wiki_page", slug)
        return row.target_id if row is not None and row.status == "done" else None

    def made(self, entity: str, target_id: str) -> str:
        """Count a record created in the target; its target id."""
        self.changes[(entity, "created")] += 1
        return target_id

    # -- what tells a record apart in the target: written once, for find and verify --------

    def attachment(self) -> Fingerprint:
        """An attachment: its page, name and size; verify adds the sha256 of its bytes."""
        return Fingerprint(
            lambda record: {
                "name": record.raw.get("name"),
                "size": byte_size(record.raw.get("size")),
                "sha256": record.blob,
            },
            on_page,
            self._attachments,
            ("name", "size"),
            self._bytes,
        )

    def grid(self) -> Fingerprint:
        """A grid: its page and title (its columns and rows are `wiki_grid_rows`')."""
        return Fingerprint(
            lambda record: {"title": str(record.raw.get("title") or "")},
            on_page,
            self._grids,
            ("title",),
        )

    def comment(self) -> Fingerprint:
        """A comment: its page, the comment it answers, its text (provenance included)."""
        return Fingerprint(
            lambda record: {"body": self.comment_body(record)},
            lambda record, parent: parent,  # "page", or "page/comment" for a reply
            self._comments,
            ("body",),
        )

    async def _attachments(self, page: str) -> list[Fields]:
        return [
            {"id": str(a["id"]), "name": a.get("name"), "size": byte_size(a.get("size"))}
            async for a in self.client.iter_attachments(int(page))
        ]

    async def _bytes(self, page: str, found: Fields) -> Fields:
        sink = HashSink()
        await self.client.download_attachment(int(page), found["id"], sink)
        return {"sha256": sink.hexdigest()}

    async def _grids(self, page: str) -> list[Fields]:
        return [
            {"id": str(g["id"]), "title": g.get("title")}
            async for g in self.client.iter_grids(int(page))
        ]

    async def _comments(self, place: str) -> list[Fields]:
        """The comments of a page that answer the same comment (none: the top ones)."""
        page, _, answered = place.partition("/")
        return [
            {"id": f"{page}/{c['id']}", "body": c.get("body")}
            async for c in self.client.iter_comments(int(page))
            if str(c.get("parent_id") or "") == answered
        ]

    # -- what the target should hold ------------------------------------------------------

    def target_slug(self, source_slug: str) -> str:
        slug = self.rewriter.slugs.target(source_slug)
        if slug is None:
            raise RecordFailure(f"page {source_slug} is under no configured wiki root")
        return slug

    def page_content(self, record: StagedRecord) -> str:
        """The page's markdown as the target holds it: haul's line (`ownership`), then the
        provenance line, then the content with its links rewritten."""
        content = self.rewriter.rewrite(str(record.raw.get("content") or ""), record.source_id)
        line = provenance(self.provenance, record.raw, record.source_id)
        return with_marker(with_provenance(content, line), self.ownership.line(record.source_id))

    def comment_body(self, record: StagedRecord) -> str:
        page = record.parent or ""
        body = self.rewriter.rewrite(str(record.raw.get("body") or ""), page)
        return with_provenance(body, provenance(self.provenance, record.raw, page))

    def _cell(self, column: dict[str, Any], value: Any) -> Any:
        if isinstance(value, str) and column.get("type") in TEXT_CELLS:
            return self.rewriter.cell(value)
        return value

    # -- pages ----------------------------------------------------------------------------

    def page_title(self, record: StagedRecord) -> str:
        return str(record.raw.get("title") or record.source_id)

    def page_fields(self, record: StagedRecord) -> Fields:
        """What a sync compares of a page three ways: its title and body as the target holds
        them (the body with haul's line and the provenance line)."""
        return {"title": self.page_title(record), "content": self.page_content(record)}
