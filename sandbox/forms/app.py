"""The sandbox forms service as one ASGI app rooted at ``/v1``, behind the shared fault
middleware.

Auth as the tracker's. Errors as ``{"detail": "..."}``, or for invalid input a bare list of
``{"loc", "error_code", "msg"}`` with 422. Choices where the notes are silent: answers
``page_size`` is 1 to 100 (default 25); ``next.next_url`` points at the retired ``/v3/`` route
(which answers 404) with ``id=<last answer id>``, the page size and the filters; an export
operation is ``running`` for two polls, then ``ok``, and its result redirects to
``/v1/operations/{id}/file``; filling takes ``{slug: value}`` (a sandbox-only ``_created`` in
ms backdates the answer, for tests); a stored file is read with ``GET /files?path=``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from haul.sandbox.faults import FaultMiddleware, FaultPlan, RequestStats
from haul.sandbox.forms.model import Answer, FormsOrg, Operation, Survey, build_forms
from haul.sandbox.timefmt import format_ms, now_ms, parse_instant
from haul.sandbox.tracker import catalog
from haul.sandbox.tracker.context import is_admin_token
from haul.sandbox.tracker.model import Org, User, World

ROOT = "/v1"
DEFAULT_PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
_SURVEY_ID = re.compile(r"^[a-fA-F\d]{24}$")


class FormsError(Exception):
    """Rendered as `{"detail": ...}`, or as the list of items for a 422."""

    def __init__(self, status: int, detail: str, *, loc: list[str] | None = None,
                 code: str = "invalid") -> None:  # fmt: skip
        super().__init__(detail)
        self.status, self.detail, self.loc, self.code = status, detail, loc, code

    def response(self) -> JSONResponse:
        if self.loc is not None:
            body: Any = [{"loc": self.loc, "error_code": self.code, "msg": self.detail}]
        else:
            body = {"detail": self.detail}
        return JSONResponse(body, status_code=self.status)


def invalid(where: str, message: str, code: str = "invalid") -> FormsError:
    return FormsError(422, message, loc=["query", where], code=code)


def created_of(ms: int) -> str:
    return format_ms(ms).replace("+0000", "Z")


class Call:
    def __init__(self, request: Request) -> None:
        world: World = request.app.state.world
        is_admin = is_admin_token(world, request.headers.get("authorization"))
        if is_admin is None:
            raise FormsError(401, "Authorization required")
        org_id = (
            request.headers.get("x-org-id") or request.headers.get("x-cloud-org-id") or ""
        ).strip()
        if org_id not in world.orgs:
            raise FormsError(401, f"Organization {org_id!r} is unknown or not given")
        self.tracker_org: Org = world.orgs[org_id]
        self.org: FormsOrg = request.app.state.forms.orgs[org_id]
        user = self.tracker_org.find_user(catalog.ADMIN_LOGIN if is_admin else catalog.USER_LOGIN)
        assert user is not None
        self.user: User = user

    def survey(self, survey_id: str) -> Survey:
        if not _SURVEY_ID.match(survey_id):
            raise FormsError(422, "survey_id: not 24 hexadecimal digits", loc=["path", "survey_id"],
                             code="pattern")  # fmt: skip
        survey = self.org.surveys.get(survey_id.lower())
        if survey is None:
            raise FormsError(404, "Survey not found")
        return survey


def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid(name, "value is not a valid integer", "int_parsing") from None
    if not low <= value <= high:
        raise invalid(name, f"must be {low} to {high}", "range")
    return value


def _author(user: User) -> dict[str, Any]:
    return {
        "display_name": user.display,
        "identity": {"uid": str(user.uid), "cloud_uid": user.cloud_uid},
        "username": user.login,
    }


def survey_brief(call: Call, survey: Survey) -> dict[str, Any]:
    return {
        "answers": len(survey.answers),
        "collab_id": f"collab-{call.tracker_org.id}",
        "created": created_of(survey.created),
        "dir_id": call.tracker_org.id,
        "id": survey.id,
        "is_favourite": False,
        "is_public": False,
        "is_published": survey.published,
        "language": "en",
        "modified": created_of(survey.answers[-1].created if survey.answers else survey.created),
        "name": survey.name,
    }


def survey_full(call: Call, survey: Survey) -> dict[str, Any]:
    return {
        **survey_brief(call, survey),
        "allow_multiple_answers": True,
        "author": _author(survey.author),
        "auto_publication": False,
        "captcha": False,
        "fill_again": True,
        "footer": True,
        "iframe": False,
        "need_auth": False,
        "share": True,
        "show_last_answer": False,
        "stats": False,
        "teaser": True,
        "texts": {
            "back": "Back",
            "next": "Next",
            "redirect": "",
            "submit": "Send",
            "subtitle": "",
            "title": survey.name,
        },
    }


async def me(request: Request) -> Response:
    call = Call(request)
    user = call.user
    return JSONResponse({"id": user.uid, "uid": str(user.uid), "cloud_uid": user.cloud_uid,
                         "email": user.email})  # fmt: skip


async def list_surveys(request: Request) -> Response:
    call = Call(request)
    offset = _int(request, "offset", 0, 0, 10**9)
    limit = _int(request, "limit", 20, 1, 100)
    surveys = sorted(call.org.surveys.values(), key=lambda s: s.created)
    page = surveys[offset : offset + limit]
    links: dict[str, str] = {}
    if offset + limit < len(surveys):
        links["next"] = f"{ROOT}/surveys?offset={offset + limit}&limit={limit}"
    return JSONResponse({"links": links, "result": [survey_brief(call, s) for s in page]})


async def get_survey(request: Request) -> Response:
    call = Call(request)
    return JSONResponse(survey_full(call, call.survey(request.path_params["survey_id"])))


async def list_questions(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    half = (len(survey.questions) + 1) // 2
    pages = [survey.questions[:half], survey.questions[half:]]
    return JSONResponse({"pages": [{"id": i + 1, "items": [q.json() for q in items]}
                                   for i, items in enumerate(pages) if items]})  # fmt: skip


def _cell(value: Any) -> dict[str, Any] | None:
    return None if value is None else {"value": value}


async def list_answers(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    size = _int(request, "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)
    ordering = request.query_params.get("ordering", "desc")
    if ordering not in ("asc", "desc"):
        raise invalid("ordering", "asc or desc", "enum")
    after = request.query_params.get("id")
    answers = survey.answers if ordering == "asc" else survey.answers[::-1]
    for name in ("date_from", "date_to"):
        raw = request.query_params.get(name)
        if raw:
            moment = parse_instant(raw)
            if moment is None:
                raise invalid(name, "not a date", "date_parsing")
            if name == "date_from":
                answers = [a for a in answers if a.created >= moment]
            else:
                answers = [a for a in answers if a.created <= moment]
    if after:
        try:
            cursor = int(after)
        except ValueError:
            raise invalid("id", "value is not a valid integer", "int_parsing") from None
        answers = [a for a in answers if (a.id > cursor if ordering == "asc" else a.id < cursor)]
    page = answers[:size]
    use_slugs = request.query_params.get("use_slugs", "false").lower() == "true"
    raw_format = request.query_params.get("format") == "raw"
    questions = survey.questions
    body: dict[str, Any] = {}
    if not raw_format:
        body["columns"] = [
            {"id": q.id, "slug": q.slug if use_slugs else str(q.id), "type": q.type,
             "text": q.label, "has_scores": False}
            for q in questions
        ]  # fmt: skip
    body["answers"] = [
        {
            "id": a.id,
            "created": created_of(a.created),
            "data": (
                {
                    (q.slug if use_slugs else str(q.id)): a.values[q.slug]
                    for q in questions
                    if q.slug in a.values
                }
                if raw_format
                else [_cell(a.values.get(q.slug)) for q in questions]
            ),
        }
        for a in page
    ]
    more = len(answers) > size
    if more:
        query = [f"id={page[-1].id}", f"page_size={size}", f"ordering={ordering}"]
        query += [
            f"{k}={request.query_params[k]}"
            for k in ("date_from", "date_to")
            if request.query_params.get(k)
        ]
        body["next"] = {"next_url": f"/v3/surveys/{survey.id}/answers?{'&'.join(query)}"}
    else:
        body["next"] = None
    return JSONResponse(body)


async def get_answer(request: Request) -> Response:
    call = Call(request)
    raw = request.query_params.get("answer_id")
    if not raw or not raw.isdigit():
        raise invalid("answer_id", "field required", "missing")
    for survey in call.org.surveys.values():
        for answer in survey.answers:
            if answer.id == int(raw):
                data = [
                    {
                        "question": {"id": q.id, "slug": q.slug, "type": q.type},
                        "value": answer.values[q.slug],
                    }
                    for q in survey.questions
                    if q.slug in answer.values
                ]
                return JSONResponse({
                    "id": answer.id, "created": created_of(answer.created), "started": created_of(answer.created),
                    "data": data, "quiz": None, "survey": {"id": survey.id, "name": survey.name},
                })  # fmt: skip
    raise FormsError(404, "Answer not found")


async def fill(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    if not survey.published:
        raise FormsError(400, "The form is not published")
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        raise FormsError(422, "not JSON", loc=["body"], code="json") from None
    if not isinstance(body, dict):
        raise FormsError(422, "an object of question slug -> value", loc=["body"], code="type")
    slugs = {q.slug: q for q in survey.questions}
    unknown = set(body) - set(slugs) - {"_created"}
    if unknown:
        raise FormsError(422, f"no question {sorted(unknown)[0]}", loc=["body", sorted(unknown)[0]])
    missing = [q.slug for q in survey.questions if q.required and not body.get(q.slug)]
    if missing:
        raise FormsError(422, "field required", loc=["body", missing[0]], code="missing")
    created = int(body.pop("_created", 0)) or now_ms()
    values = {slug: value for slug, value in body.items() if value is not None}
    answer = Answer(request.app.state.forms.next_answer_id(call.org), created, values)
    survey.answers.append(answer)
    survey.answers.sort(key=lambda a: a.id)
    return JSONResponse({"answer_id": answer.id, "answer_key": uuid.uuid4().hex, "correct": False,
                         "id": survey.id, "integrations": [], "name": survey.name,
                         "subtitle": "", "title": "Thank you"})  # fmt: skip


async def set_published(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    survey.published = request.url.path.endswith("/publish")
    return JSONResponse({"status": "ok"})


def _export_bytes(survey: Survey, kind: str) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "created", *[q.slug for q in survey.questions]])
    for a in survey.answers:
        values = [a.values.get(q.slug) for q in survey.questions]
        writer.writerow(
            [
                a.id,
                created_of(a.created),
                *[", ".join(v) if isinstance(v, list) else (v or "") for v in values],
            ]
        )
    return out.getvalue().encode()


async def start_export(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    raw = await request.body()
    body = json.loads(raw) if raw.strip() else {}
    kind = body.get("format", "csv")
    if kind not in ("csv", "xlsx", "json"):
        raise FormsError(422, "csv, xlsx or json", loc=["body", "format"], code="enum")
    operation = Operation(uuid.uuid4().hex, survey.id, kind, data=_export_bytes(survey, kind))
    call.org.operations[operation.id] = operation
    return JSONResponse({"id": operation.id, "status": "running", "message": None, "result": None})


def _operation(call: Call, operation_id: str) -> Operation:
    operation = call.org.operations.get(operation_id)
    if operation is None:
        raise FormsError(404, "Operation not found")
    return operation


async def get_operation(request: Request) -> Response:
    call = Call(request)
    operation = _operation(call, request.path_params["operation_id"])
    operation.polls_left -= 1
    result = {"url": f"{ROOT}/operations/{operation.id}/file"} if operation.status == "ok" else None
    return JSONResponse(
        {"id": operation.id, "status": operation.status, "message": None, "result": result}
    )


async def export_results(request: Request) -> Response:
    call = Call(request)
    call.survey(request.path_params["survey_id"])
    operation = _operation(call, request.query_params.get("task_id") or "")
    operation.polls_left -= 1
    if operation.status != "ok":
        return JSONResponse({"id": operation.id, "status": operation.status}, status_code=202)
    base = str(request.base_url).rstrip("/")
    return RedirectResponse(f"{base}{ROOT}/operations/{operation.id}/file", status_code=302)


async def export_file(request: Request) -> Response:
    call = Call(request)
    operation = _operation(call, request.path_params["operation_id"])
    return Response(operation.data, media_type="text/csv")


async def get_file(request: Request) -> Response:
    call = Call(request)
    path = request.query_params.get("path")
    if not path:
        raise invalid("path", "field required", "missing")
    data = call.org.files.get(path)
    if data is None:
        raise FormsError(404, "File not found")
    return Response(data, media_type="application/octet-stream")


API = (
    ("GET", "/me", me),
    ("GET", "/surveys", list_surveys),
    ("GET", "/surveys/{survey_id}", get_survey),
    ("GET", "/surveys/{survey_id}/questions", list_questions),
    ("GET", "/surveys/{survey_id}/answers", list_answers),
    ("POST", "/surveys/{survey_id}/answers/export", start_export),
    ("GET", "/surveys/{survey_id}/answers/export-results", export_results),
    ("POST", "/surveys/{survey_id}/form", fill),
    ("POST", "/surveys/{survey_id}/publish", set_published),
    ("POST", "/surveys/{survey_id}/unpublish", set_published),
    ("GET", "/answers", get_answer),
    ("GET", "/operations/{operation_id}", get_operation),
    ("GET", "/operations/{operation_id}/file", export_file),
    ("GET", "/files", get_file),
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
    return JSONResponse(
        {"detail": f"Internal sandbox error: {type(error).__name__}"}, status_code=500
    )


def build_forms_app(world: World, faults: FaultPlan, stats: RequestStats) -> ASGIApp:
    """The forms ASGI app serving `world`'s orgs, behind the fault and counting middleware."""
    routes = [Route(ROOT + path, endpoint, methods=[method]) for method, path, endpoint in API]
    app = Starlette(
        routes=routes,
        exception_handlers={
            FormsError: _forms_error,
            HTTPException: _http_error,
            ClientDisconnect: _gone,
            Exception: _crash,
        },
    )
    app.state.world = world
    app.state.forms = build_forms(world)
    return FaultMiddleware(app, faults, stats, lambda: app.routes)
