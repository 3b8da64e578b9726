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
revision moved) and comments, attachments and grids together.

A page's three reads go out together (the descendants listing gives its id), and the two
listings the version needs are kept for the page's drain in the same run (`Listed`), so a
page read and drained costs its listings once; a drain in a later run lists them itself.
The next batch of a tree is listed and read while the last one is staged and its pages
queued to drain (`prefetched`); the drains of a batch's pages run together, and so do the
trees of several roots (the extract's streams).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import structlog

from haul.connectors.errors import NotFoundError, RecordError
from haul.connectors.wiki import ACCESS_FIELDS, WikiClient
from haul.pipelines.concurrency import gather_all, prefetched
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


class Listed:
    """What reading a page listed (its resources and comments), kept until its drain takes
    them: only for a page whose drained mark is behind, so what is kept waits in the drain
    queue (bounded) and leaves with it."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = {}

    def keep(
        self,
        slug: str,
        version: str,
        resources: list[dict[str, Any]],
        comments: list[dict[str, Any]],
    ) -> None:
        self._held[slug] = (version, resources, comments)

    def take(
        self, slug: str, version: str | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """The listings of the page as read at `version` (once), or None."""
        held = self._held.pop(slug, None)
        if held is None or held[0] != version:
            return None
        return held[1], held[2]


def parent_slug(slug: str, root: str) -> str | None:
    """The page a page hangs under within its root (None for the root itself)."""
    if slug == root:
        return None
    return slug.rpartition("/")[0] or None


class Ref(NamedTuple):
    """A page as the descendants listing names it."""

    slug: str
    page_id: int | None


Listing = tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]


@dataclass
class PageTree:
    """One root's pages, staged as `wiki_page` rows keyed by slug."""

    client: WikiClient
    root: str
    entity: str = "wiki_page"
    pages_read: int = 0
    concurrent: bool = True  # False: one request at a time (the benchmark's baseline)
    store: StagingStore | None = None  # given: pages gone from a whole listing are looked up
    listed: Listed | None = None  # given: what a page to drain listed is kept for its drain

    @property
    def checkpoint(self) -> str:
        return f"wiki:{self.root}"

    def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        """The tree's pages a batch at a time; the next batch is listed and read while the
        last one is staged (and its pages queued to drain), unless one request at a time."""
        batches = self._batches(saved)
        return prefetched(batches) if self.concurrent else batches

    async def _batches(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        state = saved() or {}
        resume_after = None if state.get("complete", True) else state.get("after")
        batch: list[Ref] = []
        listed: set[str] = set()
        async for ref in self._refs_after(resume_after):
            listed.add(ref.slug)
            batch.append(ref)
            if len(batch) >= BATCH:
                yield await self._page(batch, {"after": ref.slug, "complete": False})
                batch = []
        if not listed and resume_after is None:
            raise ConfigError("scope.wiki_roots", f"{self.root!r} is not a page of the source wiki")
        yield await self._page(batch, {"after": None, "complete": True})
        if resume_after is None and self.store is not None:  # the whole tree was listed
            await find_vanished_pages(self.client, self.store, self.root, listed)

    async def _refs_after(self, resume_after: str | None) -> AsyncIterator[Ref]:
        """The tree's pages, after `resume_after` when a killed run staged up to it. If that
        page is gone from the listing meanwhile, the whole tree is listed again: re-reading
        pages is harmless, skipping them would lose them."""
        skipped: list[Ref] = []
        async for item in self._refs():
            ref = Ref(str(item["slug"]).strip("/"), _page_id(item.get("id")))
            if resume_after is None:
                yield ref
            elif ref.slug == resume_after:
                resume_after = None
            else:
                skipped.append(ref)
        if resume_after is not None:  # never met: list everything after all
            for ref in skipped:
                yield ref

    async def _refs(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for ref in self.client.iter_descendants(self.root):
                yield ref
        except NotFoundError:
            raise ConfigError(
                "scope.wiki_roots", f"{self.root!r} is not a page of the source wiki"
            ) from None

    async def _page(self, refs: list[Ref], checkpoint: dict[str, Any]) -> Page:
        replies = await gather_all([self._read(ref) for ref in refs], self.concurrent)
        rows: list[Row] = []
        problems: list[tuple[str, str, str]] = []
        for ref, reply in zip(refs, replies, strict=True):
            if isinstance(reply, str):
                problems.append((self.entity, ref.slug, reply))
                continue
            page, resources, comments = reply
            version = f"{page_version(page)}#{changes_mark(resources, comments)}"
            rows.append(
                {
                    "source_id": ref.slug,
                    "parent": parent_slug(ref.slug, self.root),
                    "updated_at": version,
                    "raw": {**page, "root": self.root},
                }
            )
            self._keep(ref.slug, version, resources, comments)
        self.pages_read += len(rows)
        return Page(rows, checkpoint, problems)

    async def _read(self, ref: Ref) -> Listing | str:
        """The page with its resources and comments (or why it could not be read): the three
        together when the listing gave the page's id, the listings again should the page
        have been replaced under its slug meanwhile (another id)."""
        try:
            if ref.page_id is None:
                page = await self.client.get_page(ref.slug, fields=STAGED_FIELDS)
                return page, *await self._listings(int(page["id"]))
            reads: list[Awaitable[Any]] = [
                self.client.get_page(ref.slug, fields=STAGED_FIELDS),
                self._listings(ref.page_id),
            ]
            page, (resources, comments) = await gather_all(reads, self.concurrent)
            if int(page["id"]) != ref.page_id:
                resources, comments = await self._listings(int(page["id"]))
        except RecordError as exc:  # this page's problem, not the run's
            return f"page {ref.slug!r} could not be read: {exc}"
        return page, resources, comments

    async def _listings(self, page_id: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        resources, comments = await gather_all(
            [
                _collect(self.client.iter_resources(page_id)),
                _collect(self.client.iter_comments(page_id)),
            ],
            self.concurrent,
        )
        return resources, comments

    def _keep(
        self,
        slug: str,
        version: str,
        resources: list[dict[str, Any]],
        comments: list[dict[str, Any]],
    ) -> None:
        """Keep the listings for the page's drain, when it is to be drained."""
        if self.listed is None or self.store is None:
            return
        if self.store.drained_version(slug, entity=self.entity) != version:
            self.listed.keep(slug, version, resources, comments)


@dataclass
class PageDrain:
    """A page's attachments, grids and comments, staged under its slug."""

    client: WikiClient
    store: StagingStore
    parent: str = "wiki_page"
    attachment_bytes: int = 0
    concurrent: bool = True  # False: one request at a time (the benchmark's baseline)
    listed: Listed | None = None  # the listings the page's read kept, taken once

    async def fetch(self, page: StagedRecord) -> dict[str, list[Row]]:
        page_id = int(page.raw["id"])
        slug = page.source_id
        kept = self.listed.take(slug, page.updated_at) if self.listed is not None else None
        if kept is None:
            listings = (
                _collect(self.client.iter_resources(page_id)),
                _collect(self.client.iter_comments(page_id)),
            )
            resources, comments = await self._all(listings)
        else:
            resources, comments = kept
        attachments = [r["item"] for r in resources if r.get("type") == "attachment"]
        grid_refs = [r["item"] for r in resources if r.get("type") == "grid"]
        grids, attachment_rows = await self._all([
            self._all([self._grid(slug, ref) for ref in grid_refs]),
            self._all([self._attachment_row(slug, page_id, a) for a in attachments]),
        ])  # fmt: skip
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
        return await gather_all(list(calls), self.concurrent)

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


def _page_id(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
