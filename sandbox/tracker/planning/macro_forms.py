"""The two forms a macro's field changes are written in, read back as one.

The v3 reference creates and edits a macro with ``issueUpdate``: an object of field changes,
each field's value either the value to set (``null`` clears it) or an object of operators
(``{"add": "New tag"}``; ``set``, ``add``, ``remove``), as an issue's edit takes them
(yandex.ru/support/tracker/en/post-macros). The older v2 page writes ``fieldChanges``: a list of
``{field, set | add | remove}`` objects, the form a read returns. Both are stored as that list,
so a macro reads back the same however it was written.

Where the pages leave it open, the sandbox is strict: a body with both forms is a 422 (which
would win is not said), and so is an operator object that mixes operators with other keys.
With the fault ``v3_only:macros`` the sandbox takes the v3 form alone and refuses
``fieldChanges`` with a 422, as a service that follows its v3 reference might: a client that
still writes the v2 form learns it at its first macro, not by losing its field changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import invalid

VERBS = ("set", "add", "remove")
V3_ONLY = "v3_only"  # the fault that holds a route family to its v3 form
Endpoint = Callable[[Request], Awaitable[Response]]


def written_changes(checks: Checks) -> list[Any] | None:
    """The field changes a macro's body writes, as the stored list; None when it writes
    none. A bad form fails in ``checks``."""
    body = checks.body
    if "issueUpdate" in body and "fieldChanges" in body:
        checks.fail("issueUpdate", "Send the field changes once: issueUpdate or fieldChanges")
        return None
    if "issueUpdate" in body:
        return _from_issue_update(checks, body.get("issueUpdate"))
    if "fieldChanges" in body:
        changes = body.get("fieldChanges") or []
        return changes if isinstance(changes, list) else [changes]
    return None


def _from_issue_update(checks: Checks, update: object) -> list[Any] | None:
    if update is None:
        return []
    if not isinstance(update, dict):
        checks.fail(
            "issueUpdate", "Must be an object of field changes: {field: value | {set, add, remove}}"
        )
        return None
    changes = []
    for name, value in update.items():
        operators = isinstance(value, dict) and any(verb in value for verb in VERBS)
        if operators and not set(value) <= set(VERBS):
            checks.fail(
                "issueUpdate", f"Field {name!r}: operators set, add, remove, and nothing else"
            )
            return None
        changes.append({"field": name, **value} if operators else {"field": name, "set": value})
    return changes


def v3_only(endpoint: Endpoint) -> Endpoint:
    """``endpoint``, refusing the v2 ``fieldChanges`` with a 422 while ``v3_only:macros`` is on."""

    async def guarded(request: Request) -> Response:
        open_call(request, admin=True)  # who may not write learns that first
        fault = request.app.state.faults.served(V3_ONLY)
        held = fault is not None and fault.route == "macros"
        if held and "fieldChanges" in await json_object(request):
            refusal = "Unknown parameter: write a macro's field changes as issueUpdate"
            raise invalid({"fieldChanges": refusal})
        return await endpoint(request)

    return guarded
