"""The wiki's API (v1): pages, descendants, page access, attachments and upload sessions,
grids, comments.

Listings use the ``{results, next_cursor, prev_cursor}`` envelope and come out as async
generators of plain dicts. Creating a page, a comment, an upload session or a grid is not
idempotent: an uncertain outcome raises AmbiguousWriteError and is never repeated here (the
load engine reconciles it). Replacing a page's content, sending an upload part again and
updating cells are repeatable, so they are retried like reads.

Page access: a page read with ``fields=access_policy,access_lists`` carries its policy and
its entries (direct, inherited); a grant is not idempotent (a repeated one is 409
``ALREADY_EXISTS``, ConflictError), changing or revoking an entry is. The wiki API lists no
groups: `groups()` asks the sandbox's own ``/_sandbox/groups`` and answers None where the
service does not serve it.

Grid writes carry the grid's ``revision`` (an optimistic lock); a stale one is answered
409, which arrives here as ConflictError: read the grid and go on from its revision.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from haul.connectors.errors import AmbiguousWriteError, NotFoundError, UnexpectedReply
from haul.connectors.http import HttpCore, ServiceClient, Sink
from haul.connectors.pagination import NextCursorPaginator, paginate

Record = dict[str, Any]

PAGE_FIELDS = "content,attributes"
ACCESS_FIELDS = "access_policy,access_lists"
MAX_PAGE_SIZE = 100  # descendants, attachments, comments and grids all cap page_size here
MIN_PART_SIZE = 5 * 1024 * 1024  # every part but the last is 5 to 16 MiB
MAX_PART_SIZE = 16 * 1024 * 1024
DEFAULT_PART_SIZE = 8 * 1024 * 1024


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


def _part_sizes(total: int, part_size: int) -> list[int]:
    """The sizes of the parts a file of `total` bytes is sent in (one empty part for 0)."""
    if not MIN_PART_SIZE <= part_size <= MAX_PART_SIZE:
        raise ValueError(f"part_size must be {MIN_PART_SIZE} to {MAX_PART_SIZE} bytes")
    if total == 0:
        return [0]
    full, rest = divmod(total, part_size)
    return [part_size] * full + ([rest] if rest else [])


class WikiClient(ServiceClient):
    """One wiki org, over one HttpCore (closed with the client)."""

    service = "wiki"

    def __init__(self, core: HttpCore, *, part_size: int = DEFAULT_PART_SIZE) -> None:
        _part_sizes(1, part_size)  # refuse a bad part size now, not at the first upload
        super().__init__(core)
        self.part_size = part_size

    @classmethod
    def connect(cls, *, part_size: int = DEFAULT_PART_SIZE, **options: Any) -> WikiClient:
        """A client with its own core (`options`: ServiceClient.connect's), sending uploads
        in parts of `part_size` bytes."""
        client = super().connect(**options)
        _part_sizes(1, part_size)
        client.part_size = part_size
        return client

    async def me(self) -> Record:
        """The token's own user: the cheap auth probe (AuthError when rejected)."""
        return await self.core.get_json("/me")

    myself = me  # the name the runner's token check calls

    # -- pages -------------------------------------------------------------------------

    async def get_page(self, slug: str, *, fields: str | None = PAGE_FIELDS) -> Record:
        """A page by slug (NotFoundError when there is none); a redirect is not followed."""
        params: dict[str, Any] = {"slug": slug, "raise_on_redirect": "true"}
        if fields:
            params["fields"] = fields
        return await self.core.get_json("/pages", params=params)

    async def find_page(self, slug: str, *, fields: str | None = PAGE_FIELDS) -> Record | None:
        """A page by slug, or None when it does not exist."""
        try:
            return await self.get_page(slug, fields=fields)
        except NotFoundError:
            return None

    async def get_page_by_id(self, page_id: int, *, fields: str | None = PAGE_FIELDS) -> Record:
        """A page by numeric id; without fields the reply has only id, slug and title."""
        params = {"fields": fields} if fields else None
        return await self.core.get_json(f"/pages/{_segment(page_id)}", params=params)

    async def create_page(
        self, *, slug: str, title: str, content: str, access_policy: Record | None = None
    ) -> Record:
        """Create a page (not idempotent: a dropped reply is AmbiguousWriteError), with its
        access policy (``{access_type, all_staff_role?}``) when given, in the same write."""
        body: Record = {"slug": slug, "title": title, "content": content}
        if access_policy is not None:
            body["access_policy"] = access_policy
        return await self.core.post_json("/pages", json=body)

    async def replace_page(
        self,
        page_id: int,
        *,
        content: str,
        title: str | None = None,
        access_policy: Record | None = None,
    ) -> Record:
        """Replace a page's content (and title, and access policy): the whole body, so it is
        repeatable. The service takes a policy only with the content."""
        body: Record = {"content": content}
        if title is not None:
            body["title"] = title
        if access_policy is not None:
            body["access_policy"] = access_policy
        return await self.core.post_json(f"/pages/{_segment(page_id)}", json=body, repeatable=True)

    async def append_content(
        self, page_id: int, content: str, *, location: str = "bottom"
    ) -> Record:
        """Add content at the top or the bottom of a page (not idempotent)."""
        body = {"content": content, "body": {"location": location}}
        return await self.core.post_json(f"/pages/{_segment(page_id)}/append-content", json=body)

    async def delete_page(self, page_id: int, *, recursive: bool = False) -> str:
        """Delete a page (and its subtree when recursive); return the recovery token."""
        params = {"recursive": "true" if recursive else "false"}
        path = f"/pages/{_segment(page_id)}"
        reply = await self.core.delete(path, params=params)
        return str(reply["recovery_token"])

    async def move_page(self, source: str, target: str) -> int:
        """Move a page and its subtree to another slug (the ids stay; the old slugs answer 404)
        and wait for the operation; return how many pages moved. Access the page inherited
        is not copied: the target's tree above it decides, as for a page made there. Not
        idempotent: a lost reply is AmbiguousWriteError (read the page by id to settle it)."""
        body = {"operations": [{"source": source, "target": target}],
                "copy_inherited_access": False}  # fmt: skip
        reply = await self.core.post_json("/pages/move", json=body)
        operation = (reply.get("operation") or {}).get("id") if isinstance(reply, dict) else None
        if not operation:
            raise self._unexpected("POST", "/pages/move", "an operation reference", reply)
        status = await self.core.get_json(f"/operations/move/{_segment(operation)}")
        if status.get("status") != "success":
            raise self._unexpected("GET", "/operations/move", "status success", status)
        return int((status.get("result") or {}).get("page_count") or 0)

    def iter_descendants(
        self, slug: str, *, include_self: bool = True, page_size: int = MAX_PAGE_SIZE
    ) -> AsyncIterator[Record]:
        """Yield ``{id, slug}`` of a page and every page under it."""
        params = {"slug": slug, "include_self": _flag(include_self), "page_size": page_size}
        return self._listing("/pages/descendants", params)

    # -- page access -------------------------------------------------------------------

    async def get_access(self, page_id: int) -> Record:
        """A page's content, access policy and access lists (``direct`` with the owner's entry,
        ``inherited``), by numeric id."""
        return await self.get_page_by_id(page_id, fields=f"content,{ACCESS_FIELDS}")

    async def grant_access(
        self, page_id: int, holder: Record, *, role: str, inheritance: str = "inherited"
    ) -> Record:
        """Give a holder (``{"user": {"uid"}}`` or ``{"group": {"src", "id"}}``) a role on a
        page; the reply is the new entry. Not idempotent: a repeated grant is ConflictError."""
        body = {**holder, "role": role, "inheritance": inheritance}
        return await self.core.post_json(f"/pages/{_segment(page_id)}/access", json=body)

    async def change_access(
        self, page_id: int, access_id: str, *, role: str, inheritance: str
    ) -> Record:
        """Set one entry's role and inheritance (repeatable); refused rather than lock us out."""
        path = f"/pages/{_segment(page_id)}/access/{_segment(access_id)}"
        body = {"role": role, "inheritance": inheritance}
        return await self.core.post_json(
            path, json=body, params={"prevent_selflock": "true"}, repeatable=True
        )

    async def revoke_access(self, page_id: int, access_id: str) -> None:
        """Revoke one entry; an entry already gone is not an error (so it is repeatable)."""
        path = f"/pages/{_segment(page_id)}/access/{_segment(access_id)}"
        with suppress(NotFoundError):  # revoked already, by an attempt whose reply was lost
            await self.core.delete(path, params={"prevent_selflock": "true"}, repeatable=True)

    async def groups(self) -> list[Record] | None:
        """The org's groups (``{id, name, members: [{uid, cloud_uid, username}]}``) from the
        sandbox's ``/_sandbox/groups``; None where the service does not serve that route (the
        wiki API itself lists no groups)."""
        url = self.core.base_url.removesuffix("/v1") + "/_sandbox/groups"
        try:
            return [group async for group in self._listing(url, {})]
        except NotFoundError:
            return None

    # -- attachments and uploads -------------------------------------------------------

    def iter_attachments(
        self, page_id: int, *, page_size: int = MAX_PAGE_SIZE
    ) -> AsyncIterator[Record]:
        """Yield a page's attachments (metadata; ``size`` is a string), oldest first."""
        params = {"page_size": page_size, "order_by": "created_at", "order_direction": "asc"}
        return self._listing(f"/pages/{_segment(page_id)}/attachments", params)

    async def download_attachment(self, page_id: int, file_id: int, sink: Sink) -> int:
        """Stream an attachment's bytes into ``sink``; return how many were written.

        A failure once bytes were written raises TransientError: restart with a fresh sink.
        """
        path = f"/pages/{_segment(page_id)}/attachments/{_segment(file_id)}/download"
        return await self.core.download(path, sink)

    async def delete_attachment(self, page_id: int, file_id: int) -> None:
        """Delete an attachment (irreversible)."""
        await self.core.delete(f"/pages/{_segment(page_id)}/attachments/{_segment(file_id)}")

    async def upload(self, page_id: int, *, file_name: str, path: Path) -> Record:
        """Send a file through an upload session, part by part, and attach it to a page.

        Only one part is in memory at a time; a part that fails is sent again alone (a part
        number sent twice replaces the first). Opening a session is repeated like a read when
        its reply is lost: a session nobody attaches shows on no page. Attaching is not
        idempotent: its uncertain outcome raises AmbiguousWriteError.
        """
        with _opened(path) as (stream, size):
            session = await self.core.post_json(
                "/upload_sessions",
                json={"file_name": file_name, "file_size": size},
                repeatable=True,  # a lost session is never attached: opening another is safe
            )
            session_id = _session_id(session)
            for number, part in enumerate(_part_sizes(size, self.part_size), start=1):
                await self.core.request(
                    "PUT",
                    f"/upload_sessions/{_segment(session_id)}/upload_part",
                    params={"part_number": number},
                    content=stream.read(part),
                    repeatable=True,  # the same part number again replaces the part
                )
        await self._finish(session_id)
        attached = await self.attach(page_id, [session_id])
        if len(attached) != 1:
            raise self._unexpected(
                "POST", f"/pages/{page_id}/attachments", "one attachment", attached
            )
        return attached[0]

    async def _finish(self, session_id: str) -> None:
        """Finish a session; after a dropped reply, its status tells whether it finished."""
        path = f"/upload_sessions/{_segment(session_id)}/finish"
        try:
            await self.core.post_json(path)
        except AmbiguousWriteError:
            if (await self.get_upload_session(session_id)).get("status") != "finished":
                raise

    async def attach(self, page_id: int, session_ids: Iterable[str]) -> list[Record]:
        """Attach finished upload sessions to a page; the reply lists the new attachments."""
        path = f"/pages/{_segment(page_id)}/attachments"
        reply = await self.core.post_json(path, json={"upload_sessions": list(session_ids)})
        results = reply.get("results") if isinstance(reply, dict) else None
        if not isinstance(results, list):
            raise self._unexpected("POST", path, "{results: [...]}", reply)
        return results

    async def get_upload_session(self, session_id: str) -> Record:
        """An upload session's state (not_started, in_progress, finished, used, ...)."""
        return await self.core.get_json(f"/upload_sessions/{_segment(session_id)}")

    def iter_resources(
        self, page_id: int, *, page_size: int = MAX_PAGE_SIZE
    ) -> AsyncIterator[Record]:
        """Yield a page's attachments and grids as ``{type, item}``: an attachment with its id
        and size, a grid with its id and revision (what changed, without reading each)."""
        params = {"page_size": page_size, "order_by": "created_at", "order_direction": "asc"}
        return self._listing(f"/pages/{_segment(page_id)}/resources", params)

    # -- grids -------------------------------------------------------------------------

    def iter_grids(self, page_id: int, *, page_size: int = MAX_PAGE_SIZE) -> AsyncIterator[Record]:
        """Yield a page's grid refs ``{id, title, created_at}``."""
        params = {"page_size": page_size, "order_by": "created_at", "order_direction": "asc"}
        return self._listing(f"/pages/{_segment(page_id)}/grids", params)

    async def get_grid(self, grid_id: str) -> Record:
        """A grid with its structure, rows (positional cells) and current revision."""
        return await self.core.get_json(f"/grids/{_segment(grid_id)}")

    async def create_grid(self, page_id: int, title: str) -> Record:
        """Create an empty grid on a page (not idempotent)."""
        body = {"title": title, "page": {"id": page_id}}
        return await self.core.post_json("/grids", json=body)

    async def update_grid(
        self,
        grid_id: str,
        revision: str,
        *,
        title: str | None = None,
        default_sort: list[Record] | None = None,
    ) -> str:
        """Change a grid's title or default sort (written as ``[{slug: "asc"}]``)."""
        body: Record = {"revision": revision}
        if title is not None:
            body["title"] = title
        if default_sort is not None:
            body["default_sort"] = default_sort
        return _revision(
            await self.core.post_json(f"/grids/{_segment(grid_id)}", json=body, repeatable=True)
        )

    async def delete_grid(self, grid_id: str) -> None:
        """Delete a grid (irreversible, no recovery token)."""
        await self.core.delete(f"/grids/{_segment(grid_id)}")

    async def add_columns(self, grid_id: str, revision: str, columns: list[Record]) -> str:
        """Add columns (each with slug, title, type, required); return the new revision."""
        body = {"revision": revision, "columns": columns}
        return _revision(
            await self.core.post_json(f"/grids/{_segment(grid_id)}/columns", json=body)
        )

    async def remove_columns(self, grid_id: str, revision: str, slugs: list[str]) -> str:
        """Remove columns by slug (their cells go with them); return the new revision."""
        body = {"revision": revision, "column_slugs": slugs}
        path = f"/grids/{_segment(grid_id)}/columns"
        return _revision(await self.core.request_json("DELETE", path, json=body))

    async def add_rows(
        self, grid_id: str, revision: str, rows: list[Record]
    ) -> tuple[str, list[Record]]:
        """Append rows (column slug -> value) at the end; return the revision and new rows."""
        body = {"revision": revision, "rows": rows}
        reply = await self.core.post_json(f"/grids/{_segment(grid_id)}/rows", json=body)
        return _revision(reply), list(reply.get("results") or [])

    async def remove_rows(self, grid_id: str, revision: str, row_ids: list[str]) -> str:
        """Remove rows by id; return the new revision."""
        body = {"revision": revision, "row_ids": row_ids}
        path = f"/grids/{_segment(grid_id)}/rows"
        return _revision(await self.core.request_json("DELETE", path, json=body))

    async def update_cells(self, grid_id: str, revision: str, cells: list[Record]) -> str:
        """Set cells (``row_id``, ``column_slug``, ``value``); repeatable."""
        body = {"revision": revision, "cells": cells}
        path = f"/grids/{_segment(grid_id)}/cells"
        return _revision(await self.core.post_json(path, json=body, repeatable=True))

    # -- comments ----------------------------------------------------------------------

    def iter_comments(
        self, page_id: int, *, page_size: int = MAX_PAGE_SIZE
    ) -> AsyncIterator[Record]:
        """Yield a page's comments, oldest first (replies carry ``parent_id``)."""
        params = {"page_size": page_size, "order_by": "created_at", "order_direction": "asc"}
        return self._listing(f"/pages/{_segment(page_id)}/comments", params)

    async def create_comment(
        self, page_id: int, body: str, *, parent_id: int | None = None
    ) -> Record:
        """Add a comment, or a reply when ``parent_id`` is given (not idempotent)."""
        payload: Record = {"body": body}
        if parent_id is not None:
            payload["parent_id"] = parent_id
        return await self.core.post_json(f"/pages/{_segment(page_id)}/comments", json=payload)

    async def update_comment(self, page_id: int, comment_id: int, body: str) -> Record:
        """Replace a comment's text (repeatable: the whole text)."""
        path = f"/pages/{_segment(page_id)}/comments/{_segment(comment_id)}"
        return await self.core.post_json(path, json={"body": body}, repeatable=True)

    async def delete_comment(self, page_id: int, comment_id: int) -> None:
        """Delete a comment (irreversible)."""
        path = f"/pages/{_segment(page_id)}/comments/{_segment(comment_id)}"
        await self.core.delete(path)

    # -- helpers -----------------------------------------------------------------------

    async def _listing(self, path: str, params: dict[str, Any]) -> AsyncIterator[Record]:
        async for page in paginate(self.core, "GET", path, NextCursorPaginator(), params=params):
            for record in page:
                yield record

    def _unexpected(self, method: str, path: str, expected: str, body: Any) -> UnexpectedReply:
        return UnexpectedReply(
            f"wiki {method} {path}: expected {expected}, got {str(body)[:200]}",
            service="wiki",
            method=method,
            url=path,
        )


@contextmanager
def _opened(path: Path) -> Iterator[tuple[IO[bytes], int]]:
    """The file opened for reading, and its size."""
    with path.open("rb") as stream:
        yield stream, os.fstat(stream.fileno()).st_size


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _session_id(session: Any) -> str:
    if isinstance(session, dict) and session.get("session_id"):
        return str(session["session_id"])
    raise UnexpectedReply(
        f"wiki POST /upload_sessions: expected a session with session_id, got {str(session)[:200]}",
        service="wiki",
        method="POST",
        url="/upload_sessions",
    )


def _revision(reply: Any) -> str:
    if isinstance(reply, dict) and reply.get("revision") is not None:
        return str(reply["revision"])
    raise UnexpectedReply(
        f"wiki grid write: expected a reply with the next revision, got {str(reply)[:200]}",
        service="wiki",
        method="POST",
        url="/grids",
    )
