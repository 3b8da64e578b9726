"""Sub-record listings of one issue: comments, worklog, changelog, links, attachments, checklist."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.issues import render
from haul.sandbox.tracker.issues.editing import add_comment
from haul.sandbox.tracker.issues.routes_issues import find_issue
from haul.sandbox.tracker.model import Attachment
from haul.sandbox.tracker.search.paging import relative_page


async def list_comments(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    expand = request.query_params.get("expand", "")
    with_files = bool({"attachments", "all"} & set(expand.split(",")))
    comments = sorted(call.org.records(issue).comments, key=lambda c: c.id)
    page = relative_page(request, comments, lambda c: c.id)
    rendered = [render.comment(call.view, issue, c, attachments=with_files) for c in page.items]
    return JSONResponse(rendered, headers=page.headers)


async def create_comment(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    comment = add_comment(call.org, issue, await json_object(request), call.user.uid, now_ms())
    fresh = call.org.issues[issue.key]
    return JSONResponse(render.comment(call.view, fresh, comment), status_code=201)


async def list_worklog(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    records = sorted(call.org.records(issue).worklogs, key=lambda w: w.id)
    page = relative_page(request, records, lambda w: w.id)
    rendered = [render.worklog(call.view, issue, record) for record in page.items]
    return JSONResponse(rendered, headers=page.headers)


async def list_changelog(request: Request) -> Response:
    """Changes in id order; ``type`` (e.g. IssueWorkflow) and ``field`` (e.g. status) narrow."""
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    entries = sorted(call.org.records(issue).changelog, key=lambda e: e.id)
    kind, field = request.query_params.get("type"), request.query_params.get("field")
    if kind:
        entries = [entry for entry in entries if entry.type == kind]
    if field:
        entries = [entry for entry in entries if any(c.field == field for c in entry.fields)]
    page = relative_page(request, entries, lambda e: e.id)
    rendered = [render.changelog_entry(call.view, issue, entry) for entry in page.items]
    return JSONResponse(rendered, headers=page.headers)


async def list_links(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    links = call.org.links_of(issue.key)
    return JSONResponse([render.link(call.view, link, issue.key) for link in links])


async def list_attachments(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    files = call.org.records(issue).attachments
    return JSONResponse([render.attachment(call.view, issue, file) for file in files])


def _attachment(request: Request) -> tuple:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    wanted = request.path_params["attachment_id"]
    found: Attachment | None = next(
        (a for a in call.org.records(issue).attachments if a.id == wanted), None
    )
    if found is None:
        raise ApiError(404, "Attachment does not exist.", errors={"attachment": wanted})
    return call, issue, found


async def get_attachment(request: Request) -> Response:
    call, issue, found = _attachment(request)
    return JSONResponse(render.attachment(call.view, issue, found))


async def download_attachment(request: Request) -> Response:
    """The file's bytes, streamed chunk by chunk (generated files are never built whole)."""
    _, _, found = _attachment(request)
    headers = {
        "Content-Length": str(found.size),
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(found.name)}",
    }
    return StreamingResponse(found.blob.chunks(), media_type=found.mimetype, headers=headers)


async def list_checklist(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    items = call.org.records(issue).checklist
    return JSONResponse([render.checklist_item(call.view, item) for item in items])
