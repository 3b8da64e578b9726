"""Every error haul raises on purpose, grouped by what the caller should do about it.

Each class carries the exit status the command line ends with (`exit_code`) and a one-line
message that names the thing (the service and org, the URL, the record, the file) and the
way out. The root is here, at the bottom of the dependency arrows, so that the pipelines'
own errors (config, preflight) descend from it too; the staging store, which may not import
connectors, has its own small tree (`haul.state.errors`) that the runner translates into
`StorageError` where it opens the store.

::

    HaulError                         exit 1 unless a class says otherwise
    ├── HaulHTTPError                 a failed call: service, method, url, status, the
    │   │                             server's own message and the response (if any)
    │   ├── TransientError            the service kept failing (5xx, connection errors) past
    │   │   │                         the outage patience: the same command resumes
    │   │   ├── UnreachableError      no connection before the service answered once in this
    │   │   │                         command: a wrong host or port, or a service down
    │   │   └── RateLimitedError      exit 4: 429s past the rate-limit patience, or a
    │   │                             Retry-After longer than what is left of it
    │   ├── RecordError               give up on this record, carry on with the others (4xx)
    │   │   ├── NotFoundError         404
    │   │   ├── ConflictError         409 (a duplicate key or `unique`, a stale version)
    │   │   ├── ValidationError       400, 413, 422 and any other 4xx but 401/403
    │   │   ├── BodyMismatch          a download whose bytes are not the size announced
    │   │   └── UnexpectedReply       a 2xx reply of the wrong shape for this record
    │   ├── FatalError                stop the run: a person must fix something first
    │   │   ├── AuthError             401 / 403: the token or the org id is wrong
    │   │   ├── RedirectError         redirected to another host (the token is never sent)
    │   │   ├── BadReplyError         a reply that is not the JSON the API promises
    │   │   └── PaginationError       a listing repeats itself or a page is malformed
    │   ├── AmbiguousWriteError       a write may have been applied: ask the target first
    │   └── ScrollExpiredError        the scroll is gone: restart the listing from a watermark
    ├── StorageError                  the staging store cannot be used (see haul.state.errors)
    ├── (shared_budget) NotABudgetFile  exit 2: the shared budget's path is not haul's file;
    │   BudgetFileLocked              its lock held past the wait (a stopped holder)
    └── (pipelines) ConfigError       exit 2, PreflightError, ScrollStalled, Interrupted, ...;
                                      RecordFailure (exit 3: this record is not loaded) and
                                      RecordWaiting (it waits for one a later run brings in)

The token never appears here: errors are built from the request line and the reply body,
and the core redacts the token from server text before it reaches an error.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import httpx

_MAX_TEXT = 500  # a whole HTML error page in a log line helps nobody


class HaulError(Exception):
    """The root of haul's own errors; `str(error)` is one line for the person at the console."""

    exit_code: ClassVar[int] = 1


class StorageError(HaulError):
    """The staging store cannot be used: the message names the file and what to do."""


class HaulHTTPError(HaulError):
    """A call to a service failed; ``str(error)`` is one readable line."""

    def __init__(
        self,
        message: str,
        *,
        service: str,
        method: str = "",
        url: str = "",
        status: int | None = None,
        server_message: str = "",
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.service = service
        self.method = method
        self.url = url
        self.status = status
        self.server_message = server_message
        self.response = response

    def context(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this error as another class of the tree."""
        return {
            "service": self.service,
            "method": self.method,
            "url": self.url,
            "status": self.status,
            "server_message": self.server_message,
            "response": self.response,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status!r})"


class TransientError(HaulHTTPError):
    """The service is overloaded or unreachable; the same call may succeed later."""


class UnreachableError(TransientError):
    """No connection to a service that has not answered once in this command: not an outage
    to wait out (a wrong host or port, a service down, a firewall), so it fails in seconds."""


class RateLimitedError(TransientError):
    """The service keeps answering 429 for longer than haul may wait: resume later."""

    exit_code: ClassVar[int] = 4


class RecordError(HaulHTTPError):
    """The service refused this record; skip it and report it."""


class NotFoundError(RecordError):
    """404: the object does not exist."""


class ConflictError(RecordError):
    """409: the object already exists (key, `unique`) or was changed meanwhile."""


class ValidationError(RecordError):
    """400, 413, 422 or another 4xx: the request itself is wrong for this record."""


class BodyMismatch(RecordError):
    """A download's bytes are not as many as the reply or the listing announced."""


class UnexpectedReply(RecordError):
    """A 2xx reply of the wrong shape for this record (an error object for a list, say)."""


class FatalError(HaulHTTPError):
    """Continuing makes no sense: stop the run with this message."""


class AuthError(FatalError):
    """401/403: the token is rejected, or lacks the rights, for this org."""


class RedirectError(FatalError):
    """The service redirected to another host: followed, the token would leave the service."""


class BadReplyError(FatalError):
    """A reply that is not the JSON the API promises (an HTML page with status 200, say)."""


class PaginationError(FatalError):
    """A listing returned a repeated cursor or a page of an unexpected shape."""


class AmbiguousWriteError(HaulHTTPError):
    """The connection failed after a write was sent: it may or may not have been applied."""


class ScrollExpiredError(HaulHTTPError):
    """The server no longer knows the scroll id (404/400 on a scrolled page)."""


def error_class_for_status(status: int) -> type[HaulHTTPError]:
    """The class of the tree for a final (non-retried) HTTP error status."""
    if status in (401, 403):
        return AuthError
    if status == 404:
        return NotFoundError
    if status == 409:
        return ConflictError
    if 400 <= status < 500:
        return ValidationError
    if status >= 500:
        return TransientError
    # a 1xx/3xx that reached us was not followed: our request or the server is broken
    return FatalError


def describe_error_body(response: httpx.Response) -> str:
    """The server's own words from an error reply, whatever the service's error shape.

    Tracker ``{"errorMessages": [...], "errors": {field: msg}}``, wiki
    ``{"error_code", "message"}``, forms ``{"detail": ...}`` or ``[{"loc", "msg"}]``;
    anything else falls back to the (shortened) body text.
    """
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _shorten(response.text)
    parts = _messages_from(body)
    return "; ".join(parts) if parts else _shorten(response.text)


def _messages_from(body: Any) -> list[str]:
    if isinstance(body, list):
        return [_describe_item(item) for item in body if item]
    if not isinstance(body, dict):
        return [str(body)] if body not in (None, "") else []
    parts = [str(message) for message in body.get("errorMessages") or []]
    errors = body.get("errors")
    if isinstance(errors, dict):
        parts += [f"{field}: {message}" for field, message in errors.items()]
    parts += _wiki_messages(body)
    detail = body.get("detail")
    if isinstance(detail, list):
        parts += [_describe_item(item) for item in detail]
    elif detail:
        parts.append(str(detail))
    return parts


def _wiki_messages(body: dict[str, Any]) -> list[str]:
    message = body.get("message")
    texts = message if isinstance(message, list) else [message] if message else []
    code = body.get("error_code")
    if code and texts:
        return [f"{code}: {'; '.join(str(text) for text in texts)}"]
    return [str(code)] if code else [str(text) for text in texts]


def _describe_item(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    text = item.get("msg") or item.get("message") or item.get("error_code") or json.dumps(item)
    location = ".".join(str(part) for part in item.get("loc") or [])
    return f"{location}: {text}" if location else str(text)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."
