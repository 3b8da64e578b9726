"""The wiki's extract: each root's page tree as a stream, each page's children as a drain.

`PageTree` lists a root's descendants (ids and slugs, a hundred a request) and reads each
page with its content, attributes, owner and access (policy and entries), a batch at a time; a batch is staged with a checkpoint
naming its last slug, so a killed run resumes after it. Every later run reads every page
again (the listing says nothing of changes), but only a page whose version moved is drained
again: its version is its `modified_at` and its comment count, so a new comment counts too.
A change of access alone changes the staged page (not its version): the load brings the
target's access up to date, and no drain runs.

`PageDrain` fetches a page's attachments (bytes into the blob store, checked against the
listed size), grids (structure and rows) and comments.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from haul.connectors.errors import NotFoundError, RecordError
from haul.connectors.wiki import ACCESS_FIELDS, WikiClient
from haul.pipelines.config import ConfigError
from haul.pipelines.downloads import download_checked, staged_or_fetched
from haul.pipelines.streams import Page, Row
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

BATCH = 50
STAGED_FIELDS = f"content,attributes,owner,{ACCESS_FIELDS}"


def page_version(page: dict[str, Any]) -> str:
    """What changes when a page or its comments change."""
    attributes = page.get("attributes") or {}
    return f"{attributes.get('modified_at') or ''}#{attributes.get('comments_count') or 0}"


def parent_slug(slug: str, root: str) -> str | None:
    """The page a page hangs under within its root (None for the root itself)."""
    if slug == root:
        return None
    return slug.rpartition("/")[0] or None


@dataclass
class PageTree:
    """One root's pages, staged as `wiki_page` rows keyed by slug."""

    client: WikiClient
    root: str
    entity: str = "wiki_page"
    pages_read: int = 0
    concurrent: bool = True  # False: one request at a time (the benchmark's baseline)

    @property
    def checkpoint(self) -> str:
        return f"wiki:{self.root}"

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        state = saved() or {}
        resume_after = None if state.get("complete", True) else state.get("after")
        batch: list[str] = []
        listed = 0
        async for slug in self._slugs(resume_after):
            listed += 1
            batch.append(slug)
            if len(batch) >= BATCH:
                yield await self._page(batch, {"after": batch[-1], "complete": False})
                batch = []
        if listed == 0 and resume_after is None:
            raise ConfigError("scope.wiki_roots", f"{self.root!r} is not a page of the source wiki")
        yield await self._page(batch, {"after": None, "complete": True})

    async def _slugs(self, resume_after: str | None) -> AsyncIterator[str]:
        """The tree's slugs, after `resume_after` when a killed run staged up to it. If that
        page is gone from the listing meanwhile, the whole tree is listed again: re-reading
        pages is harmless, skipping them would lose them."""
        skipped: list[str] = []
        async for ref in self._refs():
            slug = str(ref["slug"]).strip("/")
            if resume_after is None:
                yield slug
            elif slug == resume_after:
                resume_after = None
            else:
                skipped.append(slug)
        if resume_after is not None:  # never met: list everything after all
            for slug in skipped:
                yield slug

    async def _refs(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for ref in self.client.iter_descendants(self.root):
                yield ref
        except NotFoundError:
            raise ConfigError(
                "scope.wiki_roots", f"{self.root!r} is not a page of the source wiki"
            ) from None

    async def _page(self, slugs: list[str], checkpoint: dict[str, Any]) -> Page:
        if self.concurrent:
            replies = await asyncio.gather(*(self._read(slug) for slug in slugs))
        else:
            replies = [await self._read(slug) for slug in slugs]
        rows: list[Row] = []
        problems: list[tuple[str, str, str]] = []
        for slug, reply in zip(slugs, replies, strict=True):
            if isinstance(reply, str):
                problems.append((self.entity, slug, reply))
                continue
            rows.append(
                {
                    "source_id": slug,
                    "parent": parent_slug(slug, self.root),
                    "updated_at": page_version(reply),
                    "raw": {**reply, "root": self.root},
                }
            )
        self.pages_read += len(rows)
        return Page(rows, checkpoint, problems)

    async def _read(self, slug: str) -> dict[str, Any] | str:
        try:
            return await self.client.get_page(slug, fields=STAGED_FIELDS)
        except RecordError as exc:  # this page's problem, not the run's
            return f"page {slug!r} could not be read: {exc}"


@dataclass
class PageDrain:
    """A page's attachments, grids and comments, staged under its slug."""

    client: WikiClient
    store: StagingStore
    parent: str = "wiki_page"
    attachment_bytes: int = 0
    concurrent: bool = True  # False: one request at a time (the benchmark's baseline)

    async def fetch(self, page: StagedRecord) -> dict[str, list[Row]]:
        page_id = int(page.raw["id"])
        slug = page.source_id
        listings = (
            _collect(self.client.iter_attachments(page_id)),
            _collect(self.client.iter_grids(page_id)),
            _collect(self.client.iter_comments(page_id)),
        )
        attachments, grid_refs, comments = await self._all(listings)
        grids = await self._all([self.client.get_grid(str(g["id"])) for g in grid_refs])
        attachment_rows = [await self._attachment_row(slug, page_id, a) for a in attachments]
        return {
            "wiki_attachment": attachment_rows,
            "wiki_grid": [{"source_id": str(grid["id"]), "raw": grid} for grid in grids],
            "wiki_comment": [
                {"source_id": f"{slug}/{comment['id']}", "raw": comment}
                for comment in comments
                if not comment.get("is_deleted")
            ],
        }

    async def _all(self, calls: Any) -> list[Any]:
        if self.concurrent:
            return list(await asyncio.gather(*calls))
        return [await call for call in calls]

    async def _attachment_row(self, slug: str, page_id: int, attachment: dict[str, Any]) -> Row:
        source_id = f"{slug}/{attachment['id']}"
        blob, problem = await staged_or_fetched(
            self.store,
            "wiki_attachment",
            source_id,
            attachment.get("size"),
            lambda: self._download(page_id, attachment),
        )
        if problem is not None:
            return {"source_id": source_id, "raw": attachment, "problem": problem}
        return {"source_id": source_id, "raw": attachment, "blob": blob}

    async def _download(self, page_id: int, attachment: dict[str, Any]) -> str:
        """The attachment's bytes into the blob store, checked against the listed size."""
        sha256, size = await download_checked(
            self.store.blobs,
            lambda sink: self.client.download_attachment(page_id, attachment["id"], sink),
            name=str(attachment["name"]),
            expected=byte_size(attachment.get("size")),
        )
        self.attachment_bytes += size
        return sha256


def byte_size(size: Any) -> int | None:
    """The wiki lists a size as a string; a whole number of bytes, or None if it is not one."""
    try:
        value = float(str(size))
    except (TypeError, ValueError):
        return None
    return int(value) if value.is_integer() else None


async def _collect(records: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [record async for record in records]
