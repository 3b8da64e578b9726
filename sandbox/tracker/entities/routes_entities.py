"""Entities (``/entities/{type}``: project, portfolio, goal): create, import, read, search,
edit, delete; their permissions, history and comments.

An entity is addressed by its id or its shortId.  A PATCH names the version it read (the
``version`` query or ``If-Match``, see :mod:`sandbox.tracker.api.locking`).  The two ``_relative``
listings (history, comments) page by an exclusive ``from`` cursor (``id`` also taken),
``perPage`` (default 50) and ``direction`` (``forward`` or ``backward``), and answer
``{events|comments: [...], hasNext, hasPrev}``; ``newEventsOnTop=true`` lists newest first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.context import Call, json_body, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.entities import entities as rules
from haul.sandbox.tracker.entities import entity_access as access
from haul.sandbox.tracker.entities import entity_history as history
from haul.sandbox.tracker.entities import render_entities as shapes
from haul.sandbox.tracker.planning.planning import (
    ENTITY_TYPES,
    Change,
    Entity,
    EntityComment,
    Planning,
    planning_of,
)
from haul.sandbox.tracker.search.paging import int_param

T = TypeVar("T")


def entity_type(request: Request) -> str:
    kind = request.path_params["entity_type"]
    if kind not in ENTITY_TYPES:
        raise ApiError(404, f"Unknown entity type {kind!r}", errors={"entityType": kind})
    return kind


def find_entity(call: Call, request: Request, need: str = "READ") -> tuple[Planning, Entity]:
    """The entity of the path; 404 if there is none, 403 if the caller lacks ``need``."""
    planning = planning_of(call.org)
    wanted = request.path_params["entity_id"]
    found = planning.find_entity(entity_type(request), wanted)
    if found is None:
        raise ApiError(404, "Entity does not exist.", errors={"entity": wanted})
    if not call.admin and not access.may(call.org, planning, found, call.user, need):
        raise ApiError(403, f"You have no {need} access to this entity")
    return planning, found


def render(
    call: Call,
    request: Request,
    planning: Planning,
    value: Entity,
    *,
    also: str = "",
    files: bool = False,
) -> dict:
    """The entity as the request's ``fields`` and ``expand`` ask for it, plus ``also``."""
    wanted = shapes.requested(request.query_params.get("fields")) | shapes.requested(also)
    expand = shapes.requested(request.query_params.get("expand"))
    with_files = files or bool({"attachments", "all"} & expand)
    return shapes.entity(call.view, planning, value, wanted, attachments=with_files)


async def create_entity(request: Request) -> Response:
    call = open_call(request)
    kind = entity_type(request)
    planning = planning_of(call.org)
    fields = rules.envelope(await json_object(request))
    uid, now = call.user.uid, now_ms()
    created = rules.create_entity(call.org, planning, kind, fields, uid, now, created_by=uid)
    return JSONResponse(render(call, request, planning, created), status_code=201)


async def import_entity(request: Request) -> Response:
    """POST /entities/{type}/_import (admin): keeps createdAt/createdBy (and updatedAt/By)."""
    call = open_call(request, admin=True)
    kind = entity_type(request)
    planning = planning_of(call.org)
    body = await json_object(request)
    created = rules.import_entity(call.org, planning, kind, body, now_ms())
    return JSONResponse(render(call, request, planning, created), status_code=201)


async def get_entity(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request)
    return JSONResponse(render(call, request, planning, found))


async def patch_entity(request: Request) -> Response:
    call = open_call(request)
    body = await json_object(request)
    opening = "teamAccess" in rules.envelope(body)  # who may see it at all: a GRANT matter
    planning, found = find_entity(call, request, "GRANT" if opening else "WRITE")
    check_version(request, found.version)
    rules.update_entity(call.org, planning, found, body, call.user.uid, now_ms())
    return JSONResponse(render(call, request, planning, found))


async def delete_entity(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    rules.delete_entity(planning, found)
    return Response(status_code=200)


async def search_entities(request: Request) -> Response:
    """POST /entities/{type}/_search?page&perPage&fields: ``{hits, pages, values, orderBy}``.

    The body (or null) takes ``input`` (a substring of the summary), ``filter`` (author, lead,
    entityStatus, parentEntity: a value or a list), ``orderBy`` with ``orderAsc``, ``rootOnly``.
    """
    call = open_call(request)
    kind = entity_type(request)
    planning = planning_of(call.org)
    body = await json_body(request, default={}) or {}
    if not isinstance(body, dict):
        raise ApiError(400, "The search body must be a JSON object or null")
    found = [
        e
        for e in planning.entities.values()
        if e.type == kind and _matches(call, e, body) and _readable(call, e)
    ]
    order = body.get("orderBy") or "createdAt"
    key = _ORDERS.get(order)
    if key is None:
        raise ApiError(400, f"Cannot order by {order!r}", errors={"orderBy": str(order)})
    found.sort(key=key, reverse=body.get("orderAsc") is False)
    per_page = int_param(request, "perPage", 50, high=1000)
    page = int_param(request, "page", 1)
    chunk = found[(page - 1) * per_page : page * per_page]
    return JSONResponse(
        {
            "hits": len(found),
            "pages": max(1, -(-len(found) // per_page)),
            "values": [render(call, request, planning, e) for e in chunk],
            "orderBy": order,
        }
    )


_ORDERS: dict[str, Callable[[Entity], Any]] = {
    "createdAt": lambda e: (e.created_at, e.id),
    "updatedAt": lambda e: (e.updated_at, e.id),
    "summary": lambda e: (e.summary, e.id),
    "shortId": lambda e: e.short_id,
}


def _readable(call: Call, value: Entity) -> bool:
    return call.admin or access.may(call.org, planning_of(call.org), value, call.user, "READ")


def _matches(call: Call, value: Entity, body: dict) -> bool:
    text = body.get("input")
    if isinstance(text, str) and text.lower() not in value.summary.lower():
        return False
    if body.get("rootOnly") and value.parent is not None:
        return False
    conditions = body.get("filter") or {}
    if not isinstance(conditions, dict):
        raise ApiError(400, "'filter' must be an object")
    actual = {
        "author": value.author,
        "lead": value.lead,
        "entityStatus": value.status,
        "parentEntity": value.parent,
    }
    for name, wanted in conditions.items():
        if name not in actual:
            raise ApiError(400, f"Cannot filter entities by {name!r}", errors={name: "Unknown"})
        options = wanted if isinstance(wanted, list) else [wanted]
        if name in ("author", "lead"):
            users = [call.org.find_user(option) for option in options]
            options = [user.uid for user in users if user is not None]
        if actual[name] not in options:
            return False
    return True


# -- permissions and history -------------------------------------------------------------


async def get_permissions(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request)
    return JSONResponse(shapes.permissions(call.view, planning, found, extended=False))


async def patch_permissions(request: Request) -> Response:
    """PATCH .../permissions {grant, revoke}; ``permissionSources`` in the body is a 400."""
    call = open_call(request)
    planning, found = find_entity(call, request, "GRANT")
    edit = access.permissions_edit(await json_object(request))
    _edit_access(call, planning, found, edit)
    return JSONResponse(shapes.permissions(call.view, planning, found, extended=False))


async def get_extended_permissions(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request)
    return JSONResponse(shapes.permissions(call.view, planning, found, extended=True))


async def patch_extended_permissions(request: Request) -> Response:
    """PATCH .../extendedPermissions {acl: {grant, revoke}}; any other verb is a 400."""
    call = open_call(request)
    planning, found = find_entity(call, request, "GRANT")
    edit = access.extended_edit(await json_object(request))
    _edit_access(call, planning, found, edit)
    return JSONResponse(shapes.permissions(call.view, planning, found, extended=True))


def _edit_access(call: Call, planning: Planning, found: Entity, edit: dict) -> None:
    access.apply_edit(call.org, found, edit)
    change = Change("permissions", ", ".join(sorted(v for v in edit if edit[v])))
    history.touch(planning, found, "Access changed", call.user.uid, now_ms(), (change,))


async def list_events(request: Request) -> Response:
    call = open_call(request)
    _, found = find_entity(call, request)
    events = list(found.events)
    if request.query_params.get("newEventsOnTop", "").lower() == "true":
        events.reverse()
    chunk, has_next, has_prev = relative_window(request, events, lambda e: e.id)
    body = {"events": [shapes.event(call.view, e) for e in chunk]}
    return JSONResponse({**body, "hasNext": has_next, "hasPrev": has_prev})


def relative_window(
    request: Request, items: Sequence[T], id_of: Callable[[T], object]
) -> tuple[list[T], bool, bool]:
    """Items after (forward) or before (backward) the exclusive ``from`` cursor."""
    per_page = int_param(request, "perPage", 50, high=1000)
    cursor = request.query_params.get("from") or request.query_params.get("id")
    backward = request.query_params.get("direction", "forward").lower() == "backward"
    ids = [str(id_of(item)) for item in items]
    if cursor is not None and cursor not in ids:
        raise ApiError(400, f"Unknown cursor {cursor!r}", errors={"from": cursor})
    at = ids.index(cursor) if cursor is not None else None
    if backward:
        end = at if at is not None else len(items)
        start = max(0, end - per_page)
    else:
        start = at + 1 if at is not None else 0
        end = min(len(items), start + per_page)
    return list(items[start:end]), end < len(items), start > 0


# -- comments ------------------------------------------------------------------------------


async def list_comments(request: Request) -> Response:
    call = open_call(request)
    _, found = find_entity(call, request)
    return JSONResponse([shapes.comment(call.view, found, c) for c in found.comments])


async def relative_comments(request: Request) -> Response:
    call = open_call(request)
    _, found = find_entity(call, request)
    chunk, has_next, has_prev = relative_window(request, found.comments, lambda c: c.id)
    body = {"comments": [shapes.comment(call.view, found, c) for c in chunk]}
    return JSONResponse({**body, "hasNext": has_next, "hasPrev": has_prev})


async def create_comment(request: Request) -> Response:
    """POST .../comments {text, summonees}: 201 with the comment."""
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    body = await json_object(request)
    checks = Checks(call.org, body)
    text = checks.text("text", required=True)
    summonees = checks.users("summonees")
    checks.done()
    comment = history.add_comment(planning, found, text or "", summonees, call.user.uid, now_ms())
    return JSONResponse(shapes.comment(call.view, found, comment), status_code=201)


def _comment(request: Request, found: Entity) -> EntityComment:
    wanted = request.path_params["comment_id"]
    comment = next((c for c in found.comments if wanted in (str(c.id), c.long_id)), None)
    if comment is None:
        raise ApiError(404, "Comment does not exist.", errors={"comment": wanted})
    return comment


async def get_comment(request: Request) -> Response:
    call = open_call(request)
    _, found = find_entity(call, request)
    return JSONResponse(shapes.comment(call.view, found, _comment(request, found)))


async def patch_comment(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    comment = _comment(request, found)
    check_version(request, comment.version)
    checks = Checks(call.org, await json_object(request))
    text = checks.text("text", required=True)
    checks.done()
    now = now_ms()
    comment.text, comment.version = text or "", comment.version + 1
    comment.updated_by, comment.updated_at = call.user.uid, max(now, comment.updated_at)
    change = Change("comment", comment.text[:200])
    history.touch(planning, found, "Comment updated", call.user.uid, now, (change,))
    return JSONResponse(shapes.comment(call.view, found, comment))


async def delete_comment(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    comment = _comment(request, found)
    found.comments.remove(comment)
    change = Change("comment", f"- {comment.id}")
    history.touch(planning, found, "Comment removed", call.user.uid, now_ms(), (change,))
    return Response(status_code=200)
