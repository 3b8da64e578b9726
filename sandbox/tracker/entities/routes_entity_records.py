"""An entity's checklist, attachments and links; temporary uploads and file downloads.

- checklist: POST adds items (a bare array, or one item as the official SDK sends it), PATCH
  edits items by id (a bare array), DELETE clears it; ``{item}`` DELETE removes one item and
  ``{item}/_move {before}`` reorders; every write answers the entity with its checklistItems;
- attachments: ``POST /attachments?filename=`` (multipart, one file part) stores a temporary
  file (201); ``POST .../attachments/{temp_id}`` attaches it (the entity, 200); a temporary id
  attaches once; ``GET /attachments/{id}/{name}`` downloads either kind;
- links: ``POST .../links {relationship, entity | issue}`` (201, the link as listed), ``GET``
  lists both directions, ``DELETE ...?right=<entity id or issue key>``.
"""

from __future__ import annotations

import mimetypes
from urllib.parse import quote

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.context import json_body, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.blobs import StoredBlob
from haul.sandbox.tracker.entities import entity_history as history
from haul.sandbox.tracker.entities import entity_links as links
from haul.sandbox.tracker.entities import render_entities as shapes
from haul.sandbox.tracker.entities.routes_entities import find_entity, render
from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.planning.planning import (
    Change,
    Entity,
    EntityChecklistItem,
    StoredFile,
    planning_of,
)

# -- checklist -----------------------------------------------------------------------------


def _items(body: object) -> list[dict]:
    items = [body] if isinstance(body, dict) else body
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ApiError(400, "The body must be an array of checklist items")
    return items


async def add_checklist_items(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    items = _items(await json_body(request, default=[]))
    drafts = [_checked_item(call.org, item, required=True) for item in items]
    for draft in drafts:
        draft.id = history.new_hex_id(planning, "checklist")
        found.checklist.append(draft)
    change = Change("checklistItems", f"+{len(drafts)}")
    history.touch(planning, found, "Checklist changed", call.user.uid, now_ms(), (change,))
    return JSONResponse(render(call, request, planning, found, also="checklistItems"))


async def edit_checklist_items(request: Request) -> Response:
    """PATCH .../checklistItems [{id, text?, checked?, assignee?, deadline?}]: every item
    checked before any changes."""
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    by_id = {item.id: item for item in found.checklist}
    edits = []
    for item in _items(await json_body(request, default=[])):
        target = by_id.get(str(item.get("id")))
        if target is None:
            wanted = str(item.get("id"))
            raise ApiError(404, "Checklist item does not exist.", errors={"id": wanted})
        edits.append((target, item, _checked_item(call.org, item, required=False)))
    for target, item, edit in edits:
        for name in _EDITABLE:
            if name in item:
                setattr(target, name, getattr(edit, name))
    change = Change("checklistItems", "edited")
    history.touch(planning, found, "Checklist changed", call.user.uid, now_ms(), (change,))
    return JSONResponse(render(call, request, planning, found, also="checklistItems"))


_EDITABLE = ("text", "checked", "assignee", "deadline")


def _checked_item(org: Org, item: dict, *, required: bool) -> EntityChecklistItem:
    checks = Checks(org, item)
    text = checks.text("text", required=required, limit=1000)
    assignee = checks.user("assignee")
    deadline = item.get("deadline")
    deadline = deadline.get("date") if isinstance(deadline, dict) else deadline
    moment = Checks(org, {"deadline": deadline}).instant("deadline")
    if deadline is not None and moment is None:
        checks.fail("deadline", "Must be a timestamp or {date, deadlineType}")
    checks.done()
    checked = bool(item.get("checked", False))
    return EntityChecklistItem("", text or "", checked, assignee.uid if assignee else None, moment)


async def clear_checklist(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    found.checklist.clear()
    change = Change("checklistItems", "cleared")
    history.touch(planning, found, "Checklist changed", call.user.uid, now_ms(), (change,))
    return JSONResponse(render(call, request, planning, found, also="checklistItems"))


def _item(request: Request, found: Entity) -> EntityChecklistItem:
    wanted = request.path_params["item_id"]
    item = next((i for i in found.checklist if i.id == wanted), None)
    if item is None:
        raise ApiError(404, "Checklist item does not exist.", errors={"id": wanted})
    return item


async def delete_checklist_item(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    found.checklist.remove(_item(request, found))
    change = Change("checklistItems", "-1")
    history.touch(planning, found, "Checklist changed", call.user.uid, now_ms(), (change,))
    return JSONResponse(render(call, request, planning, found, also="checklistItems"))


async def move_checklist_item(request: Request) -> Response:
    """POST .../checklistItems/{id}/_move {before}: before that item, or last without it."""
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    item = _item(request, found)
    before = (await json_object(request)).get("before")
    if before is not None and all(i.id != before for i in found.checklist):
        raise ApiError(404, "Checklist item does not exist.", errors={"before": str(before)})
    found.checklist.remove(item)
    at = next((n for n, i in enumerate(found.checklist) if i.id == before), len(found.checklist))
    found.checklist.insert(at, item)
    change = Change("checklistItems", "moved")
    history.touch(planning, found, "Checklist changed", call.user.uid, now_ms(), (change,))
    return JSONResponse(render(call, request, planning, found, also="checklistItems"))


# -- files ---------------------------------------------------------------------------------


async def _file_part(request: Request) -> bytes | None:
    """The bytes of the one file part of a multipart body, whatever the part is called."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return None
    await request.body()  # a client hanging up mid-upload fails here, before temporary files
    async with request.form(max_files=2, max_fields=10) as form:
        files = [value for _, value in form.multi_items() if isinstance(value, UploadFile)]
        if len(files) != 1:
            raise ApiError(400, "Send exactly one file part")
        return await files[0].read()


async def upload_temporary(request: Request) -> Response:
    """POST /attachments?filename=: a temporary file (201), attached later by its id."""
    call = open_call(request)
    data = await _file_part(request)
    if data is None:
        raise ApiError(400, "Send the file as a multipart/form-data part")
    name = request.query_params.get("filename") or "file"
    if len(name) > 255:
        raise ApiError(422, "The file name is too long", errors={"filename": "At most 255"})
    planning = planning_of(call.org)
    mimetype = mimetypes.guess_type(name)[0] or "application/octet-stream"
    stored = StoredFile(
        history.new_hex_id(planning, "file"),
        name,
        mimetype,
        StoredBlob(data),
        call.user.uid,
        now_ms(),
    )
    planning.temp_files[stored.id] = stored
    return JSONResponse(shapes.attachment(call.view, None, stored), status_code=201)


async def attach_file(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    wanted = request.path_params["file_id"]
    stored = planning.temp_files.pop(wanted, None)
    if stored is None:
        raise ApiError(404, "Temporary file does not exist.", errors={"file": wanted})
    found.attachments.append(stored)
    change = Change("attachments", stored.name)
    history.touch(planning, found, "Attachment added", call.user.uid, now_ms(), (change,))
    return JSONResponse(render(call, request, planning, found, files=True))


async def list_attachments(request: Request) -> Response:
    call = open_call(request)
    _, found = find_entity(call, request)
    return JSONResponse([shapes.attachment(call.view, found, f) for f in found.attachments])


def _attachment(request: Request, found: Entity) -> StoredFile:
    wanted = request.path_params["file_id"]
    stored = next((f for f in found.attachments if f.id == wanted), None)
    if stored is None:
        raise ApiError(404, "Attachment does not exist.", errors={"attachment": wanted})
    return stored


async def get_attachment(request: Request) -> Response:
    call = open_call(request)
    _, found = find_entity(call, request)
    return JSONResponse(shapes.attachment(call.view, found, _attachment(request, found)))


async def delete_attachment(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    stored = _attachment(request, found)
    found.attachments.remove(stored)
    change = Change("attachments", f"- {stored.name}")
    history.touch(planning, found, "Attachment removed", call.user.uid, now_ms(), (change,))
    return Response(status_code=200)


async def download_file(request: Request) -> Response:
    """GET /attachments/{id}/{filename}: the bytes of a temporary or attached file."""
    call = open_call(request)
    wanted = request.path_params["file_id"]
    stored = planning_of(call.org).file(wanted)
    if stored is None:
        raise ApiError(404, "Attachment does not exist.", errors={"attachment": wanted})
    headers = {
        "Content-Length": str(stored.size),
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(stored.name)}",
    }
    return StreamingResponse(stored.blob.chunks(), media_type=stored.mimetype, headers=headers)


# -- links ---------------------------------------------------------------------------------


async def list_links(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request)
    links = planning.links_of(found.id)
    return JSONResponse([shapes.link(call.view, planning, link, found.id) for link in links])


async def create_link(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    spec = await json_object(request)
    link = links.add_link(call.org, planning, found, spec, call.user.uid, now_ms())
    return JSONResponse(shapes.link(call.view, planning, link, found.id), status_code=201)


async def delete_link(request: Request) -> Response:
    call = open_call(request)
    planning, found = find_entity(call, request, "WRITE")
    right = request.query_params.get("right")
    if not right:
        raise ApiError(400, "Name the other end: ?right=<entity id or issue key>")
    links.remove_link(planning, found, right, call.user.uid, now_ms())
    return Response(status_code=200)
