"""Optimistic locking of edits: the caller names the version it read, stale is a conflict.

Two spellings, as the service takes both: the ``version`` query parameter (the documented
one; a stale value is a 409) and the ``If-Match: "<version>"`` header the official SDK sends
(a stale value is a 412, a failed precondition).  Neither given: the edit applies as is.
"""

from __future__ import annotations

from starlette.requests import Request

from haul.sandbox.tracker.api.errors import ApiError

_STALE = "The object was changed by someone else: version {given} is not the current {current}"


def check_version(request: Request, current: int) -> None:
    """Raise 409/412 unless every version the request names equals ``current``."""
    given = request.query_params.get("version")
    if given is not None and given.strip() != str(current):
        message = _STALE.format(given=given, current=current)
        raise ApiError(409, message, errors={"version": str(current)})
    match = request.headers.get("if-match")
    if match is not None and match.strip().strip('"') not in (str(current), "*"):
        message = _STALE.format(given=match, current=current)
        raise ApiError(412, message, errors={"version": str(current)})
