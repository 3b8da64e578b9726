"""Remote links of issues (objects in external applications) and the applications list.

``POST /issues/{key}/remotelinks {key, origin, relationship}``: ``origin`` is an application
id from ``GET /applications``, ``key`` the object's key there, ``relationship`` a link verb
(default ``relates``); 201 with the link as recorded.  The same (origin, key) on one issue
again is a 409.  ``DELETE /issues/{key}/remotelinks/{id}`` answers 200.  Each write is in the
issue's history as its links' are (``IssueRemoteLinked``, ``IssueRemoteUnlinked``), so it moves
the issue's updatedAt: that is how an incremental extract finds the issue to read again.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.collection import numeric
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.catalog import RELATIONSHIPS
from haul.sandbox.tracker.issues.changes import touch
from haul.sandbox.tracker.issues.routes_issues import find_issue
from haul.sandbox.tracker.planning import render_planning as shapes
from haul.sandbox.tracker.planning.planning import APPLICATIONS, RemoteLink, planning_of


async def list_applications(request: Request) -> Response:
    call = open_call(request)
    return JSONResponse([shapes.application(call.view, app) for app in APPLICATIONS.values()])


async def list_remote_links(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    links = planning_of(call.org).remote_links(call.org, issue.key)
    return JSONResponse(
        [shapes.remote_link(call.view, link, APPLICATIONS[link.application]) for link in links]
    )


async def create_remote_link(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    checks = Checks(call.org, await json_object(request))
    key = checks.text("key", required=True, limit=1000)
    origin = checks.text("origin", required=True, limit=255)
    if origin is not None and origin not in APPLICATIONS:
        checks.fail("origin", "Must be the id of an application (GET /applications)")
    relationship = checks.body.get("relationship") or "relates"
    if relationship not in RELATIONSHIPS:
        checks.fail("relationship", f"Must be one of: {', '.join(RELATIONSHIPS)}")
    checks.done()
    assert key is not None and origin is not None
    planning = planning_of(call.org)
    links = planning.remote_links(call.org, issue.key)
    if any(link.application == origin and link.key == key for link in links):
        raise ApiError(409, "The issue already links to this object", errors={"key": key})
    kind, direction = RELATIONSHIPS[relationship]
    created = RemoteLink(
        planning.take("remotelink"),
        issue.key,
        origin,
        key,
        kind,
        direction,
        call.user.uid,
        now_ms(),
    )
    links.append(created)
    touch(call.org, issue, call.user.uid, now_ms(), "IssueRemoteLinked")
    body = shapes.remote_link(call.view, created, APPLICATIONS[origin])
    return JSONResponse(body, status_code=201)


async def delete_remote_link(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    links = planning_of(call.org).remote_links(call.org, issue.key)
    wanted = numeric(request, "link_id")
    found = next((link for link in links if link.id == wanted), None)
    if found is None:
        raise ApiError(404, "Remote link does not exist.", errors={"remotelink": str(wanted)})
    links.remove(found)
    touch(call.org, issue, call.user.uid, now_ms(), "IssueRemoteUnlinked")
    return Response(status_code=200)
