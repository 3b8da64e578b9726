"""``POST /worklog/_search``: the worklog records of the whole organisation by author and by a
``createdAt`` window, as the service's documentation (``get-worklog.md``) describes it.

Body: ``{"createdBy": "<login or uid>", "createdAt": {"from": "...", "to": "..."}}``, every
part optional, the bounds inclusive. The reply is a plain JSON array (no pages), oldest
first, of the records of the issues the caller may read. Beyond the cap (10 000, or the
``worklog_cap`` fault's) the service refuses the whole request with 400 "Request exceeds
10000 items limit" (reference/api-notes.md 1.2, as ``GET /worklog`` does): a client narrows
the window.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import parse_instant
from haul.sandbox.tracker.api.context import Call, json_body, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.issues import render
from haul.sandbox.tracker.model import Issue
from haul.sandbox.tracker.structure.queue_access import may_read

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
