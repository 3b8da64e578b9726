"""Per-request context: who calls, in which organisation, and the request's JSON body.

Auth rules are the sandbox's (:mod:`sandbox.world`): a missing or unknown token or
organisation header is 401; here, the user token on an admin endpoint is 403.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from starlette.requests import Request

from haul.sandbox.people import ADMIN_LOGIN, USER_LOGIN, User
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.render_refs import View
from haul.sandbox.tracker.model import Org
from haul.sandbox.world import World, is_admin_token


@dataclass(frozen=True, slots=True)
class Call:
    org: Org
    user: User
    admin: bool
    view: View


def world_of(request: Request) -> World:
    return request.app.state.world


def open_call(request: Request, *, admin: bool = False) -> Call:
    """Authenticate the request; raise 401/403 as the tracker would."""
    world = world_of(request)
    is_admin = is_admin_token(world, request.headers.get("authorization"))
    if is_admin is None:
        raise ApiError(401, "Authorization required: the OAuth token is missing or invalid")
    org_id = request.headers.get("x-org-id") or request.headers.get("x-cloud-org-id")
    org = world.orgs.get((org_id or "").strip())
    if org is None:
        raise ApiError(401, f"Organization {org_id!r} is unknown or not given (X-Org-ID)")
    if admin and not is_admin:
        raise ApiError(403, "This operation requires organization administrator rights")
    login = ADMIN_LOGIN if is_admin else USER_LOGIN
    user = org.find_user(login)
    assert user is not None  # every org has both accounts
    version = request.url.path.split("/")[1]
    base = f"{request.url.scheme}://{request.url.netloc}/{version}"
    return Call(org, user, is_admin, View(org, base))


async def json_body(request: Request, *, default: object = None) -> object:
    """The parsed JSON body; ``default`` when empty; 400 when it is not JSON."""
    raw = await request.body()
    if not raw.strip():
        return default
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiError(400, "The request body is not valid JSON") from None


async def json_object(request: Request) -> dict:
    body = await json_body(request, default={})
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object")
    return body
