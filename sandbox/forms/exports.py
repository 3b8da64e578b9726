"""The export operation and stored files.

``POST /surveys/{id}/answers/export`` takes ``{format: csv|xlsx|json (default xlsx), columns:
[question ids or slugs], started_at, finished_at, limit, pks: [answer ids]}`` (all optional;
``upload`` and ``upload_files`` are accepted and ignored) and answers the operation ``{id,
status, message, result}``. Each look at it (``GET /operations/{id}`` or the export results)
counts: the first says ``wait``, the later ones ``ok``. ``GET /surveys/{id}/answers/
export-results?task_id=`` answers 202 ``{id, status}`` while it waits, then 302 to
``/v1/operations/{id}/download``, which serves the file. A file has a header row ``id,
created, <slug>...``; lists are joined with ", " and files named by path (json: a list of
``{id, created, answers: {slug: value}}``, files as objects).

Stored files: ``GET /files/{file_id}`` or ``GET /files?path=<path>`` (the path or url an
answer's files value gives), with ``download=true`` for a Content-Disposition filename.
"""

from __future__ import annotations

import csv
import io
import json
import mimetypes
import secrets
from collections.abc import Iterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from haul.sandbox.forms.answers import stored, wire_time
from haul.sandbox.forms.context import (
    Call,
    FormsError,
    checked_int,
    instant,
    invalid,
    json_object,
    not_found,
    query_bool,
)
from haul.sandbox.forms.model import ROOT, Answer, Operation, Question, StoredFile, Survey

FORMATS = {
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
}


async def start_export(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    body = await json_object(request)
    kind = body.get("format") or "xlsx"
    if kind not in FORMATS:
        raise invalid("body", "format", f"one of {', '.join(FORMATS)}", "enum")
    operation = Operation(
        secrets.token_hex(12), survey, kind, _columns(survey, body), _answers(survey, body)
    )
    call.org.operations[operation.id] = operation
    return JSONResponse(_operation_body(call, operation))


def _columns(survey: Survey, body: dict[str, Any]) -> list[Question]:
    wanted = body.get("columns")
    if wanted is None:
        return survey.questions
    if not isinstance(wanted, list):
        raise invalid("body", "columns", "a list of question ids or slugs", "list_type")
    names = {str(item) for item in wanted}
    return [q for q in survey.questions if str(q.id) in names or q.slug in names]


def _answers(survey: Survey, body: dict[str, Any]) -> list[Answer]:
    answers = survey.answers
    if body.get("started_at"):
        since = instant("body", "started_at", body["started_at"])
        answers = [answer for answer in answers if answer.created >= since]
    if body.get("finished_at"):
        until = instant("body", "finished_at", body["finished_at"])
        answers = [answer for answer in answers if answer.created <= until]
    if body.get("pks") is not None:
        if not isinstance(body["pks"], list):
            raise invalid("body", "pks", "a list of answer ids", "list_type")
        pks = {checked_int("body", "pks", pk, 0, 2**63) for pk in body["pks"]}
        answers = [answer for answer in answers if answer.id in pks]
    if body.get("limit"):
        answers = answers[: checked_int("body", "limit", body["limit"], 1, 2**31)]
    return list(answers)


def _operation_body(call: Call, operation: Operation) -> dict[str, Any]:
    done = operation.status == "ok"
    result = {"url": call.absolute(_download_path(operation))} if done else None
    return {"id": operation.id, "status": operation.status, "message": None, "result": result}


def _download_path(operation: Operation) -> str:
    return f"{ROOT}/operations/{operation.id}/download"


async def get_operation(request: Request) -> Response:
    call = Call(request)
    operation = call.operation(request.path_params["operation_id"])
    operation.look()
    return JSONResponse(_operation_body(call, operation))


async def export_results(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    operation = call.operation(request.query_params.get("task_id") or "")
    if operation.survey is not survey:
        raise not_found("Operation")
    if operation.look() != "ok":
        return JSONResponse({"id": operation.id, "status": operation.status}, status_code=202)
    return RedirectResponse(call.absolute(_download_path(operation)), status_code=302)


async def download_export(request: Request) -> Response:
    call = Call(request)
    operation = call.operation(request.path_params["operation_id"])
    if operation.status != "ok":
        raise FormsError(409, "The export is not finished yet")
    data = await run_in_threadpool(RENDERERS[operation.format], operation)
    filename = f"{operation.survey.id}.{operation.format}"
    return Response(data, media_type=FORMATS[operation.format], headers=_disposition(filename))


def _disposition(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"'}


def _rows(operation: Operation) -> Iterator[list[Any]]:
    yield ["id", "created", *(q.slug for q in operation.questions)]
    for answer in operation.answers:
        values = [answer.values.get(q.slug) for q in operation.questions]
        yield [answer.id, wire_time(answer.created), *(_flat(value) for value in values)]


def _flat(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(item.path if isinstance(item, StoredFile) else item for item in value)
    return value or ""


def _csv(operation: Operation) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(_rows(operation))
    return out.getvalue().encode()


def _xlsx(operation: Operation) -> bytes:
    from openpyxl import Workbook  # only an xlsx export needs it

    book = Workbook(write_only=True)
    sheet = book.create_sheet("answers")
    for row in _rows(operation):
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _json(operation: Operation) -> bytes:
    items = [
        {
            "id": answer.id,
            "created": wire_time(answer.created),
            "answers": {
                q.slug: stored(answer.values[q.slug])
                for q in operation.questions
                if q.slug in answer.values
            },
        }
        for answer in operation.answers
    ]
    return json.dumps(items, ensure_ascii=False).encode()


RENDERERS = {"csv": _csv, "xlsx": _xlsx, "json": _json}


# -- stored files -------------------------------------------------------------------------


async def get_file(request: Request) -> Response:
    call = Call(request)
    path = request.query_params.get("path")
    if not path:
        raise invalid("query", "path", "field required", "missing")
    return _file_reply(request, call.org.file_at(path))


async def get_file_by_id(request: Request) -> Response:
    call = Call(request)
    return _file_reply(request, call.org.files.get(request.path_params["file_id"]))


def _file_reply(request: Request, found: StoredFile | None) -> Response:
    if found is None:
        raise not_found("File")
    kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
    headers = _disposition(found.name) if query_bool(request, "download") else None
    return Response(found.content(), media_type=kind, headers=headers)
