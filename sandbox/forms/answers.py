"""Answers: the list drained through ``next.next_url``, one answer, and filling a form.

The list is ``{columns, answers, next}``: each answer's ``data`` holds one cell per column,
``{"value": v}`` or null when unanswered; v is a string or a list of strings (a files cell
lists the files' paths). ``next`` is null on the last page, else ``{"next_url":
"/v3/surveys/<id>/answers?id=<last id>&page_size=<n>&ordering=<o>[&<filters as given>]"}``:
the retired route (it answers 404), so a client carries only its query onto ``/v1``. ``id``
is an exclusive cursor in the chosen ordering (default desc). ``date_from``/``date_to`` bound
``created``, both inclusive. Without ``use_slugs`` columns and raw keys are question ids (as
strings) and enum values their labels; with it, slugs both. ``format=raw`` drops ``columns``
and gives ``data`` as stored: ``{name: value}`` of the answered questions, files as
``{name, size, path, url}``.
"""

from __future__ import annotations

import base64
import bisect
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.forms.context import (
    Call,
    FormsError,
    checked_int,
    instant,
    invalid,
    json_object,
    not_found,
    query_bool,
    query_choice,
    query_int,
)
from haul.sandbox.forms.model import (
    Answer,
    FormsOrg,
    Question,
    StoredFile,
    Survey,
    Value,
    answer_key,
)
from haul.sandbox.timefmt import format_date, format_ms, now_ms

DEFAULT_PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
FILTERS = ("date_from", "date_to", "questions", "use_slugs", "format")  # echoed in next_url


def wire_time(ms: int) -> str:
    """``2024-01-01T00:00:00.000Z``."""
    return format_ms(ms).replace("+0000", "Z")


def stored(value: Value) -> Any:
    """A value as stored: files as their ``{name, size, path, url}``."""
    if isinstance(value, list):
        return [item.wire() if isinstance(item, StoredFile) else item for item in value]
    return value


def cell_value(question: Question, value: Value, use_slugs: bool) -> Any:
    """A value as a list cell shows it: a string or a list of strings."""
    if isinstance(value, list):
        items = [item.path if isinstance(item, StoredFile) else item for item in value]
    else:
        items = [value]
    if question.type == "enum" and not use_slugs:
        items = [question.option_label(item) for item in items]
    return items if isinstance(value, list) else items[0]


@dataclass(frozen=True)
class AnswersQuery:
    """What a list request asks for, read from its query string."""

    size: int
    after: int | None
    ordering: str
    date_from: int | None
    date_to: int | None
    questions: list[Question]
    use_slugs: bool
    raw: bool
    filters: list[tuple[str, str]]

    @classmethod
    def read(cls, request: Request, survey: Survey) -> AnswersQuery:
        params = request.query_params
        after = params.get("id")
        dates = {
            name: instant("query", name, params[name])
            for name in ("date_from", "date_to")
            if params.get(name)
        }
        return cls(
            size=query_int(request, "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE),
            after=None if not after else checked_int("query", "id", after, 0, 2**63),
            ordering=query_choice(request, "ordering", ("desc", "asc")),
            date_from=dates.get("date_from"),
            date_to=dates.get("date_to"),
            questions=_chosen(survey, params.get("questions")),
            use_slugs=query_bool(request, "use_slugs"),
            raw=query_choice(request, "format", ("default", "raw")) == "raw",
            filters=[(name, params[name]) for name in FILTERS if params.get(name)],
        )

    def page(self, answers: list[Answer]) -> tuple[list[Answer], bool]:
        """The answers of this page, and whether more follow."""
        found: list[Answer] = []
        for index in self._indexes(answers):
            answer = answers[index]
            if self.date_from is not None and answer.created < self.date_from:
                continue
            if self.date_to is not None and answer.created > self.date_to:
                continue
            found.append(answer)
            if len(found) > self.size:
                return found[: self.size], True
        return found, False

    def _indexes(self, answers: list[Answer]) -> range:
        """Where the answers after the cursor lie (the list is in id order), in the ordering."""
        if self.ordering == "asc":
            start = 0 if self.after is None else bisect.bisect_right(answers, self.after, key=_id)
            return range(start, len(answers))
        end = (
            len(answers) if self.after is None else bisect.bisect_left(answers, self.after, key=_id)
        )
        return range(end - 1, -1, -1)

    def name(self, question: Question) -> str:
        return question.slug if self.use_slugs else str(question.id)

    def column(self, question: Question) -> dict[str, Any]:
        return {"id": question.id, "slug": self.name(question), "type": question.type,
                "text": question.label, "has_scores": False}  # fmt: skip

    def render(self, answer: Answer) -> dict[str, Any]:
        values = answer.values
        data: Any
        if self.raw:
            data = {
                self.name(q): stored(values[q.slug]) for q in self.questions if q.slug in values
            }
        else:
            data = [self._cell(q, values.get(q.slug)) for q in self.questions]
        return {"id": answer.id, "created": wire_time(answer.created), "data": data}

    def _cell(self, question: Question, value: Value | None) -> dict[str, Any] | None:
        return None if value is None else {"value": cell_value(question, value, self.use_slugs)}

    def next_url(self, survey: Survey, last: Answer) -> str:
        query = [("id", str(last.id)), ("page_size", str(self.size)), ("ordering", self.ordering)]
        return f"/v3/surveys/{survey.id}/answers?{urlencode(query + self.filters)}"


def _id(answer: Answer) -> int:
    return answer.id


def _chosen(survey: Survey, raw: str | None) -> list[Question]:
    """The questions named by ``questions`` (comma-separated ids), else all of them."""
    if not raw:
        return survey.questions
    wanted = {checked_int("query", "questions", part, 0, 2**63) for part in raw.split(",")}
    return [question for question in survey.questions if question.id in wanted]


async def list_answers(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    query = AnswersQuery.read(request, survey)
    page, more = query.page(survey.answers)
    body: dict[str, Any] = {}
    if not query.raw:
        body["columns"] = [query.column(question) for question in query.questions]
    body["answers"] = [query.render(answer) for answer in page]
    body["next"] = {"next_url": query.next_url(survey, page[-1])} if more else None
    return JSONResponse(body)


async def get_answer(request: Request) -> Response:
    """``GET /answers?answer_id=N`` or ``?answer_key=K`` (exactly one of them)."""
    call = Call(request)
    by_id, by_key = request.query_params.get("answer_id"), request.query_params.get("answer_key")
    if bool(by_id) == bool(by_key):
        raise invalid("query", "answer_id", "give exactly one of answer_id and answer_key")
    if by_id:
        found = call.org.find_answer(checked_int("query", "answer_id", by_id, 0, 2**63))
    else:
        found = call.org.find_answer_by_key(str(by_key))
    if found is None:
        raise not_found("Answer")
    survey, answer = found
    data = [
        {"id": q.id, "slug": q.slug, "label": q.label, "type": q.type,
         "value": stored(answer.values[q.slug])}
        for q in survey.questions
        if q.slug in answer.values
    ]  # fmt: skip
    return JSONResponse({
        "id": answer.id,
        "answer_key": answer_key(survey.id, answer.id),
        "created": wire_time(answer.created),
        "started": wire_time(answer.created - 60_000 - answer.id % 600 * 1000),
        "data": data,
        "quiz": None,
        "survey": {"id": survey.id, "name": survey.name},
    })  # fmt: skip


# -- filling ------------------------------------------------------------------------------


async def fill(request: Request) -> Response:
    """``POST /surveys/{id}/form`` with ``{slug: value}``: a new answer, created now (or at
    the sandbox-only ``_created``: ISO-8601 or ms; also ``created`` when no question has that
    slug)."""
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    if not survey.published:
        raise FormsError(400, "The form is not published")
    body = await json_object(request)
    created = _created(survey, body)
    values: dict[str, Value] = {}
    for slug, raw in body.items():
        question = survey.question(slug)
        if question is None:
            raise invalid("body", slug, f"the form has no question {slug!r}", "unknown_question")
        if raw is not None and raw != "" and raw != []:
            values[slug] = _filled(question, raw, call.org, survey)
    for question in survey.questions:
        if question.required and question.slug not in values:
            raise invalid("body", question.slug, "this question requires an answer", "missing")
    answer = Answer(call.org.new_answer_id(), created, values)
    survey.answers.append(answer)  # the newest id: the list stays in id order
    survey.modified = now_ms()
    return JSONResponse({
        "answer_id": answer.id, "answer_key": answer_key(survey.id, answer.id),
        "correct": False, "id": survey.id, "integrations": [], "name": survey.name,
        "subtitle": "", "title": "Thank you!",
    })  # fmt: skip


def _created(survey: Survey, body: dict[str, Any]) -> int:
    for name in ("_created", "created"):
        if name in body and survey.question(name) is None:
            raw = body.pop(name)
            if isinstance(raw, int) and not isinstance(raw, bool):
                return raw
            return instant("body", name, raw)
    return now_ms()


def _filled(question: Question, raw: Any, org: FormsOrg, survey: Survey) -> Value:
    """A filled value checked against its question's type, as it is stored."""
    slug, kind = question.slug, question.type
    if kind == "files":
        return [_filled_file(slug, item, org, survey) for item in _listed(slug, raw)]
    if kind == "enum":
        chosen = [_option(question, item) for item in _listed(slug, raw)]
        if not question.multiple and len(chosen) != 1:
            raise invalid("body", slug, "choose one option", "single_option")
        return chosen if question.multiple else chosen[0]
    if isinstance(raw, list):
        if kind not in ("matrix", "series"):
            raise invalid("body", slug, f"a {kind} question takes one value", "string_type")
        return [str(item) for item in raw]
    if kind == "integer":
        return str(checked_int("body", slug, raw, -(2**63), 2**63))
    if kind == "boolean":
        text = str(raw).lower()
        if text not in ("true", "false"):
            raise invalid("body", slug, "true or false", "bool_parsing")
        return text
    if kind == "date":
        return format_date(instant("body", slug, raw))
    return str(raw)


def _listed(slug: str, raw: Any) -> list[Any]:
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise invalid("body", slug, "give at least one value", "too_short")
    return items


def _option(question: Question, item: Any) -> str:
    for option in question.options:
        if str(item) in (option, question.option_label(option)):
            return option
    raise invalid("body", question.slug, f"not an option: {item!r}", "enum")


def _filled_file(slug: str, item: Any, org: FormsOrg, survey: Survey) -> StoredFile:
    """A stored file's path, or ``{"name", "content"}`` (text) / ``{"name", "content_base64"}``."""
    if isinstance(item, str):
        found = org.file_at(item)
        if found is None:
            raise invalid("body", slug, f"no stored file at {item!r}", "file_not_found")
        return found
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise invalid("body", slug, "a file is a stored path or {name, content}", "file_type")
    try:
        if "content_base64" in item:
            data = base64.b64decode(str(item["content_base64"]), validate=True)
        else:
            data = str(item.get("content", "")).encode()
    except ValueError:
        raise invalid("body", slug, "content_base64 is not base64", "file_content") from None
    name = item["name"].rpartition("/")[2] or "file"
    return org.keep_file(StoredFile(secrets.token_hex(8), survey.id, name, len(data), data=data))
