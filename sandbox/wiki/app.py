"""The sandbox wiki as one ASGI app rooted at ``/v1``, behind the shared fault middleware.

Auth as the tracker's (``OAuth``/``Bearer`` token, ``X-Org-Id`` or ``X-Cloud-Org-Id``; 401
otherwise). Errors as ``{"error_code", "message", "debug_message"}``; validation errors name
the field and the pydantic-style type (``value_error.missing``, ``type_error.enum``) with 400.
Choices where the notes are silent: a slug already taken is 409 ``ALREADY_EXISTS``; a grid
write with a stale revision is 409 ``REVISION_CONFLICT``; restore is
``POST /pages/recovery_tokens/{token}/recover`` (409 ``ALREADY_EXISTS`` when a slug of the
deleted pages was taken meanwhile); cursors are opaque offsets. Moving a page and editing a
comment: :mod:`sandbox.wiki.routes_changes`.

Page access (:mod:`sandbox.wiki.access`, routes in :mod:`sandbox.wiki.routes_access`): a page
the caller may not read is 403 ``FORBIDDEN`` for it and everything on it, and left out of
descendants and search (:mod:`sandbox.wiki.search`); writes need ``editor``, a policy change
``extra_editor``. Read a page's access with ``fields=access_policy,access_lists``. Sandbox
only, at the port's root: ``GET /_sandbox/groups`` and ``GET /_sandbox/roles?slug=``.
"""

from __future__ import annotations

import mimetypes
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from haul.sandbox.faults import FaultMiddleware, FaultPlan, RequestStats
from haul.sandbox.timefmt import now_ms
from haul.sandbox.wiki import routes_access, routes_changes, search
from haul.sandbox.wiki.context import (
    Call,
    WikiError,
    body_of,
    invalid,
    listing,
    not_found,
    ordered,
    required,
)
from haul.sandbox.wiki.model import (
    COLUMN_EXTRAS,
    PART_MAX,
    PART_MIN,
    Attachment,
    Column,
    Comment,
    Grid,
    Page,
    Row,
    UploadSession,
    user_json,
    wiki_time,
)
from haul.sandbox.wiki.seed import build_wiki
from haul.sandbox.world import World

ROOT = "/v1"
# the append reply names every optional block of a page, null (as the live reply does)
APPEND_NULLS = dict.fromkeys(
    ("access_lists", "access_policy", "actuality", "attributes", "breadcrumbs", "owner", "redirect")
)
PAGE_FIELDS = {"content", "attributes", "breadcrumbs", "redirect", "actuality", "owner",
               "access_policy", "access_lists"}  # fmt: skip
COLUMN_TYPES = ("string", "number", "select", "staff", "date", "checkbox", "ticket", "ticket_field")


# -- pages --------------------------------------------------------------------------------


def page_json(call: Call, page: Page, fields: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": page.id,
        "slug": page.slug,
        "title": page.title,
        "page_type": "page",
    }
    wanted = {f.strip() for f in (fields or "").split(",") if f.strip()}
    unknown = wanted - PAGE_FIELDS
    if unknown:
        raise invalid("fields", "type_error.enum", f"unknown field {sorted(unknown)[0]!r}")
    if wanted:  # the live replies carry the revision (and so the author) with any fields
        body["active_revision"] = {
            "author": user_json(page.author),
            "created_at": wiki_time(page.modified_at),
            "id": page.id,
            "page_type": "wysiwyg",
            "publication": None,
            "revision_draft": None,
        }
    if "content" in wanted:
        body["content"] = page.content
    if "attributes" in wanted:
        body["attributes"] = {
            "created_at": wiki_time(page.created_at),
            "modified_at": wiki_time(page.modified_at),
            "lang": "en",
            "is_readonly": False,
            "comments_count": len(page.comments),
            "comments_enabled": True,
            "keywords": [],
            "is_collaborative": False,
            "is_draft": False,
        }
    if "breadcrumbs" in wanted:
        parts = page.slug.split("/")
        body["breadcrumbs"] = [
            {
                "id": (call.wiki.by_slug.get("/".join(parts[: i + 1])) or 0),
                "title": parts[i],
                "slug": "/".join(parts[: i + 1]),
                "page_exists": "/".join(parts[: i + 1]) in call.wiki.by_slug,
            }
            for i in range(len(parts))
        ]
    if "redirect" in wanted:
        body["redirect"] = None
    if "actuality" in wanted:
        body["actuality"] = {"status": "actual"}
    if "owner" in wanted:
        body["owner"] = user_json(page.author)
    if "access_policy" in wanted:
        body["access_policy"] = routes_access.policy_json(call.wiki, page)
    if "access_lists" in wanted:
        body["access_lists"] = routes_access.access_lists_json(call.wiki, page)
    return body


async def get_page(request: Request) -> Response:
    call = Call(request)
    slug = request.query_params.get("slug")
    if not slug:
        raise invalid("slug", "value_error.missing", "field required")
    page = call.page_at(slug)
    return JSONResponse(page_json(call, page, request.query_params.get("fields")))


async def get_page_by_id(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    return JSONResponse(page_json(call, page, request.query_params.get("fields")))


def _slug(value: str) -> str:
    slug = value.strip().strip("/").lower()
    if not slug or "//" in slug or any(c.isspace() for c in slug):
        raise invalid("slug", "value_error.slug", f"{value!r} is not a valid slug")
    return slug


async def create_page(request: Request) -> Response:
    call = Call(request)
    body = await body_of(request)
    slug = _slug(required(body, "slug"))
    title = required(body, "title")
    if not 1 <= len(title) <= 255:
        raise invalid("title", "value_error.any_str.max_length", "1 to 255 characters")
    content = required(body, "content")
    if slug in call.wiki.by_slug:
        raise WikiError(409, "ALREADY_EXISTS", f"Page {slug} already exists")
    now = now_ms()
    page = Page(call.wiki.new_id(), slug, title, content, call.user, now, now)
    parent = call.wiki.parent_of(page)
    if parent is not None:
        call.allowed(parent, "editor")
    if body.get("access_policy") is not None:
        page.access.policy = routes_access.policy_from(body["access_policy"])
    call.wiki.add_page(page)
    reply = page_json(call, page, request.query_params.get("fields") or "content,breadcrumbs")
    return JSONResponse({**reply, "active_revision": None})


async def update_page(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    body = await body_of(request)
    page.content = required(body, "content")
    if body.get("access_policy") is not None:
        policy = routes_access.policy_from(body["access_policy"])
        call.allowed(page, "extra_editor")
        page.access.policy = policy
    if body.get("title"):
        page.title = str(body["title"])
    page.modified_at = now_ms()
    reply = page_json(call, page, request.query_params.get("fields") or "content")
    return JSONResponse({**reply, "active_revision": None})


async def patch_page(request: Request) -> Response:
    raise WikiError(405, "METHOD_NOT_ALLOWED", "Use POST to update a page")


async def append_content(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    body = await body_of(request)
    content = required(body, "content")
    placements = [name for name in ("body", "section", "anchor") if body.get(name)]
    if len(placements) != 1:
        raise invalid("body", "value_error", "exactly one of body, section, anchor is required")
    top = placements[0] == "body" and (body["body"] or {}).get("location") == "top"
    page.content = content + "\n" + page.content if top else page.content + "\n" + content
    page.modified_at = now_ms()
    return JSONResponse(
        {**APPEND_NULLS, **page_json(call, page, "content"), "active_revision": None}
    )


async def delete_page(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    recursive = request.query_params.get("recursive", "false").lower() == "true"
    gone = call.wiki.subtree(page) if recursive else [page]
    for each in gone:
        call.allowed(each, "editor")
    token = str(uuid.uuid4())
    for each in gone:
        call.wiki.pages.pop(each.id, None)
        call.wiki.by_slug.pop(each.slug, None)
        for grid in each.grids:
            call.wiki.grids.pop(grid.id, None)
    call.wiki.deleted[token] = gone
    return JSONResponse({"recovery_token": token})


async def recover(request: Request) -> Response:
    call = Call(request)
    token = request.path_params["token"]
    gone = call.wiki.deleted.get(token)
    if gone is None:
        raise not_found("recovery token")
    taken = [page.slug for page in gone if page.slug in call.wiki.by_slug]
    if taken:
        raise WikiError(409, "ALREADY_EXISTS", f"Page {taken[0]} exists again: move it first")
    del call.wiki.deleted[token]
    for page in gone:
        call.wiki.add_page(page)
        for grid in page.grids:
            call.wiki.grids[grid.id] = grid
    return JSONResponse({"id": gone[0].id, "slug": gone[0].slug, "pages_count": len(gone)})


def _refs(request: Request, root: Page, call: Call) -> Response:
    include_self = request.query_params.get("include_self", "false").lower() == "true"
    pages = [p for p in call.wiki.subtree(root) if include_self or p.id != root.id]
    pages = call.readable(pages)
    return listing(request, pages, lambda p: {"id": p.id, "slug": p.slug})


async def descendants_by_slug(request: Request) -> Response:
    call = Call(request)
    root = call.page_at(request.query_params.get("slug") or "")
    return _refs(request, root, call)


async def descendants_by_id(request: Request) -> Response:
    call = Call(request)
    return _refs(request, call.page(request.path_params["idx"]), call)


# -- attachments and upload sessions -------------------------------------------------------


def _attachment(call: Call, page: Page, file_id: Any) -> Attachment:
    for attachment in page.attachments:
        if str(attachment.id) == str(file_id):
            return attachment
    raise not_found("attachment")


async def list_attachments(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    items = ordered(
        request,
        page.attachments,
        {
            "created_at": lambda a: (a.created_at, a.id),
            "name": lambda a: a.name,
            "size": lambda a: len(a.data),
        },
    )
    return listing(request, items, lambda a: a.json(page))


async def get_attachment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    return JSONResponse(_attachment(call, page, request.path_params["file_id"]).json(page))


async def download_attachment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    attachment = _attachment(call, page, request.path_params["file_id"])
    return Response(attachment.data, media_type=attachment.mimetype)


async def delete_attachment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    attachment = _attachment(call, page, request.path_params["file_id"])
    page.attachments.remove(attachment)
    return Response(status_code=204)


def _session(call: Call, session_id: str) -> UploadSession:
    session = call.wiki.sessions.get(session_id)
    if session is None:
        raise not_found("upload session")
    return session


async def create_session(request: Request) -> Response:
    call = Call(request)
    body = await body_of(request)
    name = required(body, "file_name")
    size = required(body, "file_size", int)
    if size < 0:
        raise invalid("file_size", "value_error.number.not_ge", "must be 0 or more")
    session = UploadSession(str(uuid.uuid4()), name, size, call.user, now_ms())
    call.wiki.sessions[session.id] = session
    return JSONResponse(session.json())


async def upload_part(request: Request) -> Response:
    call = Call(request)
    session = _session(call, request.path_params["sid"])
    if session.status not in ("not_started", "in_progress"):
        raise invalid("session", "value_error", f"the session is {session.status}")
    try:
        number = int(request.query_params.get("part_number", ""))
    except ValueError:
        raise invalid("part_number", "value_error.missing", "field required") from None
    if number < 1:
        raise invalid("part_number", "value_error.number.not_ge", "parts count from 1")
    data = await request.body()
    if len(data) > PART_MAX:
        raise invalid("part", "value_error", f"a part is at most {PART_MAX} bytes")
    session.parts[number] = data
    session.status = "in_progress"
    return JSONResponse(session.json())


async def finish_session(request: Request) -> Response:
    call = Call(request)
    session = _session(call, request.path_params["sid"])
    if session.status == "finished":
        return JSONResponse(session.json())
    numbers = sorted(session.parts)
    if numbers != list(range(1, len(numbers) + 1)) or (not numbers and session.file_size):
        raise invalid("parts", "value_error", "a part is missing")
    if any(len(session.parts[n]) < PART_MIN for n in numbers[:-1]):
        raise invalid(
            "parts", "value_error", f"every part but the last is at least {PART_MIN} bytes"
        )
    total = sum(len(part) for part in session.parts.values())
    if total != session.file_size:
        raise invalid(
            "file_size", "value_error", f"the parts hold {total} bytes, not {session.file_size}"
        )
    session.status, session.finished_at = "finished", now_ms()
    return JSONResponse(session.json())


async def get_session(request: Request) -> Response:
    return JSONResponse(_session(Call(request), request.path_params["sid"]).json())


async def abort_session(request: Request) -> Response:
    call = Call(request)
    session = _session(call, request.path_params["sid"])
    session.status, session.parts = "aborted", {}
    return JSONResponse(session.json())


async def attach(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    body = await body_of(request)
    ids = required(body, "upload_sessions", list)
    sessions = [_session(call, str(sid)) for sid in ids]
    for session in sessions:
        if session.status != "finished":
            raise invalid(
                "upload_sessions", "value_error", f"session {session.id} is {session.status}"
            )
    attached = []
    for session in sessions:
        data = b"".join(session.parts[n] for n in sorted(session.parts))
        mimetype = mimetypes.guess_type(session.file_name)[0] or "application/octet-stream"
        attachment = Attachment(call.wiki.new_id(), session.file_name, data, mimetype,
                                call.user, now_ms())  # fmt: skip
        page.attachments.append(attachment)
        session.status, session.parts = "used", {}
        attached.append(attachment.json(page))
    return JSONResponse({"results": attached})


async def list_resources(request: Request) -> Response:
    """A page's attachments and grids as `{type, item}`, filtered by `types` and title `q`:
    an attachment with its size, a grid with its revision (what a sync needs to tell which
    changed without reading each)."""
    call = Call(request)
    page = call.page(request.path_params["idx"])
    types = {t for t in (request.query_params.get("types") or "attachment,grid").split(",") if t}
    unknown = types - {"attachment", "grid"}
    if unknown:
        raise invalid("types", "type_error.enum", "attachment or grid")
    query = (request.query_params.get("q") or "").lower()
    items: list[tuple[str, Any]] = []
    if "attachment" in types:
        items += [("attachment", a) for a in page.attachments if query in a.name.lower()]
    if "grid" in types:
        items += [("grid", g) for g in page.grids if query in g.title.lower()]
    order = request.query_params.get("order_by") or "name_title"
    if order not in ("name_title", "created_at"):
        raise invalid("order_by", "type_error.enum", "name_title or created_at")

    def key(pair: tuple[str, Any]) -> Any:
        kind, item = pair
        return (
            item.created_at
            if order == "created_at"
            else (item.name if kind == "attachment" else item.title)
        )

    items.sort(key=key, reverse=request.query_params.get("order_direction") == "desc")

    def render(pair: tuple[str, Any]) -> dict[str, Any]:
        kind, item = pair
        if kind == "attachment":
            return {"type": kind, "item": item.json(page)}
        # the revision tells a changed grid without reading it (the sandbox's choice)
        ref = {"id": item.id, "title": item.title, "created_at": wiki_time(item.created_at)}
        return {"type": kind, "item": {**ref, "revision": str(item.revision)}}

    return listing(request, items, render)


# -- grids ----------------------------------------------------------------------------------


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


def _advanced(grid: Grid, **extra: Any) -> JSONResponse:
    grid.revision += 1
    return JSONResponse({"revision": str(grid.revision), **extra})


async def update_grid(request: Request) -> Response:
    call = Call(request)
    grid = call.grid(request.path_params["gid"], need="editor")
    body = await body_of(request)
    _locked(grid, body)
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
    call = Call(request)
    grid = call.grid(request.path_params["gid"], need="editor")
    body = await body_of(request)
    _locked(grid, body)
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
    call = Call(request)
    grid = call.grid(request.path_params["gid"], need="editor")
    body = await body_of(request)
    _locked(grid, body)
    slugs = set(required(body, "column_slugs", list))
    grid.columns = [c for c in grid.columns if c.slug not in slugs]
    for row in grid.rows:
        for slug in slugs:
            row.cells.pop(slug, None)
    return _advanced(grid)


async def add_rows(request: Request) -> Response:
    call = Call(request)
    grid = call.grid(request.path_params["gid"], need="editor")
    body = await body_of(request)
    _locked(grid, body)
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
    call = Call(request)
    grid = call.grid(request.path_params["gid"], need="editor")
    body = await body_of(request)
    _locked(grid, body)
    ids = set(required(body, "row_ids", list))
    if not ids:
        raise invalid("row_ids", "value_error.list.min_items", "at least one")
    grid.rows = [row for row in grid.rows if row.id not in ids]
    return _advanced(grid)


async def update_cells(request: Request) -> Response:
    call = Call(request)
    grid = call.grid(request.path_params["gid"], need="editor")
    body = await body_of(request)
    _locked(grid, body)
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


# -- comments ---------------------------------------------------------------------------------


async def list_comments(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    items = ordered(request, page.comments, {"created_at": lambda c: (c.created_at, c.id)})
    return listing(request, items, lambda c: {**c.json(), "thread_info": None})


async def create_comment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    body = await body_of(request)
    text = required(body, "body")
    parent = body.get("parent_id")
    if parent is not None and not any(c.id == parent for c in page.comments):
        raise invalid("parent_id", "value_error", f"no comment {parent} on this page")
    comment = Comment(
        call.wiki.new_id(), text, call.user, now_ms(), parent, body.get("inline_text")
    )
    page.comments.append(comment)
    return JSONResponse(comment.json())


async def delete_comment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    cid = request.path_params["cid"]
    before = len(page.comments)
    page.comments = [c for c in page.comments if str(c.id) != cid]
    if len(page.comments) == before:
        raise not_found("comment")
    return JSONResponse({"comments_count": len(page.comments)})


async def comment_thread(request: Request) -> Response:
    call = Call(request)
    call.page(request.path_params["idx"])
    return JSONResponse({"results": [], "next_cursor": None, "prev_cursor": None})


async def me(request: Request) -> Response:
    call = Call(request)
    return JSONResponse(
        {
            "identity": {"uid": str(call.user.uid), "cloud_uid": call.user.cloud_uid},
            "username": call.user.login,
            "home_cluster": "sandbox",
            "org": {"dir_id": call.org.id, "collab_id": f"collab-{call.org.id}"},
        }
    )


API = (
    ("GET", "/me", me),
    ("GET", "/pages", get_page),
    ("POST", "/pages", create_page),
    ("GET", "/pages/descendants", descendants_by_slug),
    ("POST", "/pages/recovery_tokens/{token}/recover", recover),
    ("GET", "/pages/{idx:int}", get_page_by_id),
    ("POST", "/pages/{idx:int}", update_page),
    ("PATCH", "/pages/{idx:int}", patch_page),
    ("DELETE", "/pages/{idx:int}", delete_page),
    ("POST", "/pages/{idx:int}/append-content", append_content),
    ("GET", "/pages/{idx:int}/descendants", descendants_by_id),
    ("GET", "/pages/{idx:int}/attachments", list_attachments),
    ("POST", "/pages/{idx:int}/attachments", attach),
    ("GET", "/pages/{idx:int}/attachments/{file_id}", get_attachment),
    ("DELETE", "/pages/{idx:int}/attachments/{file_id}", delete_attachment),
    ("GET", "/pages/{idx:int}/attachments/{file_id}/download", download_attachment),
    ("GET", "/pages/{idx:int}/grids", list_grids),
    ("GET", "/pages/{idx:int}/resources", list_resources),
    ("GET", "/pages/{idx:int}/comments", list_comments),
    ("POST", "/pages/{idx:int}/comments", create_comment),
    ("DELETE", "/pages/{idx:int}/comments/{cid}", delete_comment),
    ("GET", "/pages/{idx:int}/comments/{cid}/thread", comment_thread),
    ("POST", "/upload_sessions", create_session),
    ("GET", "/upload_sessions/{sid}", get_session),
    ("PUT", "/upload_sessions/{sid}/upload_part", upload_part),
    ("POST", "/upload_sessions/{sid}/finish", finish_session),
    ("POST", "/upload_sessions/{sid}/abort", abort_session),
    ("POST", "/grids", create_grid),
    ("GET", "/grids/{gid}", get_grid),
    ("POST", "/grids/{gid}", update_grid),
    ("DELETE", "/grids/{gid}", delete_grid),
    ("POST", "/grids/{gid}/columns", add_columns),
    ("DELETE", "/grids/{gid}/columns", remove_columns),
    ("POST", "/grids/{gid}/rows", add_rows),
    ("DELETE", "/grids/{gid}/rows", remove_rows),
    ("POST", "/grids/{gid}/cells", update_cells),
)


async def _wiki_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, WikiError)
    return error.response()


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(error.status_code, "ERROR")
    return WikiError(error.status_code, code, str(error.detail)).response()


async def _gone(request: Request, error: Exception) -> Response:
    return WikiError(400, "CLIENT_DISCONNECTED", "The client went away mid-request").response()


async def _crash(request: Request, error: Exception) -> Response:
    return WikiError(
        500, "INTERNAL_ERROR", f"Internal sandbox error: {type(error).__name__}"
    ).response()


def build_wiki_app(world: World, faults: FaultPlan, stats: RequestStats) -> ASGIApp:
    """The wiki ASGI app serving `world`'s orgs, behind the fault and counting middleware."""
    api = (*routes_changes.API, *API, *routes_access.API, *search.API)
    routes = [Route(ROOT + path, endpoint, methods=[method]) for method, path, endpoint in api]
    routes.append(Route("/_sandbox/groups", routes_access.list_groups, methods=["GET"]))
    routes.append(Route("/_sandbox/roles", routes_access.page_roles, methods=["GET"]))
    app = Starlette(
        routes=routes,
        exception_handlers={
            WikiError: _wiki_error,
            HTTPException: _http_error,
            ClientDisconnect: _gone,
            Exception: _crash,
        },
    )
    app.state.world = world
    app.state.wiki = build_wiki(world)
    return FaultMiddleware(app, faults, stats, lambda: app.routes)
