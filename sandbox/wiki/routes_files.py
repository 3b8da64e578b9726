"""What a page holds as files: its attachments (list, read, download, delete), the upload
sessions that carry a file's bytes in parts (create, upload a part, finish, read, abort), the
attach call that turns finished sessions into attachments, and a page's resources (its
attachments and grids in one listing).

A part is at most ``PART_MAX`` bytes and every part but the last at least ``PART_MIN``; a
session is finished once its parts hold the announced size, and used once attached.
"""

from __future__ import annotations

import mimetypes
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.wiki.context import Call, body_of, invalid, listing, not_found, ordered, required
from haul.sandbox.wiki.model import PART_MAX, PART_MIN, Attachment, Page, UploadSession, wiki_time


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
