"""A page's grids (tables): list a page's grids, create one on a page, read, retitle or re-sort,
delete; add and remove columns, add and remove rows, write cells.

Every change inside a grid (title, sort, columns, rows, cells) names the revision it read
(``revision``); a stale one is 409 ``REVISION_CONFLICT``, and each change that lands moves the
revision on by one (deleting the grid names none). A cell's value must fit its column's type
(a number, a boolean, one of a select's options).
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.wiki.context import Call, WikiError, body_of, invalid, listing, ordered, required
from haul.sandbox.wiki.model import COLUMN_EXTRAS, Column, Grid, Row, wiki_time

COLUMN_TYPES = ("string", "number", "select", "staff", "date", "checkbox", "ticket", "ticket_field")


async def list_grids(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    items = ordered(
        request,
        page.grids,
        {"created_at": lambda g: (g.created_at, g.id), "title": lambda g: g.title},
    )
    return listing(
        request,
        items,
        lambda g: {"id": g.id, "title": g.title, "created_at": wiki_time(g.created_at)},
    )


async def create_grid(request: Request) -> Response:
    call = Call(request)
    body = await body_of(request)
    title = required(body, "title")
    where = required(body, "page", dict)
    page = (
        call.page(where["id"], need="editor")
        if where.get("id")
        else call.page_at(str(where.get("slug") or ""), need="editor")
    )
    grid = Grid(str(uuid.uuid4()), title, page.id, now_ms())
    page.grids.append(grid)
    call.wiki.grids[grid.id] = grid
    return JSONResponse(grid.json(page))


async def get_grid(request: Request) -> Response:
    call = Call(request)
    grid = call.grid(request.path_params["gid"])
    return JSONResponse(grid.json(call.page_of(grid)))


def _locked(grid: Grid, body: dict[str, Any]) -> None:
    revision = required(body, "revision", (str, int))
    if str(revision) != str(grid.revision):
        raise WikiError(409, "REVISION_CONFLICT", "The grid was changed: read it and try again",
                        f"revision {revision} is stale; the grid is at {grid.revision}")  # fmt: skip


async def _locked_write(request: Request) -> tuple[Grid, dict[str, Any]]:
    """The grid a write names (the caller an editor of its page) and the write's body, whose
    revision is the grid's own (409 ``REVISION_CONFLICT`` otherwise)."""
    grid = Call(request).grid(request.path_params["gid"], need="editor")
    body = await body_of(request)
    _locked(grid, body)
    return grid, body


def _advanced(grid: Grid, **extra: Any) -> JSONResponse:
    grid.revision += 1
    return JSONResponse({"revision": str(grid.revision), **extra})


async def update_grid(request: Request) -> Response:
    grid, body = await _locked_write(request)
    if "default_sort" in body:
        sort = body["default_sort"]
        valid = isinstance(sort, list) and all(
            isinstance(item, dict)
            and len(item) == 1
            and next(iter(item.values())) in ("asc", "desc")
            for item in sort
        )
        if not valid:
            raise invalid("default_sort", "type_error.enum", 'items are {"<slug>": "asc" | "desc"}')
        grid.default_sort = sort
    if body.get("title"):
        grid.title = str(body["title"])
    return _advanced(grid)


def _cell(column: Column, value: Any) -> Any:
    if value is None:
        return None
    if column.type == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise invalid(column.slug, "type_error.number", "value is not a valid number")
    if column.type == "checkbox" and not isinstance(value, bool):
        raise invalid(column.slug, "type_error.bool", "value is not a valid boolean")
    if column.type == "select" and column.select_options and value not in column.select_options:
        raise invalid(column.slug, "type_error.enum", f"one of {', '.join(column.select_options)}")
    return value


async def add_columns(request: Request) -> Response:
    grid, body = await _locked_write(request)
    new: list[Column] = []
    for item in required(body, "columns", list):
        for name in ("slug", "title", "type", "required"):
            if name not in item:
                raise invalid(f"columns.{name}", "value_error.missing", "field required")
        if item["type"] not in COLUMN_TYPES:
            raise invalid("columns.type", "type_error.enum", f"one of {', '.join(COLUMN_TYPES)}")
        if any(c.slug == item["slug"] for c in grid.columns + new):
            raise invalid("columns.slug", "value_error", f"column {item['slug']} exists")
        extra = {name: item[name] for name in COLUMN_EXTRAS if name in item}
        new.append(Column(item["slug"], item["title"], item["type"], bool(item["required"]),
                          item.get("select_options"), item.get("description") or "",
                          extra=extra))  # fmt: skip
    position = body.get("position")
    at = len(grid.columns) if position is None else int(position)
    grid.columns[at:at] = new
    return _advanced(grid)


async def remove_columns(request: Request) -> Response:
    grid, body = await _locked_write(request)
    slugs = set(required(body, "column_slugs", list))
    grid.columns = [c for c in grid.columns if c.slug not in slugs]
    for row in grid.rows:
        for slug in slugs:
            row.cells.pop(slug, None)
    return _advanced(grid)


async def add_rows(request: Request) -> Response:
    grid, body = await _locked_write(request)
    columns = {c.slug: c for c in grid.columns}
    rows = []
    for item in required(body, "rows", list):
        unknown = set(item) - set(columns)
        if unknown:
            raise invalid("rows", "value_error", f"no column {sorted(unknown)[0]}")
        cells = {slug: _cell(columns[slug], value) for slug, value in item.items()}
        rows.append(Row(uuid.uuid4().hex, cells))
    at = len(grid.rows)
    if body.get("after_row_id"):
        at = next((i + 1 for i, r in enumerate(grid.rows) if r.id == body["after_row_id"]), at)
    elif body.get("position") is not None:
        at = int(body["position"])
    grid.rows[at:at] = rows
    return _advanced(grid, results=[grid.row_json(row) for row in rows])


async def remove_rows(request: Request) -> Response:
    grid, body = await _locked_write(request)
    ids = set(required(body, "row_ids", list))
    if not ids:
        raise invalid("row_ids", "value_error.list.min_items", "at least one")
    grid.rows = [row for row in grid.rows if row.id not in ids]
    return _advanced(grid)


async def update_cells(request: Request) -> Response:
    grid, body = await _locked_write(request)
    columns = {c.slug: c for c in grid.columns}
    rows = {row.id: row for row in grid.rows}
    cells = required(body, "cells", list)
    for cell in cells:
        row, column = rows.get(cell.get("row_id")), columns.get(cell.get("column_slug"))
        if row is None or column is None:
            raise invalid("cells", "value_error", "no such row or column")
        row.cells[column.slug] = _cell(column, cell.get("value"))
    return _advanced(grid, cells=cells)


async def delete_grid(request: Request) -> Response:
    call = Call(request)
    grid = call.grid(request.path_params["gid"], need="editor")
    call.page_of(grid).grids.remove(grid)
    del call.wiki.grids[grid.id]
    return Response(status_code=204)
