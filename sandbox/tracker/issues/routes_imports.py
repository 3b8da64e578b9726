"""The admin ``_import`` endpoints (admin token only); rules live in :mod:`importing`."""

from __future__ import annotations

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.issues import importing, render
from haul.sandbox.tracker.issues.routes_issues import find_issue


async def import_issue(request: Request) -> Response:
    call = open_call(request, admin=True)
    issue = importing.import_issue(call.org, await json_object(request), now_ms())
    return JSONResponse(render.issue(call.view, issue), status_code=201)


async def import_comment(request: Request) -> Response:
    call = open_call(request, admin=True)
    issue = find_issue(call, request.path_params["key"])
    comment = importing.import_comment(call.org, issue, await json_object(request))
    return JSONResponse(render.comment(call.view, issue, comment), status_code=201)


async def import_worklog(request: Request) -> Response:
    """Answers 200 with a JSON array holding the record, as the live service does."""
    call = open_call(request, admin=True)
    issue = find_issue(call, request.path_params["key"])
    record = importing.import_worklog(call.org, issue, await json_object(request))
    return JSONResponse([render.worklog(call.view, issue, record)])


async def import_link(request: Request) -> Response:
    call = open_call(request, admin=True)
    issue = find_issue(call, request.path_params["key"])
    link = importing.import_link(call.org, issue, await json_object(request))
    return JSONResponse(render.link(call.view, link, issue.key), status_code=201)


async def import_attachment(request: Request) -> Response:
    call = open_call(request, admin=True)
    issue = find_issue(call, request.path_params["key"])
    comment_ref = request.path_params.get("comment_id")
    data = await _single_file(request)
    params = dict(request.query_params)
    found = importing.import_attachment(call.org, issue, params, data, comment_ref)
    body = render.attachment(call.view, issue, found, with_comment=True)
    return JSONResponse(body, status_code=201)


async def _single_file(request: Request) -> bytes | None:
    """The bytes of the one file part of a multipart body, whatever the part is called."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return None
    # read the whole body first: a client that hangs up mid-upload then fails here, before
    # the form parser has opened temporary files it would not close on a disconnect
    await request.body()
    async with request.form(max_files=2, max_fields=10) as form:
        files = [value for _, value in form.multi_items() if isinstance(value, UploadFile)]
        if len(files) > 1:
            raise ApiError(400, "Send exactly one file part")
        return await files[0].read() if files else None
