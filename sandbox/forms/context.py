"""Per-request context of the forms sandbox: who calls in which org, the error replies, and
the reading of query parameters and bodies.

Auth as the tracker's: ``Authorization: OAuth <token>`` or ``Bearer <token>`` and ``X-Org-Id``
or ``X-Cloud-Org-Id``; a missing or unknown token or org is 401. Errors are ``{"detail": ...}``;
invalid input is 422 with a bare list of ``{"loc", "error_code", "msg"}`` items.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from haul.sandbox.forms.model import FormsOrg, Operation, Survey
from haul.sandbox.timefmt import parse_instant
from haul.sandbox.world import NotAuthorized, identify

_SURVEY_ID = re.compile(r"^[a-fA-F\d]{24}$")
TRUE = ("true", "1", "yes")
FALSE = ("false", "0", "no", "")


class FormsError(Exception):
    """Rendered as ``{"detail": ...}``, or (with ``loc``) as the list of one item."""

    def __init__(
        self, status: int, detail: str, *, loc: list[str] | None = None, code: str = "invalid"
    ) -> None:
        super().__init__(detail)
        self.status, self.detail, self.loc, self.code = status, detail, loc, code

    def response(self) -> JSONResponse:
        body: Any = {"detail": self.detail}
        if self.loc is not None:
            body = [{"loc": self.loc, "error_code": self.code, "msg": self.detail}]
        return JSONResponse(body, status_code=self.status)


def invalid(where: str, name: str, message: str, code: str = "invalid") -> FormsError:
    """A 422 naming the offending input: ``where`` is query, path or body."""
    return FormsError(422, message, loc=[where, name], code=code)


def not_found(what: str) -> FormsError:
    return FormsError(404, f"{what} not found")


class Call:
    """Who calls, in which org: the tracker org (users) and its forms."""

    def __init__(self, request: Request) -> None:
        try:
            self.tracker_org, self.user, _ = identify(request.app.state.world, request)
        except NotAuthorized as exc:
            raise FormsError(401, str(exc)) from None
        self.request = request
        self.org: FormsOrg = request.app.state.forms.orgs[self.tracker_org.id]

    def survey(self, survey_id: str) -> Survey:
        """The survey by its 24-hex id: 422 for another form of id, 404 for an unknown one."""
        if not _SURVEY_ID.match(survey_id):
            raise invalid("path", "survey_id", "not 24 hexadecimal digits", "pattern")
        survey = self.org.surveys.get(survey_id.lower())
        if survey is None:
            raise not_found("Survey")
        return survey

    def operation(self, operation_id: str) -> Operation:
        operation = self.org.operations.get(operation_id)
        if operation is None:
            raise not_found("Operation")
        return operation

    def absolute(self, path: str) -> str:
        return str(self.request.base_url).rstrip("/") + path


def query_int(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    return checked_int("query", name, raw, low, high)


def checked_int(where: str, name: str, raw: object, low: int, high: int) -> int:
    try:
        value = int(str(raw))
    except ValueError:
        raise invalid(where, name, "value is not a valid integer", "int_parsing") from None
    if value < low:
        raise invalid(where, name, f"must be at least {low}", "greater_than_equal")
    if value > high:
        raise invalid(where, name, f"must be at most {high}", "less_than_equal")
    return value


def query_bool(request: Request, name: str) -> bool:
    raw = request.query_params.get(name, "").lower()
    if raw not in TRUE + FALSE:
        raise invalid("query", name, "value is not a valid boolean", "bool_parsing")
    return raw in TRUE


def query_choice(request: Request, name: str, choices: tuple[str, ...]) -> str:
    raw = request.query_params.get(name) or choices[0]
    if raw not in choices:
        raise invalid("query", name, f"one of {', '.join(choices)}", "enum")
    return raw


def instant(where: str, name: str, raw: object) -> int:
    moment = parse_instant(raw)
    if moment is None:
        raise invalid(where, name, "not an ISO-8601 date or time", "datetime_parsing")
    return moment


async def json_object(request: Request) -> dict[str, Any]:
    """The JSON object of the body (``{}`` when empty); 422 for anything else."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise invalid("body", "body", "the body is not valid JSON", "json_invalid") from None
    if not isinstance(body, dict):
        raise invalid("body", "body", "the body must be a JSON object", "dict_type")
    return body
