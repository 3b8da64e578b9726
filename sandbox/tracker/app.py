"""The tracker service as one ASGI app: routes under both ``/v3`` and ``/v2``, the error
envelope everywhere, ``/_sandbox/*`` control endpoints, and the fault middleware in front."""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from haul.sandbox.faults import FaultMiddleware, FaultPlan, RequestStats, route_name
from haul.sandbox.info import sandbox_info
from haul.sandbox.tracker import routes_edits as edits
from haul.sandbox.tracker import routes_planning as planning
from haul.sandbox.tracker.api.context import json_object, world_of
from haul.sandbox.tracker.api.errors import ApiError, error_response
from haul.sandbox.tracker.api.notifications import notifies
from haul.sandbox.tracker.issues import routes_changes as changes
from haul.sandbox.tracker.issues import routes_imports as imports
from haul.sandbox.tracker.issues import routes_issues as issues
from haul.sandbox.tracker.issues import routes_records as records
from haul.sandbox.tracker.planning import routes_autoactions as autoactions
from haul.sandbox.tracker.planning import routes_triggers as triggers
from haul.sandbox.tracker.search.scroll import ScrollStore
from haul.sandbox.tracker.structure import queue_access
from haul.sandbox.tracker.structure import routes_boards as boards
from haul.sandbox.tracker.structure import routes_dicts as dicts
from haul.sandbox.tracker.structure import routes_fields as fields
from haul.sandbox.tracker.structure import routes_queues as queues
from haul.sandbox.tracker.structure import routes_setup as setup
from haul.sandbox.tracker.structure import routes_structure as structure
from haul.sandbox.tracker.workflows import routes_workflows as workflows
from haul.sandbox.world import World, is_admin_token

# specific paths before the {key} ones they would otherwise shadow
API = (
    ("GET", "/myself", issues.myself),
    ("POST", "/issues/_search", issues.search),
    ("POST", "/issues/_count", issues.count),
    ("POST", "/issues/_import", imports.import_issue),
    ("POST", "/issues/_findByUnique", issues.find_by_unique),
    ("POST", "/system/search/scroll/_clear", issues.clear_scroll),
    # what a person changes on an issue (routes_changes): every one moves updatedAt
    ("POST", "/issues", changes.create_issue),
    ("POST", "/issues/{key}/_move", changes.move_issue),
    ("GET", "/issues/{key}/transitions", changes.list_transitions),
    ("GET", "/issues/{key}/transitions/{transition}", changes.get_transition),
    ("POST", "/issues/{key}/transitions/{transition}/_execute", changes.execute_transition),
    ("PATCH", "/issues/{key}/comments/{comment_id}", changes.patch_comment),
    ("DELETE", "/issues/{key}/comments/{comment_id}", changes.delete_comment),
    ("POST", "/issues/{key}/worklog", changes.create_worklog),
    ("GET", "/issues/{key}/worklog/{worklog_id}", changes.get_worklog),
    ("PATCH", "/issues/{key}/worklog/{worklog_id}", changes.patch_worklog),
    ("DELETE", "/issues/{key}/worklog/{worklog_id}", changes.delete_worklog),
    ("POST", "/issues/{key}/links", changes.create_link),
    ("DELETE", "/issues/{key}/links/{link_id}", changes.delete_link),
    ("POST", "/issues/{key}/attachments", changes.create_attachment),
    ("DELETE", "/issues/{key}/attachments/{attachment_id}", changes.delete_attachment),
    ("GET", "/queues/{queue}/workflows", workflows.list_queue_workflows),
    ("GET", "/issues/{key}", issues.get_issue),
    ("PATCH", "/issues/{key}", issues.patch_issue),
    ("POST", "/issues/{key}/comments/_import", imports.import_comment),
    ("POST", "/issues/{key}/comments/{comment_id}/attachments/_import", imports.import_attachment),
    ("GET", "/issues/{key}/comments", records.list_comments),
    ("POST", "/issues/{key}/comments", records.create_comment),
    ("POST", "/issues/{key}/worklogs/_import", imports.import_worklog),
    ("GET", "/issues/{key}/worklog", records.list_worklog),
    ("POST", "/worklog/_search", records.search_worklogs),
    ("GET", "/issues/{key}/changelog", records.list_changelog),
    ("POST", "/issues/{key}/links/_import", imports.import_link),
    ("GET", "/issues/{key}/links", records.list_links),
    ("POST", "/issues/{key}/attachments/_import", imports.import_attachment),
    ("GET", "/issues/{key}/attachments", records.list_attachments),
    ("GET", "/issues/{key}/attachments/{attachment_id}", records.get_attachment),
    ("GET", "/issues/{key}/attachments/{attachment_id}/{filename}", records.download_attachment),
    ("GET", "/issues/{key}/checklistItems", records.list_checklist),
    ("POST", "/issues/{key}/checklistItems", issues.post_checklist),
    ("DELETE", "/issues/{key}/checklistItems", issues.delete_checklist),
    ("PATCH", "/issues/{key}/checklistItems/{item_id}", issues.patch_checklist_item),
    ("DELETE", "/issues/{key}/checklistItems/{item_id}", issues.delete_checklist),
    ("GET", "/statuses", dicts.list_statuses),
    ("GET", "/issuetypes", dicts.list_issue_types),
    ("GET", "/priorities", dicts.list_priorities),
    ("GET", "/resolutions", dicts.list_resolutions),
    *(
        route
        for path in ("statuses", "issuetypes", "priorities", "resolutions")
        for route in (
            ("POST", f"/{path}", setup.create_endpoint(path)),
            ("GET", f"/{path}/{{entry_id}}", setup.get_endpoint(path)),
            ("PATCH", f"/{path}/{{entry_id}}", setup.patch_endpoint(path)),
        )
    ),
    ("GET", "/linktypes", dicts.list_link_types),
    ("GET", "/fields", fields.list_fields),
    ("POST", "/fields", fields.create_field),
    ("GET", "/fields/categories", fields.list_categories),
    ("POST", "/fields/categories", fields.create_category),
    ("GET", "/fields/categories/{category_id}", fields.get_category),
    ("PATCH", "/fields/categories/{category_id}", fields.patch_category),
    ("GET", "/fields/{field_id}", fields.get_field),
    ("PATCH", "/fields/{field_id}", fields.patch_field),
    ("GET", "/localFields/{field_id}", fields.get_local_field_by_id),
    ("GET", "/queues", dicts.list_queues),
    ("POST", "/queues", setup.create_queue),
    ("GET", "/queues/{queue}", dicts.get_queue),
    ("PATCH", "/queues/{queue}", queues.patch_queue),
    ("GET", "/queues/{queue}/permissions", queue_access.get_permissions),
    ("PATCH", "/queues/{queue}/permissions", queue_access.patch_permissions),
    ("GET", "/queues/{queue}/permissions/{code}", queue_access.get_code_permissions),
    ("GET", "/workflows", workflows.list_workflows),
    ("POST", "/workflows", workflows.create_workflow),
    ("GET", "/workflows/{workflow_id}", workflows.get_workflow),
    ("PATCH", "/workflows/{workflow_id}", workflows.patch_workflow),
    ("GET", "/queues/{queue}/components", structure.list_queue_components),
    ("GET", "/queues/{queue}/versions", structure.list_queue_versions),
    ("GET", "/queues/{queue}/permissions/users/{holder}", queue_access.get_user_permissions),
    ("GET", "/queues/{queue}/permissions/groups/{holder}", queue_access.get_group_permissions),
    ("GET", "/queues/{queue}/localFields", fields.list_local_fields),
    ("POST", "/queues/{queue}/localFields", fields.create_local_field),
    ("GET", "/queues/{queue}/localFields/{field_key}", fields.get_local_field),
    ("PATCH", "/queues/{queue}/localFields/{field_key}", fields.patch_local_field),
    ("GET", "/components", structure.list_components),
    ("POST", "/components", structure.create_component),
    ("GET", "/components/{component_id}", structure.get_component),
    ("PATCH", "/components/{component_id}", structure.patch_component),
    ("DELETE", "/components/{component_id}", structure.delete_component),
    ("GET", "/versions", structure.list_versions),
    ("POST", "/versions", structure.create_version),
    ("GET", "/versions/{version_id}", structure.get_version),
    ("PATCH", "/versions/{version_id}", structure.patch_version),
    ("DELETE", "/versions/{version_id}", structure.delete_version),
    ("GET", "/boards", boards.list_boards),
    ("POST", "/boards", boards.create_board),
    ("POST", "/liveBoards", boards.create_board),
    ("GET", "/boards/_paginate", boards.paginate_boards),
    ("GET", "/boards/{board_id}", boards.get_board),
    ("PATCH", "/boards/{board_id}", boards.patch_board),
    ("DELETE", "/boards/{board_id}", boards.delete_board),
    ("GET", "/boards/{board_id}/columns", boards.list_columns),
    ("POST", "/boards/{board_id}/columns", boards.create_column),
    ("GET", "/boards/{board_id}/columns/{column_id}", boards.get_column),
    ("PATCH", "/boards/{board_id}/columns/{column_id}", boards.patch_column),
    ("DELETE", "/boards/{board_id}/columns/{column_id}", boards.delete_column),
    ("GET", "/boards/{board_id}/sprints", boards.list_board_sprints),
    ("POST", "/sprints", boards.create_sprint),
    ("GET", "/sprints/{sprint_id}", boards.get_sprint),
    ("GET", "/users", dicts.list_users),
    ("GET", "/users/{user}", dicts.get_user),
    *planning.API,  # the planning layer: entities, filters, dashboards, remote links, ...
    *triggers.API,  # a queue's triggers and macros
)
VERSIONS = ("/v3", "/v2")


def _control(request: Request) -> None:
    """The /_sandbox endpoints take the admin token and no organisation."""
    is_admin = is_admin_token(world_of(request), request.headers.get("authorization"))
    if is_admin is None:
        raise ApiError(401, "Authorization required: the OAuth token is missing or invalid")
    if not is_admin:
        raise ApiError(403, "The sandbox control endpoints need the admin token")


async def get_faults(request: Request) -> Response:
    _control(request)
    return JSONResponse({"spec": request.app.state.faults.spec})


async def put_faults(request: Request) -> Response:
    """PUT /_sandbox/faults {"spec": "..."}: replace the fault spec; 400 if malformed."""
    _control(request)
    spec = (await json_object(request)).get("spec", "")
    if not isinstance(spec, str):
        raise ApiError(400, "'spec' must be a string")
    try:
        request.app.state.faults.set(spec)
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    return JSONResponse({"spec": spec})


async def get_hold(request: Request) -> Response:
    """GET /_sandbox/holds/{name}: {"held": n}, the requests the fault hold:NAME has held."""
    _control(request)
    return JSONResponse({"held": _holds(request, request.app.state.faults.held)})


async def release_hold(request: Request) -> Response:
    """POST /_sandbox/holds/{name}/release: the requests hold:NAME keeps go on; 404 if the
    spec has no such hold."""
    _control(request)
    return JSONResponse({"held": _holds(request, request.app.state.faults.release)})


def _holds(request: Request, action: Callable[[str], int]) -> int:
    try:
        return action(request.path_params["name"])
    except ValueError as error:
        raise ApiError(404, str(error)) from None


async def get_stats(request: Request) -> Response:
    _control(request)
    return JSONResponse(request.app.state.stats.snapshot())


async def get_notified(request: Request) -> Response:
    """GET /_sandbox/notified: the writes sent with notifications on, by route."""
    _control(request)
    return JSONResponse(request.app.state.stats.notified())


def _routes() -> list[Route]:
    api = [
        Route(prefix + path, endpoint, methods=[method])
        for prefix in VERSIONS
        for method, path, endpoint in API
    ]
    return [
        *api,
        Route("/_sandbox/info", sandbox_info, methods=["GET"]),
        Route("/_sandbox/faults", get_faults, methods=["GET"]),
        Route("/_sandbox/faults", put_faults, methods=["PUT"]),
        Route("/_sandbox/holds/{name}", get_hold, methods=["GET"]),
        Route("/_sandbox/holds/{name}/release", release_hold, methods=["POST"]),
        Route("/_sandbox/stats", get_stats, methods=["GET"]),
        Route("/_sandbox/notified", get_notified, methods=["GET"]),
        Route("/_sandbox/issues/{key}", changes.vanish_issue, methods=["DELETE"]),
        Route("/_sandbox/users/{login}", dicts.remove_user, methods=["DELETE"]),
        Route("/_sandbox/users/{login}/dismissal", dicts.dismiss_user, methods=["POST"]),
        Route("/_sandbox/issues/{key}/updated_at", changes.restamp_issue, methods=["PUT"]),
        Route("/_sandbox/issues/{key}/maillists", edits.follow_maillists, methods=["PUT"]),
        Route(
            "/_sandbox/attachments/{key}/{attachment_id}",
            edits.replace_attachment_bytes,
            methods=["PUT"],
        ),
        Route(
            "/_sandbox/entities/{entity_type}/{entity_id}/parent",
            edits.plant_entity_parent,
            methods=["PUT"],
        ),
        Route("/_sandbox/queues/{queue}/triggers/firings", triggers.trigger_firings),
        Route(
            "/_sandbox/queues/{queue}/autoactions/{action_id}/runs",
            autoactions.plant_run,
            methods=["POST"],
        ),
        Route(
            "/_sandbox/queues/{queue}/permissions/{kind}/{holder}",
            queue_access.set_permissions,
            methods=["PUT"],
        ),
    ]


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error.response()


async def _http_error(request: Request, error: Exception) -> Response:
    """Router 404/405 in the tracker's envelope."""
    assert isinstance(error, HTTPException)
    message = "Not found" if error.status_code == 404 else str(error.detail)
    headers = dict(error.headers) if error.headers else None
    return error_response(error.status_code, [message], headers=headers)


async def _gone(request: Request, error: Exception) -> Response:
    """The client hung up mid-request (killed, timed out): nothing was applied, nobody listens."""
    return error_response(400, ["The client disconnected before the request body was complete"])


async def _crash(request: Request, error: Exception) -> Response:
    return error_response(500, [f"Internal sandbox error: {type(error).__name__}"])


def build_tracker_app(world: World, faults: FaultPlan, stats: RequestStats) -> ASGIApp:
    """The tracker ASGI app serving ``world``, behind the fault and counting middleware."""
    app = Starlette(
        routes=_routes(),
        exception_handlers={
            ApiError: _api_error,
            HTTPException: _http_error,
            ClientDisconnect: _gone,
            Exception: _crash,
        },
    )
    app.state.world = world
    app.state.scrolls = ScrollStore()
    app.state.faults = faults
    app.state.stats = stats
    counted = _counting_notifications(app, stats)
    return _slash_tolerant(FaultMiddleware(counted, faults, stats, lambda: app.routes))


def _counting_notifications(app: Starlette, stats: RequestStats) -> ASGIApp:
    """Count each write that reaches the app with notifications on (`notifications`)."""

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            route = route_name(app.routes, scope)
            if notifies(route, scope.get("query_string", b"")):
                stats.record_notified(route)
        await app(scope, receive, send)

    return serve


def _slash_tolerant(app: ASGIApp) -> ASGIApp:
    """Serve ``/v3/queues/`` as ``/v3/queues``, as the service does, rather than redirect: the
    official SDK asks for every collection with the trailing slash."""

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            trimmed = path.rstrip("/") or "/"
            scope = {**scope, "path": trimmed, "raw_path": trimmed.encode()}
        await app(scope, receive, send)

    return serve
