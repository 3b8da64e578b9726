"""Per-request context: who calls, in which organisation, and the request's JSON body.

Auth rules: a missing or unknown token is 401; a missing or unknown organisation header
(``X-Org-ID`` or ``X-Cloud-Org-ID``, any case) is also 401, because to a client both mean
"these credentials do not open anything"; the user token on an admin endpoint is 403.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from starlette.requests import Request

from haul.sandbox.tracker import catalog
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.render_refs import View
from haul.sandbox.tracker.model import Org, User, World
from haul.sandbox.tracker.search.scroll import ScrollStore


@dataclass(frozen=True, slots=True)
class Call:
    org: Org
    user: User
    admin: bool
    view: View


def world_of(request: Request) -> World:
    return request.app.state.world


def scrolls_of(request: Request) -> ScrollStore:
    return request.app.state.scrolls


def is_admin_token(world: World, authorization: str | None) -> bool | None:
    """True for the admin token, False for the user token, None for anything else."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() not in ("oauth", "bearer") or not token:
        return None
    if secrets.compare_digest(token, world.admin_token):
        return True
    if secrets.compare_digest(token, world.user_token):
        return False
    return None


class NotAuthorized(Exception):
    """The credentials open nothing: a missing or unknown token or organisation (a 401)."""


def identify(world: World, request: Request) -> tuple[Org, User, bool]:
    """(org, user, is_admin) of a request, by its token and org header, for any service of the
    sandbox; NotAuthorized (with the 401's message) when they open nothing."""
    is_admin = is_admin_token(world, request.headers.get("authorization"))
    if is_admin is None:
        raise NotAuthorized("Authorization required: the OAuth token is missing or invalid")
    org_id = (
        request.headers.get("x-org-id") or request.headers.get("x-cloud-org-id") or ""
    ).strip()
    org = world.orgs.get(org_id)
    if org is None:
        raise NotAuthorized(f"Organization {org_id!r} is unknown or not given (X-Org-ID)")
    user = org.find_user(catalog.ADMIN_LOGIN if is_admin else catalog.USER_LOGIN)
    assert user is not None  # every org has both accounts
    return org, user, is_admin


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
    login = catalog.ADMIN_LOGIN if is_admin else catalog.USER_LOGIN
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
