"""The planning layer's extract: the projects, portfolios and goals of `[scope] entities`.

Each type is one stream (`_search`, paged), staged under its type with its primary parent and
its `updatedAt`; a drain per type stages what hangs off an entity whenever it changed (every
comment, checklist edit, file, link or permission change moves `updatedAt`):

    entity_comment     one per comment (the `_relative` cursor)
    entity_checklist   one per entity with a checklist: its items, in order (they load in one
                       request); once staged, it stays, emptied when the source empties it
    entity_attachment  one per file, its bytes in the blob store
    entity_link        one per link, as the entity lists it (both directions)
    entity_access      one per entity: its permissions (`acl`, `permissionSources`)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.downloads import download_checked, staged_or_fetched
from haul.pipelines.streams import Page, Row, child_rows
from haul.state.store import StagingStore

# what a search returns of each entity beyond its summary
FIELDS = (
    "summary,description,author,lead,entityStatus,start,end,teamUsers,clients,followers,"
    "tags,teamAccess,parentEntity,checklistItems"
)
SUB_RECORDS = (
    "entity_comment",
    "entity_checklist",
    "entity_attachment",
    "entity_link",
    "entity_access",
)


def primary_parent(raw: dict[str, Any]) -> str | None:
    """The id of the entity's primary parent (a portfolio, or a goal), if any."""
    parents = (raw.get("fields") or {}).get("parentEntity") or {}
    primary = parents.get("primary") if isinstance(parents, dict) else None
    return str(primary["id"]) if isinstance(primary, dict) and primary.get("id") else None


@dataclass
class EntityStream:
    """Every entity of one type, staged page by page (no checkpoint: a search is cheap)."""

    client: TrackerClient
    entity: str  # the type: project, portfolio or goal
    per_page: int = 100
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        rows = [
            {
                "source_id": str(found["id"]),
                "parent": primary_parent(found),
                "updated_at": found.get("updatedAt"),
                "raw": found,
            }
            async for found in self.client.search_entities(
                self.entity, fields=FIELDS, per_page=self.per_page
            )
        ]
        yield Page(rows)


@dataclass
class EntityDrain:
    """An entity's comments, checklist, files (bytes to the blob store), links, permissions."""

    client: TrackerClient
    store: StagingStore
    parent: str  # the type
    attachment_bytes: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    async def fetch(self, entity: Any) -> dict[str, list[Row]]:
        kind, entity_id = self.parent, entity.source_id
        comments = [c async for c in self.client.iter_entity_comments(kind, entity_id)]
        files = await self.client.list_entity_attachments(kind, entity_id)
        links = await self.client.list_entity_links(kind, entity_id)
        permissions = await self.client.get_entity_permissions(kind, entity_id)
        blobs, problems = await self._fetch_blobs(entity_id, files)
        items = (entity.raw.get("fields") or {}).get("checklistItems") or []
        # a checklist emptied at the source is staged empty, so the load empties the target's
        had = self.store.get_record("entity_checklist", f"{entity_id}/checklist") is not None
        return {
            "entity_comment": child_rows(entity_id, comments),
            "entity_checklist": _one(
                entity_id, "checklist", {"items": items} if items or had else None
            ),
            "entity_attachment": child_rows(entity_id, files, blobs, problems),
            "entity_link": child_rows(entity_id, links),
            "entity_access": _one(entity_id, "access", permissions),
        }

    async def _fetch_blobs(
        self, entity_id: str, files: list[dict[str, Any]]
    ) -> tuple[dict[str, str], dict[str, str]]:
        blobs: dict[str, str] = {}
        problems: dict[str, str] = {}
        for found in files:
            name = str(found["id"])
            blob, problem = await staged_or_fetched(
                self.store,
                "entity_attachment",
                f"{entity_id}/{name}",
                found.get("size"),
                partial(self._download, found),
            )
            if blob is not None:
                blobs[name] = blob
            if problem is not None:
                problems[name] = problem
        return blobs, problems

    async def _download(self, found: dict[str, Any]) -> str:
        expected = found.get("size")
        sha256, size = await download_checked(
            self.store.blobs,
            lambda sink: self.client.download_entity_file(str(found["id"]), found["name"], sink),
            name=str(found["name"]),
            expected=int(expected) if expected is not None else None,
        )
        self.attachment_bytes += size
        return sha256


def entity_extract(
    client: TrackerClient, store: StagingStore, kinds: Iterable[str]
) -> tuple[list[EntityStream], list[EntityDrain]]:
    """The streams and drains of the entity types in scope."""
    chosen = list(kinds)
    streams = [EntityStream(client, kind) for kind in chosen]
    return streams, [EntityDrain(client, store, kind) for kind in chosen]


def _one(entity_id: str, what: str, raw: dict[str, Any] | None) -> list[Row]:
    if raw is None:
        return []
    return [{"source_id": f"{entity_id}/{what}", "parent": entity_id, "raw": raw}]
