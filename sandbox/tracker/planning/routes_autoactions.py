"""Queue autoactions and their run logs (``/queues/{queue}/autoactions``).

Create: ``name`` and ``actions`` (a non-empty list of objects with a ``type``) are required,
with a ``filter`` or a ``query`` (at least one; a query the search would refuse is a 400);
``intervalMillis`` (default one hour, at least a minute), ``active``, ``enableNotifications``
and ``calendar`` optional.  The sandbox never fires an autoaction: seeded ones have runs, and a
test plants one with ``POST /_sandbox/queues/{queue}/autoactions/{id}/runs`` (sandbox only).
PATCH (under the version lock: ``version`` or ``If-Match``) changes the settings sent; DELETE
answers 200.  ``GET .../{id}/logs`` lists run summaries, ``GET .../{id}/logs/{run}`` one run's
issues.
"""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.collection import Collection
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.model import Org, Queue
from haul.sandbox.tracker.planning import render_planning as shapes
from haul.sandbox.tracker.planning.planning import (
    AutoAction,
    AutoActionRun,
    RunOutcome,
    planning_of,
)
from haul.sandbox.tracker.search.query import parse_body
from haul.sandbox.tracker.structure.routes_structure import queue_of_path

MINUTE = 60_000


def _new_autoaction(org: Org, queue: Queue) -> AutoAction:
    now = now_ms()
    return AutoAction(
        id=planning_of(org).take("autoaction"),
        queue=queue.key,
        name="",
        actions=[],
        created_at=now,
        updated_at=now,
    )


def _restamp(found: AutoAction) -> None:
    found.updated_at = max(now_ms(), found.updated_at)


AUTOACTIONS = Collection(
    "Autoaction", "action_id", lambda org: planning_of(org).autoactions, shapes.autoaction,
    queue_of=queue_of_path, locked=True,
)  # fmt: skip
list_autoactions, get_autoaction = AUTOACTIONS.list, AUTOACTIONS.get
delete_autoaction = AUTOACTIONS.delete


def _settings(checks: Checks, queue: Queue, *, creating: bool) -> dict[str, object]:
    """The AutoAction attributes a body sets (all of them when creating); 422 if wrong.
    They name no field, so the queue is not read."""
    body = checks.body
    found: dict[str, object] = {}
    if creating or "name" in body:
        found["name"] = checks.text("name", required=True, limit=255)
    if creating or "actions" in body:
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions or not all(map(_is_action, actions)):
            checks.fail("actions", "Required: a list of actions, each an object with a type")
        found["actions"] = actions
    if "query" in body:
        found["query"] = checks.text("query", limit=10_000)
        if found["query"] is not None:
            parse_body({"query": found["query"]})  # the search's 400
    if "filter" in body:
        found["filter"] = body["filter"]
    if creating and body.get("query") is None and body.get("filter") is None:
        checks.fail("filter", "Give a filter or a query")
    if creating or "intervalMillis" in body:
        interval = body.get("intervalMillis", 3_600_000)
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < MINUTE:
            checks.fail("intervalMillis", "Must be a number of milliseconds, at least 60000")
        found["interval_millis"] = interval
    if body.get("calendar") is not None and not isinstance(body["calendar"], dict):
        checks.fail("calendar", "Must be an object {id}")
    for name, attribute in (
        ("calendar", "calendar"),
        ("active", "active"),
        ("enableNotifications", "enable_notifications"),
    ):
        if name in body:
            found[attribute] = body[name] if name == "calendar" else bool(body[name])
    return found


def _is_action(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


create_autoaction = AUTOACTIONS.creator(_settings, _new_autoaction)
patch_autoaction = AUTOACTIONS.editor(_settings, _restamp)  # PATCH: the settings sent, locked


async def list_runs(request: Request) -> Response:
    call = open_call(request)
    found = AUTOACTIONS.lookup(call, request)
    return JSONResponse([shapes.run_summary(run) for run in found.runs])


async def get_run(request: Request) -> Response:
    call = open_call(request)
    found = AUTOACTIONS.lookup(call, request)
    wanted = request.path_params["run_id"]
    run = next((r for r in found.runs if r.id == wanted), None)
    if run is None:
        raise ApiError(404, "Run does not exist.", errors={"run": wanted})
    return JSONResponse(shapes.run_outcomes(call.view, run))


async def plant_run(request: Request) -> Response:
    """POST /_sandbox/queues/{queue}/autoactions/{id}/runs {"issues": {key: "success" |
    "failure"}} (admin, sandbox only): a run over those issues of the queue, launched now, as
    if the autoaction had fired; 201 with its summary. A test plants the run its case needs."""
    call = open_call(request, admin=True)
    found = AUTOACTIONS.lookup(call, request)
    issues = (await json_object(request)).get("issues")
    if not isinstance(issues, dict) or not issues:
        raise ApiError(422, "issues: an object of issue keys to success or failure is required")
    for key, status in issues.items():
        issue = call.org.issues.get(key)
        if issue is None or issue.queue != found.queue or status not in ("success", "failure"):
            raise ApiError(422, f"issues: {key!r} -> {status!r} is no issue of the queue "
                           "with success or failure")  # fmt: skip
    outcomes = tuple(RunOutcome(key, status) for key, status in issues.items())
    run = AutoActionRun(secrets.token_hex(12), now_ms(), len(outcomes), outcomes)
    found.runs.append(run)
    return JSONResponse(shapes.run_summary(run), status_code=201)
