"""Sub-record listings of one issue: comments, worklog, changelog, links, attachments, checklist.

And ``POST /worklog/_search``: the worklog records of the whole organisation by author and by a
``createdAt`` window, as the service's documentation (``get-worklog.md``) describes it.

Body: ``{"createdBy": "<login or uid>", "createdAt": {"from": "...", "to": "..."}}``, every
part optional, the bounds inclusive. The reply is a plain JSON array (no pages), oldest
first, of the records of the issues the caller may read. Beyond the cap (10 000, or the
``worklog_cap`` fault's) the service refuses the whole request with 400 "Request exceeds
10000 items limit" (reference/api-notes.md 1.2, as ``GET /worklog`` does): a client narrows
the window.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from haul.sandbox.timefmt import now_ms, parse_instant
from haul.sandbox.tracker.api.context import Call, json_body, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.issues import render
from haul.sandbox.tracker.issues.editing import add_comment
from haul.sandbox.tracker.issues.routes_issues import find_issue
from haul.sandbox.tracker.model import Attachment, Issue
from haul.sandbox.tracker.search.paging import relative_page
from haul.sandbox.tracker.structure.queue_access import may_read


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


CAP = 10_000


async def search_worklogs(request: Request) -> Response:
    call = open_call(request)
    body = await json_body(request, default={})
    if not isinstance(body, dict):
        raise ApiError(400, "The search body must be a JSON object")
    author = _author(call, body.get("createdBy"))
    low, high = _window(body.get("createdAt"))
    found = [
        (record.created_at, record.id, issue, record)
        for issue in _readable_issues(call)
        for record in call.org.records(issue).worklogs
        if (author is None or record.created_by == author)
        and (low is None or record.created_at >= low)
        and (high is None or record.created_at <= high)
    ]
    cap = _cap(request)
    if len(found) > cap:
        raise ApiError(400, f"Request exceeds {cap} items limit")
    found.sort(key=lambda hit: (hit[0], hit[1]))
    return JSONResponse([render.worklog(call.view, issue, record) for _, _, issue, record in found])


def _readable_issues(call: Call) -> list[Issue]:
    readable = {q for q in call.org.queues if call.admin or may_read(call.org, q, call.user)}
    return [issue for issue in call.org.issues.values() if issue.queue in readable]


def _author(call: Call, value: object) -> int | None:
    if value is None:
        return None
    user = call.org.find_user(value)
    if user is None:
        raise ApiError(400, f"User {value} does not exist", errors={"createdBy": str(value)})
    return user.uid


def _window(value: object) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict) or not set(value) <= {"from", "to"}:
        raise ApiError(400, "'createdAt' must be an object with 'from' and/or 'to'")
    bounds: list[int | None] = []
    for side in ("from", "to"):
        moment = parse_instant(value[side]) if value.get(side) is not None else None
        if value.get(side) is not None and moment is None:
            raise ApiError(400, f"'createdAt.{side}' is not a valid timestamp")
        bounds.append(moment)
    return bounds[0], bounds[1]


def _cap(request: Request) -> int:
    fault = request.app.state.faults.served("worklog_cap")
    return min(CAP, int(fault.rps)) if fault is not None else CAP
