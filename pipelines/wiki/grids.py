"""Make a target grid hold what a source grid holds: columns by slug, rows by position.

`sync` is repeatable: it reads the target grid, takes the source's title (when the source has
one), adds the columns it lacks and removes those the source no longer has, corrects rows that
differ, appends the rows it lacks (in batches) and removes rows beyond the source's. After a
crash or a dropped reply it picks up where the target is, so nothing is written twice.
Every write carries the revision the last one returned; a stale one (someone else wrote)
reads the grid again and goes on from there.

A later run settles the rows three ways (`settle`, `pipelines.sync.three_way_items`): the base keeps
each source row's target row id and cells as written; a row edited only at the source is
edited, one edited (or added, or deleted) only in the target is the target's, one edited on
both sides is a conflict (`[sync] conflicts`); the title and the columns follow the source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from haul.connectors.errors import ConflictError
from haul.connectors.wiki import WikiClient
from haul.pipelines.specs import Fields, RecordFailure
from haul.pipelines.sync.three_way import ConflictRule
from haul.pipelines.sync.three_way_items import (
    Base,
    ItemRule,
    ItemSettling,
    SourceItem,
    appended_base,
    paired_base,
    settle_items,
)

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


def row_items(grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each row as {"id": its row id, "cells": column slug -> value}."""
    ids = [str(row.get("id")) for row in grid.get("rows") or []]
    return [
        {"id": row_id, "cells": cells} for row_id, cells in zip(ids, rows_of(grid), strict=True)
    ]


def row_rule(rule: ConflictRule) -> ItemRule:
    """A grid's rows: compared by their cells."""
    return ItemRule(lambda row: dict(row["cells"]), "row", rule, compared=dict)


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

    def source_rows(self, source: Mapping[str, Any]) -> list[SourceItem]:
        """The source's rows (by their source row id) as the target should hold them."""
        ids = [str(row.get("id")) for row in source.get("rows") or []]
        return list(zip(ids, self.wanted(source), strict=True))

    async def base(self, source: Mapping[str, Any], target_id: str) -> Fields:
        """The base of a grid the target holds as the source's rows (a first fill)."""
        listed = row_items(await self.client.get_grid(target_id))
        return {"rows": paired_base(self.source_rows(source), listed, row_rule("keep-target"))}

    async def settle(
        self, source: Mapping[str, Any], target_id: str, base: Base, rule: ConflictRule
    ) -> tuple[ItemSettling, Base, bool]:
        """The title and columns brought to the source's, then the rows three ways against
        `base`; what was settled, the new base (appended rows' ids read back), and whether
        the title or columns took a write."""
        for _ in range(MAX_CONFLICTS):
            try:
                return await self._settle_once(source, target_id, base, row_rule(rule))
            except ConflictError as exc:  # someone wrote meanwhile: read again, go on
                log.info("grid_revision_stale", grid=target_id, error=str(exc))
        raise RecordFailure(
            f"grid {target_id} kept changing under us ({MAX_CONFLICTS} stale revisions)"
        )

    async def _settle_once(
        self, source: Mapping[str, Any], target_id: str, base: Base, how: ItemRule
    ) -> tuple[ItemSettling, Base, bool]:
        target, revision, moved = await self._columns(source, target_id)
        settling = settle_items(self.source_rows(source), base, row_items(target), how)
        cells = [
            {"row_id": row_id, "column_slug": slug, "value": value}
            for row_id, changed in settling.edit
            for slug, value in changed.items()
        ]
        if cells:
            revision = await self.client.update_cells(target_id, revision, cells)
        if settling.remove:
            revision = await self.client.remove_rows(target_id, revision, settling.remove)
        added = [cells for _, cells in settling.add]
        for start in range(0, len(added), ROWS_PER_WRITE):
            revision, _ = await self.client.add_rows(
                target_id, revision, added[start : start + ROWS_PER_WRITE]
            )
        after = settling.base
        if settling.add:
            listed = row_items(await self.client.get_grid(target_id))
            after = appended_base(after, settling.add, listed, how)
        return settling, after, moved

    async def _columns(self, source: Mapping[str, Any], target_id: str) -> tuple[Any, str, bool]:
        """The target grid with the source's title and columns: it, its revision, and whether
        that took a write."""
        target = await self.client.get_grid(target_id)
        revision = first = str(target["revision"])
        if (title := _retitled(source, target)) is not None:
            revision = await self.client.update_grid(target_id, revision, title=title)
        missing, extra = _missing_columns(source, target), _extra_columns(source, target)
        if extra:
            revision = await self.client.remove_columns(target_id, revision, extra)
        if missing:
            revision = await self.client.add_columns(target_id, revision, missing)
        if revision != first:
            target = await self.client.get_grid(target_id)
        return target, str(target["revision"]), revision != first

    async def _sync_once(self, source: Mapping[str, Any], target_id: str) -> bool:
        target, revision, moved = await self._columns(source, target_id)
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
        return moved or revision != str(target["revision"])  # every write moves the revision


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
