"""Everything one sandbox process serves (:class:`World`: its organisations and the two tokens
that open them), and who a request's credentials name, for any of its three services.

An organisation is the tracker's :class:`~sandbox.tracker.model.Org`: it holds the people, and
the wiki and forms keep their own state per organisation beside it. Auth rules: a missing or
unknown token is 401; a missing or unknown organisation header (``X-Org-ID`` or
``X-Cloud-Org-ID``, any case) is also 401, because to a client both mean "these credentials do
not open anything".
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from haul.sandbox.people import ADMIN_LOGIN, USER_LOGIN, User
from haul.sandbox.tracker.model import Org


@dataclass
class World:
    """Everything one sandbox process serves: organisations and the tokens that open them."""

    orgs: dict[str, Org]
    admin_token: str
    user_token: str
    seed: int
    size: str
    # the admin's other tokens (as from other OAuth apps of the same account): a token of
    # its own for each of several processes, for limits kept per token
    more_admin_tokens: tuple[str, ...] = ()
    # the JSON line `haul sandbox serve` prints, once every port listens (`GET /_sandbox/info`)
    info: dict[str, Any] = field(default_factory=dict)

    def org_by_role(self, role: str) -> Org:
        return next(org for org in self.orgs.values() if org.role == role)


def is_admin_token(world: World, authorization: str | None) -> bool | None:
    """True for the admin token, False for the user token, None for anything else."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() not in ("oauth", "bearer") or not token:
        return None
    if secrets.compare_digest(token, world.admin_token):
        return True
    if any(secrets.compare_digest(token, more) for more in world.more_admin_tokens):
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
    user = org.find_user(ADMIN_LOGIN if is_admin else USER_LOGIN)
    assert user is not None  # every org has both accounts
    return org, user, is_admin
