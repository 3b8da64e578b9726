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
from haul.sandbox.wiki import routes_access, routes_changes, search
from haul.sandbox.wiki import routes_files as files
from haul.sandbox.wiki import routes_grids as grids
from haul.sandbox.wiki import routes_pages as pages
from haul.sandbox.wiki.context import WikiError
from haul.sandbox.wiki.seed import build_wiki
from haul.sandbox.world import World

ROOT = "/v1"
API = (
    *routes_changes.API,  # moves and comments
    # who calls, pages, descendants, delete and recover
    ("GET", "/me", pages.me),
    ("GET", "/pages", pages.get_page),
    ("POST", "/pages", pages.create_page),
    ("GET", "/pages/descendants", pages.descendants_by_slug),
    ("POST", "/pages/recovery_tokens/{token}/recover", pages.recover),
    ("GET", "/pages/{idx:int}", pages.get_page_by_id),
    ("POST", "/pages/{idx:int}", pages.update_page),
    ("PATCH", "/pages/{idx:int}", pages.patch_page),
    ("DELETE", "/pages/{idx:int}", pages.delete_page),
    ("POST", "/pages/{idx:int}/append-content", pages.append_content),
    ("GET", "/pages/{idx:int}/descendants", pages.descendants_by_id),
    # attachments, upload sessions, a page's resources
    ("GET", "/pages/{idx:int}/attachments", files.list_attachments),
    ("POST", "/pages/{idx:int}/attachments", files.attach),
    ("GET", "/pages/{idx:int}/attachments/{file_id}", files.get_attachment),
    ("DELETE", "/pages/{idx:int}/attachments/{file_id}", files.delete_attachment),
    ("GET", "/pages/{idx:int}/attachments/{file_id}/download", files.download_attachment),
    ("GET", "/pages/{idx:int}/resources", files.list_resources),
    ("POST", "/upload_sessions", files.create_session),
    ("GET", "/upload_sessions/{sid}", files.get_session),
    ("PUT", "/upload_sessions/{sid}/upload_part", files.upload_part),
    ("POST", "/upload_sessions/{sid}/finish", files.finish_session),
    ("POST", "/upload_sessions/{sid}/abort", files.abort_session),
    # grids, under their revision lock
    ("GET", "/pages/{idx:int}/grids", grids.list_grids),
    ("POST", "/grids", grids.create_grid),
    ("GET", "/grids/{gid}", grids.get_grid),
    ("POST", "/grids/{gid}", grids.update_grid),
    ("DELETE", "/grids/{gid}", grids.delete_grid),
    ("POST", "/grids/{gid}/columns", grids.add_columns),
    ("DELETE", "/grids/{gid}/columns", grids.remove_columns),
    ("POST", "/grids/{gid}/rows", grids.add_rows),
    ("DELETE", "/grids/{gid}/rows", grids.remove_rows),
    ("POST", "/grids/{gid}/cells", grids.update_cells),
    *routes_access.API,  # a page's access
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
