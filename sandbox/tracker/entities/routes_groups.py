"""``GET /groups``: the organisation's groups (the official SDK's ``groups`` collection), each
``{self, id, name, display, type}``, so a migration maps a group by name to its id here (ids
differ between organisations, names do not; the group of every person is 1 everywhere).

The id is a number here, as the reference types a group id ("Unique group ID in the
organization | Number") and as the vendor's own importer compares it (to the number 1, to
tell the group of every person); a reference to a group elsewhere (``{self, id, display}``)
gives it as a string, as every reference does."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.groups import groups_of
from haul.sandbox.tracker.api.context import open_call


async def list_groups(request: Request) -> Response:
    call = open_call(request)
    return JSONResponse(
        [
            {
                "self": f"{call.view.base}/groups/{group.id}",
                "id": int(group.id),
                "name": group.name,
                "display": group.name,
                "type": "group",
            }
            for group in groups_of(call.org).all
        ]
    )
