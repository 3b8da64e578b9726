"""The sandbox forms service as one ASGI app rooted at ``/v1``, behind the shared fault
middleware.

Routes (auth and errors in ``context.py``; seeded data in ``seed.py``)::

    GET  /v1/me                                     the caller {id, uid, cloud_uid, email}
    GET  /v1/surveys?offset=&limit=                 {links: {next?}, result}; limit 1-100 (20)
    GET  /v1/surveys/{id}                           the whole survey (24-hex id: else 422; 404)
    GET  /v1/surveys/{id}/questions                 {pages: [{id, items}]}
    GET  /v1/surveys/{id}/answers                   {columns, answers, next}  (answers.py)
    GET  /v1/answers?answer_id=|answer_key=         one answer with its survey
    POST /v1/surveys/{id}/form                      fill: {slug: value} -> {answer_id, ...}
    POST /v1/surveys/{id}/publish, .../unpublish    a bare 200
    POST /v1/surveys/{id}/answers/export            the export operation  (exports.py)
    GET  /v1/operations/{op}                        {id, status: wait|ok, message, result}
    GET  /v1/surveys/{id}/answers/export-results?task_id=   202 while waiting, then 302
    GET  /v1/operations/{op}/download               the exported file
    GET  /v1/files/{file_id}, /v1/files?path=       a stored file's bytes

Answers ``page_size`` is 1 to 100 (default 25; more is 422). ``next.next_url`` names the retired
``/v3/`` route, which, like any path outside these, answers 404. Filling takes a JSON object of
question slug -> value: a string or number, a list for several enum options, matrix rows or
series items, and for a files question a list of stored paths or ``{"name", "content"}`` (or
``content_base64``) objects; a sandbox-only ``_created`` (ISO-8601 or ms) backdates the answer.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from haul.sandbox.faults import FaultMiddleware, FaultPlan, RequestStats
from haul.sandbox.forms import answers, changes, exports, routes
from haul.sandbox.forms.context import FormsError
from haul.sandbox.forms.model import ROOT
from haul.sandbox.forms.seed import build_forms
from haul.sandbox.world import World

API = (
    ("GET", "/me", routes.me),
    ("GET", "/surveys", routes.list_surveys),
    ("GET", "/surveys/{survey_id}", routes.get_survey),
    ("GET", "/surveys/{survey_id}/questions", routes.list_questions),
    ("POST", "/surveys/{survey_id}/publish", routes.publish),
    ("POST", "/surveys/{survey_id}/unpublish", routes.unpublish),
    ("GET", "/surveys/{survey_id}/answers", answers.list_answers),
    ("POST", "/surveys/{survey_id}/form", answers.fill),
    ("GET", "/answers", answers.get_answer),
    ("POST", "/surveys/{survey_id}/answers/export", exports.start_export),
    ("GET", "/surveys/{survey_id}/answers/export-results", exports.export_results),
    ("GET", "/operations/{operation_id}", exports.get_operation),
    ("GET", "/operations/{operation_id}/download", exports.download_export),
    ("GET", "/files", exports.get_file),
    ("GET", "/files/{file_id}", exports.get_file_by_id),
    *changes.API,
)


async def _forms_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, FormsError)
    return error.response()


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    return JSONResponse({"detail": str(error.detail)}, status_code=error.status_code)


async def _gone(request: Request, error: Exception) -> Response:
    return JSONResponse({"detail": "The client went away mid-request"}, status_code=400)


async def _crash(request: Request, error: Exception) -> Response:
    detail = f"Internal sandbox error: {type(error).__name__}"
    return JSONResponse({"detail": detail}, status_code=500)


def build_forms_app(world: World, plan: FaultPlan, stats: RequestStats) -> ASGIApp:
    """The forms app serving `world`'s orgs (the source's surveys seeded from its seed and
    size), behind the fault and counting middleware."""
    app = Starlette(
        routes=[Route(ROOT + path, endpoint, methods=[method]) for method, path, endpoint in API],
        exception_handlers={
            FormsError: _forms_error,
            HTTPException: _http_error,
            ClientDisconnect: _gone,
            Exception: _crash,
        },
    )
    app.state.world = world
    app.state.forms = build_forms(world)
    return FaultMiddleware(app, plan, stats, lambda: app.routes)
