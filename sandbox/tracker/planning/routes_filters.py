"""Saved filters and dashboards with cycle-time widgets.

- filters (``/filters``): ``name`` required on create, with a ``query`` (query language) or a
  ``filter`` object (conditions) or both; a query the search would refuse is refused here the
  same way (400).  PATCH replaces ``filter`` whole; filters have no version lock.
- dashboards (``/dashboards``): ``name`` required, ``layout`` one of one-column, two-columns,
  three-columns (default two-columns), ``owner`` defaults to the caller.  A cycle-time widget
  (``POST /dashboards/{id}/widgets/cycleTime``) needs ``description``; ``fromStatuses`` and
  ``toStatuses`` are status keys (bare or ``{key}``) of this org.  ``GET /dashboards`` (the
  sandbox's listing, so a migration can find them) and ``GET /dashboards/{id}/widgets``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.collection import Collection
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.planning import render_planning as shapes
from haul.sandbox.tracker.planning.planning import Dashboard, SavedFilter, Widget, planning_of
from haul.sandbox.tracker.search.query import parse_body

LAYOUTS = ("one-column", "two-columns", "three-columns")
MODES = ("common-lines", "common-lines-and-points", "status-lines")
_WIDGET_EXTRAS = ("start", "end", "autoUpdatable", "excludedStatuses", "includedStatuses")


FILTERS = Collection(
    "Filter", "filter_id", lambda org: planning_of(org).filters, shapes.saved_filter,
    admin_writes=False,
)  # fmt: skip
list_filters, get_filter, delete_filter = FILTERS.list, FILTERS.get, FILTERS.delete


def _query_and_filter(checks: Checks) -> tuple[str | None, dict | None]:
    query = checks.text("query", limit=10_000)
    conditions = checks.body.get("filter")
    if conditions is not None and not isinstance(conditions, dict):
        checks.fail("filter", "Must be an object of conditions")
        conditions = None
    if query is not None:
        parse_body({"query": query})  # a malformed query is the search's 400
    if conditions:
        parse_body({"filter": conditions})
    return query, conditions


async def create_filter(request: Request) -> Response:
    call = open_call(request)
    checks = Checks(call.org, await json_object(request))
    name = checks.text("name", required=True, limit=255)
    query, conditions = _query_and_filter(checks)
    if query is None and conditions is None:
        checks.fail("query", "Give a query or a filter")
    checks.done()
    planning = planning_of(call.org)
    created = SavedFilter(
        planning.take("filter"), name or "", call.user.uid, now_ms(), query, conditions
    )
    planning.filters[created.id] = created
    return JSONResponse(shapes.saved_filter(call.view, created), status_code=201)


async def patch_filter(request: Request) -> Response:
    call = open_call(request)
    found = FILTERS.lookup(call, request)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", limit=255)
    query, conditions = _query_and_filter(checks)
    checks.done()
    found.name = name if name is not None else found.name
    found.query = query if "query" in body else found.query
    found.filter = conditions if "filter" in body else found.filter
    return JSONResponse(shapes.saved_filter(call.view, found))


# -- dashboards ----------------------------------------------------------------------------


DASHBOARDS = Collection(
    "Dashboard", "dashboard_id", lambda org: planning_of(org).dashboards, shapes.dashboard
)
list_dashboards, get_dashboard = DASHBOARDS.list, DASHBOARDS.get


async def create_dashboard(request: Request) -> Response:
    call = open_call(request)
    checks = Checks(call.org, await json_object(request))
    name = checks.text("name", required=True, limit=255)
    layout = checks.body.get("layout", "two-columns")
    if layout not in LAYOUTS:
        checks.fail("layout", f"Must be one of: {', '.join(LAYOUTS)}")
    owner = checks.user("owner") or call.user
    checks.done()
    planning = planning_of(call.org)
    created = Dashboard(
        planning.take("dashboard"), name or "", layout, owner.uid, call.user.uid, now_ms()
    )
    planning.dashboards[created.id] = created
    return JSONResponse(shapes.dashboard(call.view, created), status_code=201)


async def list_widgets(request: Request) -> Response:
    call = open_call(request)
    found = DASHBOARDS.lookup(call, request)
    return JSONResponse([shapes.widget(call.view, found, w) for w in found.widgets])


async def create_cycle_time_widget(request: Request) -> Response:
    call = open_call(request)
    owner = DASHBOARDS.lookup(call, request)
    checks = Checks(call.org, await json_object(request))
    description = checks.text("description", required=True, limit=255)
    query = checks.text("query", limit=10_000)
    if query is not None:
        parse_body({"query": query})
    starts = status_keys(call.org, checks, "fromStatuses")
    ends = status_keys(call.org, checks, "toStatuses")
    mode = checks.body.get("mode")
    if mode is not None and mode not in MODES:
        checks.fail("mode", f"Must be one of: {', '.join(MODES)}")
    checks.done()
    extra = {name: checks.body[name] for name in _WIDGET_EXTRAS if name in checks.body}
    planning = planning_of(call.org)
    created = Widget(
        planning.take("widget"),
        owner.id,
        description or "",
        query,
        starts,
        ends,
        mode,
        call.user.uid,
        now_ms(),
        extra,
    )
    owner.widgets.append(created)
    owner.version += 1
    return JSONResponse(shapes.widget(call.view, owner, created), status_code=201)


def status_keys(org: Org, checks: Checks, name: str) -> tuple[str, ...]:
    values = checks.body.get(name) or []
    values = values if isinstance(values, list) else [values]
    found = [org.statuses.lookup(v.get("key") if isinstance(v, dict) else v) for v in values]
    if any(entry is None for entry in found):
        checks.fail(name, "Every entry must be a status key of this organization")
        return ()
    return tuple(entry.key for entry in found if entry is not None)
