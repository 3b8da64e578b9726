"""The wiki's extract: each root's page tree as a stream, each page's children as a drain.

`PageTree` lists a root's descendants (ids and slugs, a hundred a request) and reads each
page with its content, attributes, owner and access (policy and entries), a batch at a time; a batch is staged with a checkpoint
naming its last slug, so a killed run resumes after it. Every later run reads every page
again (the listing says nothing of changes), but only a page whose version moved is drained
again: its version is its `modified_at`, its comment count and a digest of its resources
listing (each attachment's id and size, each grid's revision) and of its comments (id, parent,
text), so a file replaced, a grid edited or a comment edited on a page whose text did not
change counts too: two listings a page, against a drain's three listings and a read per grid.
A change of access alone changes the staged page (not its version): the load brings the
target's access up to date, and no drain runs. When a tree was listed from its start, a
staged page it no longer holds was moved or deleted (`pipelines.wiki.moves`).

`PageDrain` fetches a page's resources (attachments, their bytes into the blob store checked
against the listed size, unless staged already; grids, each read again only when its
revision moved) and comments.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from haul.connectors.errors import NotFoundError, RecordError
from haul.connectors.wiki import ACCESS_FIELDS, WikiClient
from haul.pipelines.config import ConfigError
from haul.pipelines.downloads import download_checked, staged_or_fetched
from haul.pipelines.streams import Page, Row
from haul.pipelines.wiki.deletions import vanished_children
from haul.pipelines.wiki.moves import find_vanished_pages
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

BATCH = 50
STAGED_FIELDS = f"content,attributes,owner,{ACCESS_FIELDS}"


def page_version(page: dict[str, Any]) -> str:
    """What changes when a page or its comments change."""
    attributes = page.get("attributes") or {}
    return f"{attributes.get('modified_at') or ''}#{attributes.get('comments_count') or 0}"


def changes_mark(resources: list[dict[str, Any]], comments: list[dict[str, Any]]) -> str:
    """A short digest of what a page holds beyond its text: it moves when a file is replaced
    or deleted, a grid edited, a comment edited or deleted."""
    held = sorted(
        [kind, str(item.get("id")), str(item.get("size") or item.get("revision") or "")]
        for kind, item in ((r.get("type"), r.get("item") or {}) for r in resources)
    )
    said = sorted(
        [str(c.get("id")), str(c.get("parent_id") or ""), str(c.get("body") or "")]
        for c in comments
        if not c.get("is_deleted")
    )
    return hashlib.sha256(json.dumps([held, said]).encode()).hexdigest()[:16]


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
    store: StagingStore | None = None  # given: pages gone from a whole listing are looked up

    @property
    def checkpoint(self) -> str:
        return f"wiki:{self.root}"

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        state = saved() or {}
        resume_after = None if state.get("complete", True) else state.get("after")
        batch: list[str] = []
        listed: set[str] = set()
        async for slug in self._slugs(resume_after):
            listed.add(slug)
            batch.append(slug)
            if len(batch) >= BATCH:
                yield await self._page(batch, {"after": batch[-1], "complete": False})
                batch = []
        if not listed and resume_after is None:
            raise ConfigError("scope.wiki_roots", f"{self.root!r} is not a page of the source wiki")
        yield await self._page(batch, {"after": None, "complete": True})
        if resume_after is None and self.store is not None:  # the whole tree was listed
            await find_vanished_pages(self.client, self.store, self.root, listed)

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
            page, mark = reply
            rows.append(
                {
                    "source_id": slug,
                    "parent": parent_slug(slug, self.root),
                    "updated_at": f"{page_version(page)}#{mark}",
                    "raw": {**page, "root": self.root},
                }
            )
        self.pages_read += len(rows)
        return Page(rows, checkpoint, problems)

    async def _read(self, slug: str) -> tuple[dict[str, Any], str] | str:
        """The page and the mark of what it holds (or why it could not be read)."""
        try:
            page = await self.client.get_page(slug, fields=STAGED_FIELDS)
            page_id = int(page["id"])
            resources = await _collect(self.client.iter_resources(page_id))
            comments = await _collect(self.client.iter_comments(page_id))
        except RecordError as exc:  # this page's problem, not the run's
            return f"page {slug!r} could not be read: {exc}"
        return page, changes_mark(resources, comments)


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
            _collect(self.client.iter_resources(page_id)),
            _collect(self.client.iter_comments(page_id)),
        )
        resources, comments = await self._all(listings)
        attachments = [r["item"] for r in resources if r.get("type") == "attachment"]
        grid_refs = [r["item"] for r in resources if r.get("type") == "grid"]
        grids = await self._all([self._grid(slug, ref) for ref in grid_refs])
        attachment_rows = [await self._attachment_row(slug, page_id, a) for a in attachments]
        children: dict[str, list[Row]] = {
            "wiki_attachment": attachment_rows,
            "wiki_grid": [{"source_id": str(grid["id"]), "raw": grid} for grid in grids],
            "wiki_comment": [
                {"source_id": f"{slug}/{comment['id']}", "raw": comment}
                for comment in comments
                if not comment.get("is_deleted")
            ],
        }
        vanished_children(self.store, slug, children)  # named while still staged
        return children

    async def _grid(self, slug: str, ref: dict[str, Any]) -> dict[str, Any]:
        """The grid as staged when its revision did not move (on the same page), else read."""
        staged = self.store.get_record("wiki_grid", str(ref["id"]))
        revision = staged.raw.get("revision") if staged and staged.parent == slug else None
        if (
            staged is not None
            and revision is not None
            and str(revision) == str(ref.get("revision"))
        ):
            return staged.raw
        return await self.client.get_grid(str(ref["id"]))

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
