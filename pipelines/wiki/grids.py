"""Make a target grid hold what a source grid holds: columns by slug, rows by position.

`sync` is repeatable: it reads the target grid, takes the source's title (when the source has
one), adds the columns it lacks and removes those the source no longer has, corrects rows that
differ, appends the rows it lacks (in batches) and removes rows beyond the source's. After a
crash or a dropped reply it picks up where the target is, so nothing is written twice.
Every write carries the revision the last one returned; a stale one (someone else wrote)
reads the grid again and goes on from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from haul.connectors.errors import ConflictError
from haul.connectors.wiki import WikiClient
from haul.pipelines.specs import RecordFailure

log = structlog.get_logger(__name__)

ROWS_PER_WRITE = 100
MAX_CONFLICTS = 5
# the column keys a new column may carry (the read shape has more: id, width_units, ...)
COLUMN_KEYS = (
    "slug",
    "title",
    "type",
    "required",
    "description",
    "width",
    "color",
    "pinned",
    "multiple",
    "format",
    "ticket_field",
    "select_options",
    "mark_rows",
)

Cells = dict[str, Any]


def columns_of(grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A grid's columns, in their order."""
    return list((grid.get("structure") or {}).get("columns") or [])


def rows_of(grid: Mapping[str, Any]) -> list[Cells]:
    """Each row as column slug -> value (the wire shape is positional)."""
    slugs = [column["slug"] for column in columns_of(grid)]
    return [dict(zip(slugs, row.get("row") or [], strict=False)) for row in grid.get("rows") or []]


def new_column(column: Mapping[str, Any]) -> dict[str, Any]:
    """A source column as the body of a new one (slug and required are mandatory)."""
    body = {key: column[key] for key in COLUMN_KEYS if column.get(key) is not None}
    body.setdefault("required", False)
    return body


@dataclass
class GridSync:
    """One source grid into one target grid; `cell` rewrites a cell value (tracker keys)."""

    client: WikiClient
    cell: Callable[[dict[str, Any], Any], Any] = lambda column, value: value

    def wanted(self, source: Mapping[str, Any]) -> list[Cells]:
        columns = {column["slug"]: column for column in columns_of(source)}
        return [
            {slug: self.cell(columns[slug], value) for slug, value in row.items()}
            for row in rows_of(source)
        ]

    async def matches(self, source: Mapping[str, Any], target_id: str) -> bool:
        """Whether the target grid already holds the source's columns and rows."""
        target = await self.client.get_grid(target_id)
        return (
            _retitled(source, target) is None
            and not _missing_columns(source, target)
            and not _extra_columns(source, target)
            and rows_of(target) == self.wanted(source)
        )

    async def sync(self, source: Mapping[str, Any], target_id: str) -> bool:
        """Bring the target grid to the source's columns and rows (see the module docstring);
        whether anything was written."""
        for _ in range(MAX_CONFLICTS):
            try:
                return await self._sync_once(source, target_id)
            except ConflictError as exc:  # someone wrote meanwhile: read again, go on
                log.info("grid_revision_stale", grid=target_id, error=str(exc))
        raise RecordFailure(
            f"grid {target_id} kept changing under us ({MAX_CONFLICTS} stale revisions)"
        )

    async def _sync_once(self, source: Mapping[str, Any], target_id: str) -> bool:
        target = await self.client.get_grid(target_id)
        revision = first = str(target["revision"])
        if (title := _retitled(source, target)) is not None:
            revision = await self.client.update_grid(target_id, revision, title=title)
        missing, extra = _missing_columns(source, target), _extra_columns(source, target)
        if extra:
            revision = await self.client.remove_columns(target_id, revision, extra)
        if missing:
            revision = await self.client.add_columns(target_id, revision, missing)
        if missing or extra:
            target = await self.client.get_grid(target_id)
            revision = str(target["revision"])
        wanted, present = self.wanted(source), rows_of(target)
        row_ids = [str(row["id"]) for row in target.get("rows") or []]
        fixes = [
            {"row_id": row_ids[index], "column_slug": slug, "value": value}
            for index, (want, have) in enumerate(zip(wanted, present, strict=False))
            if want != have
            for slug, value in want.items()
            if have.get(slug) != value
        ]
        if fixes:
            revision = await self.client.update_cells(target_id, revision, fixes)
        if len(present) > len(wanted):
            revision = await self.client.remove_rows(target_id, revision, row_ids[len(wanted) :])
        for start in range(len(present), len(wanted), ROWS_PER_WRITE):
            batch = wanted[start : start + ROWS_PER_WRITE]
            revision, _ = await self.client.add_rows(target_id, revision, batch)
        return revision != first  # every write moves the revision


def _retitled(source: Mapping[str, Any], target: Mapping[str, Any]) -> str | None:
    """The source's title when the target's differs (None: the same, or the source has none)."""
    title = source.get("title")
    return str(title) if title and title != target.get("title") else None


def _extra_columns(source: Mapping[str, Any], target: Mapping[str, Any]) -> list[str]:
    """The slugs of the target's columns the source no longer has."""
    have = {column["slug"] for column in columns_of(source)}
    return [column["slug"] for column in columns_of(target) if column["slug"] not in have]


def _missing_columns(source: Mapping[str, Any], target: Mapping[str, Any]) -> list[dict[str, Any]]:
    have = {column["slug"] for column in columns_of(target)}
    return [new_column(column) for column in columns_of(source) if column["slug"] not in have]
