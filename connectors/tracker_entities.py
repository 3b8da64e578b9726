"""The tracker's entities (projects, portfolios, goals): the reads an extract needs and the
writes a load makes; `TrackerClient` has them all.

An entity is addressed by its type and id (``/entities/{type}/{id}``); ``_import`` keeps its
``createdAt``/``createdBy``. Its sub-records have no import: a comment, a checklist, a file
or a link is made as the migrating admin. Creations are not idempotent (an uncertain outcome
raises AmbiguousWriteError, never repeated here); edits of fields and permissions are, and are
retried after a lost reply like a read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from haul.connectors.http import ServiceClient, Sink
from haul.connectors.pagination import FromCursorPaginator, PageNumberPaginator, paginate

Record = dict[str, Any]


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


def _entity(kind: str, entity_id: str) -> str:
    return f"/entities/{_segment(kind)}/{_segment(entity_id)}"


# what a write that takes them sends so that no one is notified: the spec lets the entity
# family's writes, moving an issue, creating one and bulk changes say so; the tracker's other
# writes take no such option (docs/how-to/nightly-sync.md, "Quiet writes")
QUIET = {"notify": "false", "notifyAuthor": "false"}


class EntityCalls(ServiceClient):
    """The entities' endpoints (mixed into `TrackerClient`)."""

    # -- reads ---------------------------------------------------------------------------

    async def search_entities(
        self,
        kind: str,
        *,
        fields: str | None = None,
        per_page: int = 100,
        body: Record | None = None,
    ) -> AsyncIterator[Record]:
        """Yield every entity of `kind` the token may read, by page (``fields`` adds blocks;
        ``body`` narrows: ``filter``, ``rootOnly``, ``input``)."""
        params = {"fields": fields} if fields else None
        pages = paginate(
            self.core,
            "POST",
            f"/entities/{_segment(kind)}/_search",
            PageNumberPaginator(per_page=per_page, records_key="values"),
            params=params,
            json=body or {},
        )
        async for page in pages:
            for entity in page:
                yield entity

    async def get_entity(self, kind: str, entity_id: str, *, fields: str | None = None) -> Record:
        """One entity; NotFoundError when it does not exist."""
        params = {"fields": fields} if fields else None
        return await self.core.get_json(_entity(kind, entity_id), params=params)

    async def iter_entity_comments(self, kind: str, entity_id: str) -> AsyncIterator[Record]:
        """Yield an entity's comments, oldest first (the ``_relative`` cursor)."""
        pages = paginate(
            self.core,
            "GET",
            f"{_entity(kind, entity_id)}/comments/_relative",
            FromCursorPaginator(records_key="comments"),
        )
        async for page in pages:
            for comment in page:
                yield comment

    async def list_entity_attachments(self, kind: str, entity_id: str) -> list[Record]:
        """An entity's files (name, size, mimetype, createdBy, createdAt)."""
        return await self._list(f"{_entity(kind, entity_id)}/attachments", "attachments")

    async def list_entity_links(self, kind: str, entity_id: str) -> list[Record]:
        """An entity's links, both directions, each as seen from this entity."""
        return await self._list(f"{_entity(kind, entity_id)}/links", "links")

    async def get_entity_permissions(self, kind: str, entity_id: str) -> Record:
        """``{acl: {READ|WRITE|GRANT: {users, groups, roles}}, permissionSources}``."""
        return await self.core.get_json(f"{_entity(kind, entity_id)}/permissions")

    async def download_entity_file(self, file_id: str, filename: str, sink: Sink) -> int:
        """Stream a file's bytes into ``sink``; return how many were written."""
        return await self.core.download(
            f"/attachments/{_segment(file_id)}/{_segment(filename)}", sink
        )

    async def list_groups(self) -> list[Record]:
        """The org's groups (``id``, ``name``)."""
        return await self._list("/groups", "groups")

    # -- writes --------------------------------------------------------------------------

    async def import_entity(self, kind: str, body: Record) -> Record:
        """Create an entity with its original ``createdAt``/``createdBy`` (201)."""
        return await self.core.post_json(f"/entities/{_segment(kind)}/_import", json=body)

    async def update_entity(self, kind: str, entity_id: str, body: Record) -> Record:
        """PATCH ``{fields: {...}}``: only the fields sent change (repeatable)."""
        return await self.core.request_json(
            "PATCH", _entity(kind, entity_id), json=body, params=QUIET, repeatable=True
        )

    async def edit_entity_permissions(self, kind: str, entity_id: str, body: Record) -> Record:
        """PATCH ``{grant, revoke}`` of the entity's permissions (repeatable: a grant given
        twice is one grant)."""
        path = f"{_entity(kind, entity_id)}/permissions"
        return await self.core.request_json("PATCH", path, json=body, repeatable=True)

    async def create_entity_comment(self, kind: str, entity_id: str, body: Record) -> Record:
        """POST a comment (``text``) as the token's user (201)."""
        path = f"{_entity(kind, entity_id)}/comments"
        return await self.core.post_json(path, json=body, params=QUIET)

    async def update_entity_comment(
        self, kind: str, entity_id: str, comment_id: str, body: Record
    ) -> Record:
        """PATCH a comment's ``text`` (repeatable: the same text twice is one edit)."""
        path = f"{_entity(kind, entity_id)}/comments/{_segment(comment_id)}"
        return await self.core.request_json("PATCH", path, json=body, params=QUIET, repeatable=True)

    async def clear_entity_checklist(self, kind: str, entity_id: str) -> None:
        """DELETE the whole checklist (repeatable: a cleared checklist stays cleared)."""
        path = f"{_entity(kind, entity_id)}/checklistItems"
        await self.core.delete(path, params=QUIET, repeatable=True)

    async def add_entity_checklist_items(
        self, kind: str, entity_id: str, items: list[Record]
    ) -> Record:
        """Append checklist items; the reply is the entity with its ``checklistItems``."""
        path = f"{_entity(kind, entity_id)}/checklistItems"
        return await self.core.post_json(path, json=items, params=QUIET)

    async def create_entity_link(self, kind: str, entity_id: str, body: Record) -> Record:
        """POST ``{relationship, entity | issue}`` (201, the link as listed)."""
        return await self.core.post_json(f"{_entity(kind, entity_id)}/links", json=body)

    async def upload_temporary_file(self, filename: str, source: IO[bytes] | Path) -> Record:
        """A temporary file (its ``id`` attaches it); streamed from disk. Repeating it after a
        lost reply leaves at most an unattached temporary file."""
        if isinstance(source, Path):
            with source.open("rb") as stream:
                return await self._upload_temporary(filename, stream)
        return await self._upload_temporary(filename, source)

    async def _upload_temporary(self, filename: str, stream: IO[bytes]) -> Record:
        return await self.core.request_json(
            "POST",
            "/attachments",
            params={"filename": filename},
            files={"file": (filename, stream)},
            repeatable=True,
        )

    async def attach_entity_file(self, kind: str, entity_id: str, file_id: str) -> Record:
        """Attach a temporary file to the entity (the reply is the entity)."""
        path = f"{_entity(kind, entity_id)}/attachments/{_segment(file_id)}"
        return await self.core.post_json(path, params=QUIET | {"expand": "attachments"})
