"""Queue autoactions and their run logs (``/queues/{queue}/autoactions``).

Create: ``name`` and ``actions`` (a non-empty list of objects with a ``type``) are required,
with a ``filter`` or a ``query`` (at least one; a query the search would refuse is a 400);
``intervalMillis`` (default one hour, at least a minute), ``active``, ``enableNotifications``
and ``calendar`` optional.  The sandbox never fires an autoaction: only seeded ones have runs.
``GET .../{id}/logs`` lists run summaries, ``GET .../{id}/logs/{run}`` one run's issues.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker import render_planning as shapes
from haul.sandbox.tracker.checks import Checks
from haul.sandbox.tracker.context import Call, json_object, open_call
from haul.sandbox.tracker.errors import ApiError
from haul.sandbox.tracker.planning import AutoAction, planning_of
from haul.sandbox.tracker.query import parse_body
from haul.sandbox.tracker.routes_structure import numeric, queue_of_path

MINUTE = 60_000


def _autoaction(call: Call, request: Request) -> AutoAction:
    queue = queue_of_path(call, request)
    found = planning_of(call.org).autoactions.get(numeric(request, "action_id"))
    if found is None or found.queue != queue.key:
        raise ApiError(404, "Autoaction does not exist.", errors={"autoaction": "not found"})
    return found


async def list_autoactions(request: Request) -> Response:
    call = open_call(request)
    queue = queue_of_path(call, request)
    items = [a for a in planning_of(call.org).autoactions.values() if a.queue == queue.key]
    return JSONResponse([shapes.autoaction(call.view, a) for a in items])


async def get_autoaction(request: Request) -> Response:
    call = open_call(request)
    return JSONResponse(shapes.autoaction(call.view, _autoaction(call, request)))


async def create_autoaction(request: Request) -> Response:
    call = open_call(request, admin=True)
    queue = queue_of_path(call, request)
    checks = Checks(call.org, await json_object(request))
    name = checks.text("name", required=True, limit=255)
    actions = checks.body.get("actions")
    if not isinstance(actions, list) or not actions or not all(_is_action(a) for a in actions):
        checks.fail("actions", "Required: a list of actions, each an object with a type")
    query = checks.text("query", limit=10_000)
    conditions = checks.body.get("filter")
    if query is None and conditions is None:
        checks.fail("filter", "Give a filter or a query")
    if query is not None:
        parse_body({"query": query})
    interval = checks.body.get("intervalMillis", 3_600_000)
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < MINUTE:
        checks.fail("intervalMillis", "Must be a number of milliseconds, at least 60000")
    calendar = checks.body.get("calendar")
    if calendar is not None and not isinstance(calendar, dict):
        checks.fail("calendar", "Must be an object {id}")
    checks.done()
    planning = planning_of(call.org)
    now = now_ms()
    created = AutoAction(
        id=planning.take("autoaction"),
        queue=queue.key,
        name=name or "",
        actions=list(actions or []),
        created_at=now,
        updated_at=now,
        filter=conditions,
        query=query,
        active=bool(checks.body.get("active", True)),
        enable_notifications=bool(checks.body.get("enableNotifications", False)),
        interval_millis=interval,
        calendar=calendar,
    )
    planning.autoactions[created.id] = created
    return JSONResponse(shapes.autoaction(call.view, created), status_code=201)


def _is_action(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


async def list_runs(request: Request) -> Response:
    call = open_call(request)
    found = _autoaction(call, request)
    return JSONResponse([shapes.run_summary(run) for run in found.runs])


async def get_run(request: Request) -> Response:
    call = open_call(request)
    found = _autoaction(call, request)
    wanted = request.path_params["run_id"]
    run = next((r for r in found.runs if r.id == wanted), None)
    if run is None:
        raise ApiError(404, "Run does not exist.", errors={"run": wanted})
    return JSONResponse(shapes.run_outcomes(call.view, run))
