"""A mail list following an issue: what no tracker call changes.

In the service a mail list starts or stops following an issue from the mail list's own
settings, outside the tracker's API: the import sets an issue's ``followingMaillists``, and an
edit ignores it. ``PUT /_sandbox/issues/{key}/maillists {"followingMaillists": [...]}`` (admin
token) stands for that outside change: the issue's list is replaced and its updatedAt moves,
as any change of the issue does, so a sync test can make a change no update call can carry.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.issues import render
from haul.sandbox.tracker.issues.routes_issues import find_issue

FIELD = "followingMaillists"


async def follow_maillists(request: Request) -> Response:
    call = open_call(request, admin=True)
    issue = find_issue(call, request.path_params["key"])
    lists = (await json_object(request)).get(FIELD)
    if not isinstance(lists, list) or not all(isinstance(item, str) for item in lists):
        raise ApiError(400, f"{FIELD} must be a list of mail addresses", errors={FIELD: ""})
    org = call.org
    org.records(issue)  # a generated issue's records come from its header before it changes
    extra, refs = org.values(issue)
    kept = tuple((name, value) for name, value in extra if name != FIELD)
    org.set_values(issue, kept + (((FIELD, tuple(lists)),) if lists else ()), refs)
    org.put_issue(replace(issue, updated_at=max(now_ms(), issue.updated_at)))
    return JSONResponse(render.issue(call.view, org.issues[issue.key]))
