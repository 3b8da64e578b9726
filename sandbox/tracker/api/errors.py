"""The tracker's error envelope: ``{"errors": {...}, "errorMessages": [...], "statusCode": N}``."""

from __future__ import annotations

from starlette.responses import JSONResponse


class ApiError(Exception):
    """Raised by any endpoint; rendered as the error envelope with ``status``."""

    def __init__(
        self,
        status: int,
        message: str | None = None,
        *,
        errors: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message or f"HTTP {status}")
        self.status = status
        self.messages = [message] if message else []
        self.errors = errors or {}
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        return error_response(self.status, self.messages, self.errors, self.headers)


def error_response(
    status: int,
    messages: list[str],
    errors: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = {"errors": errors or {}, "errorMessages": messages, "statusCode": status}
    return JSONResponse(body, status_code=status, headers=headers)


def invalid(errors: dict[str, str]) -> ApiError:
    """A 422 naming each offending field, as the import endpoints answer."""
    return ApiError(422, "Validation failed: " + ", ".join(sorted(errors)), errors=errors)


def issue_not_found(key: str) -> ApiError:
    return ApiError(404, "Issue does not exist.", errors={"issue": key})
