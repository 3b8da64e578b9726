"""The sandbox wiki as one ASGI app rooted at ``/v1``, behind the shared fault middleware: this
module only assembles the routes and maps errors to the wiki's envelope.

Auth as the tracker's (``OAuth``/``Bearer`` token, ``X-Org-Id`` or ``X-Cloud-Org-Id``; 401
otherwise). Errors as ``{"error_code", "message", "debug_message"}``; validation errors name
the field and the pydantic-style type (``value_error.missing``, ``type_error.enum``) with 400
(:mod:`sandbox.wiki.context`); cursors are opaque offsets. The routes, by kind:

- :mod:`sandbox.wiki.routes_pages`: who calls, pages, their descendants, delete and recover;
- :mod:`sandbox.wiki.routes_files`: attachments, upload sessions, a page's resources;
- :mod:`sandbox.wiki.routes_grids`: grids, their columns, rows and cells (revision-locked);
- :mod:`sandbox.wiki.routes_changes`: moving a page, comments;
- :mod:`sandbox.wiki.routes_access` and :mod:`sandbox.wiki.search`: page access and search.

Page access (:mod:`sandbox.wiki.access`): a page the caller may not read is 403 ``FORBIDDEN``
for it and everything on it, and left out of descendants and search; writes need ``editor``,
a policy change ``extra_editor``. Sandbox only, at the port's root: ``GET /_sandbox/groups``
and ``GET /_sandbox/roles?slug=``.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from haul.sandbox.faults import FaultMiddleware, FaultPlan, RequestStats
from haul.sandbox.wiki import (
    routes_access,
    routes_changes,
    routes_files,
    routes_grids,
    routes_pages,
    search,
)
from haul.sandbox.wiki.context import WikiError
from haul.sandbox.wiki.seed import build_wiki
from haul.sandbox.world import World

ROOT = "/v1"
API = (
    *routes_changes.API,
    *routes_pages.API,
    *routes_files.API,
    *routes_grids.API,
    *routes_access.API,
    *search.API,
)


async def _wiki_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, WikiError)
    return error.response()


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(error.status_code, "ERROR")
    return WikiError(error.status_code, code, str(error.detail)).response()


async def _gone(request: Request, error: Exception) -> Response:
    return WikiError(400, "CLIENT_DISCONNECTED", "The client went away mid-request").response()


async def _crash(request: Request, error: Exception) -> Response:
    return WikiError(
        500, "INTERNAL_ERROR", f"Internal sandbox error: {type(error).__name__}"
    ).response()


def build_wiki_app(world: World, faults: FaultPlan, stats: RequestStats) -> ASGIApp:
    """The wiki ASGI app serving `world`'s orgs, behind the fault and counting middleware."""
    routes = [Route(ROOT + path, endpoint, methods=[method]) for method, path, endpoint in API]
    routes.append(Route("/_sandbox/groups", routes_access.list_groups, methods=["GET"]))
    routes.append(Route("/_sandbox/roles", routes_access.page_roles, methods=["GET"]))
    app = Starlette(
        routes=routes,
        exception_handlers={
            WikiError: _wiki_error,
            HTTPException: _http_error,
            ClientDisconnect: _gone,
            Exception: _crash,
        },
    )
    app.state.world = world
    app.state.wiki = build_wiki(world)
    return FaultMiddleware(app, faults, stats, lambda: app.routes)
