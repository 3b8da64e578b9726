"""Page access over HTTP (the spec's page access rows): grant, change, revoke one, revoke all;
the ``access_policy`` and ``access_lists`` blocks of a page read; the sandbox's group list.

- ``POST /pages/{id}/access`` ``{user: {uid | cloud_uid} | group: {src, id}, role,
  inheritance?}``: the new entry (``inheritance`` defaults to ``inherited``); 409
  ``ALREADY_EXISTS`` when the holder already has a personal access on the page.
- ``POST /pages/{id}/access/{access_id}?prevent_selflock=`` ``{role?, inheritance?}`` (one at
  least): the changed entry.
- ``DELETE /pages/{id}/access/{access_id}?prevent_selflock=``: 204.
- ``DELETE /pages/{id}/access?prevent_selflock=``: 204; every personal access but the owner's.

Choices where the spec only says "refused": the owner's entry is 409 ``OWNER_ACCESS``; a change
that would leave the caller unable to read the page or change its access, with
``prevent_selflock=true``, is 409 ``SELF_LOCK`` and changes nothing; changing access needs
``extra_editor`` or ``author`` on the page (403 ``FORBIDDEN``); a holder the organisation does
not have (a group id of another org) is 400; an access id not on this page is 404.

Sandbox only, at the port's root and never faulted nor counted: ``GET /_sandbox/groups`` (any
token, the org header) lists the org's groups with ids and members, which the wiki API does
not serve; ``GET /_sandbox/roles?slug=`` (admin token, the org header) gives every user's role
on a page by login.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.groups import Group
from haul.sandbox.people import User
from haul.sandbox.timefmt import now_ms
from haul.sandbox.wiki.access import (
    ACCESS_TYPES,
    ALL_STAFF_ROLES,
    INHERITANCE,
    ROLES,
    Entry,
    Policy,
    Viewer,
    direct_entries,
    effective_policy,
    inherited_entries,
    locked_out,
    role_of,
)
from haul.sandbox.wiki.context import (
    Call,
    WikiError,
    body_of,
    forbidden,
    invalid,
    listing,
    not_found,
)
from haul.sandbox.wiki.model import Page, WikiOrg, user_json, wiki_time

GROUP_SOURCES = ("dir", "cloud", "com", "staff")
MANAGE = "extra_editor"

# -- wire shapes ------------------------------------------------------------------------------


def entry_json(entry: Entry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "created_at": wiki_time(entry.created_at),
        "user": user_json(entry.user) if entry.user is not None else None,
        "group": entry.group.json() if entry.group is not None else None,
        "role": entry.role,
        "inheritance": entry.inheritance,
    }


def access_lists_json(wiki: WikiOrg, page: Page) -> dict[str, Any]:
    return {
        "direct": [entry_json(entry) for entry in direct_entries(page)],
        "by_link": [],
        "inherited": [entry_json(entry) for entry in inherited_entries(wiki, page)],
    }


def policy_json(wiki: WikiOrg, page: Page) -> dict[str, Any]:
    own, effective = page.access.policy, effective_policy(wiki, page)
    all_staff = effective.access_type == "all_staff"
    return {
        "access_type": own.access_type,
        "inherited_access_type": effective.access_type if own.access_type == "inherited" else None,
        "all_staff_role": effective.all_staff_role if all_staff else None,
        "has_external": False,
        "invite": None,
    }


def policy_from(value: Any) -> Policy:
    """The policy of a page create or update body (``access_policy``)."""
    if not isinstance(value, dict):
        raise invalid("access_policy", "type_error.dict", "must be an object")
    access_type = _one_of(value, "access_type", ACCESS_TYPES, prefix="access_policy.")
    role = value.get("all_staff_role") or "reader"
    if role not in ALL_STAFF_ROLES:
        raise invalid("access_policy.all_staff_role", "type_error.enum", ", ".join(ALL_STAFF_ROLES))
    return Policy(access_type, role)


# -- routes -----------------------------------------------------------------------------------


async def grant(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need=MANAGE)
    body = await body_of(request)
    user, group = _holder(call, body)
    role = _one_of(body, "role", ROLES)
    inheritance = _one_of(body, "inheritance", INHERITANCE, default="inherited")
    entry = Entry(call.wiki.new_access_id(), role, inheritance, now_ms(), user, group)
    if any(entry.same_holder(other) for other in direct_entries(page)):
        raise WikiError(409, "ALREADY_EXISTS", "The holder already has a personal access here",
                        "change it with POST /pages/{id}/access/{access_id}")  # fmt: skip
    page.access.entries.append(entry)
    return JSONResponse(entry_json(entry))


async def change(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need=MANAGE)
    entry = _entry(page, request.path_params["access_id"])
    body = await body_of(request)
    if body.get("role") is None and body.get("inheritance") is None:
        raise invalid("body", "value_error", "give a role, an inheritance or both")
    changed = dataclasses.replace(
        entry,
        role=_one_of(body, "role", ROLES, default=entry.role),
        inheritance=_one_of(body, "inheritance", INHERITANCE, default=entry.inheritance),
    )
    entries = [changed if each is entry else each for each in page.access.entries]
    _apply(call, page, entries)
    return JSONResponse(entry_json(changed))


async def revoke(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need=MANAGE)
    entry = _entry(page, request.path_params["access_id"])
    _apply(call, page, [each for each in page.access.entries if each is not entry])
    return Response(status_code=204)


async def revoke_all(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need=MANAGE)
    _apply(call, page, [])
    return Response(status_code=204)


async def list_groups(request: Request) -> Response:
    """Sandbox only: the org's groups, each with its id and members, to map names to ids."""
    call = Call(request)

    def render(group: Group) -> dict[str, Any]:
        members = [_member(user, call.org.left) for user in group.members]
        return {**group.json(), "members": members}

    return listing(request, call.wiki.groups.all, render)


async def page_roles(request: Request) -> Response:
    """Sandbox only, admin token: every user's role on the page at ``slug``, by login, to
    compare who reads a page in two orgs (the admin's own administrator role is left out)."""
    call = Call(request)
    if not call.viewer.admin:
        raise forbidden("The sandbox control endpoints need the admin token")
    page = call.page_at(request.query_params.get("slug") or "")
    roles = {}
    for user in sorted(call.org.users.values(), key=lambda user: user.login):
        role = role_of(call.wiki, page, Viewer(user, call.wiki.groups.ids_of(user)))
        if role is not None:
            roles[user.login] = role
    return JSONResponse({"id": page.id, "slug": page.slug, "roles": roles})


API = (
    ("POST", "/pages/{idx:int}/access", grant),
    ("DELETE", "/pages/{idx:int}/access", revoke_all),
    ("POST", "/pages/{idx:int}/access/{access_id}", change),
    ("DELETE", "/pages/{idx:int}/access/{access_id}", revoke),
)


# -- helpers ----------------------------------------------------------------------------------


def _apply(call: Call, page: Page, entries: list[Entry]) -> None:
    """Replace the page's personal entries, unless that locks the caller out and they asked
    not to be (``prevent_selflock``): then leave them as they were and refuse."""
    before = page.access.entries
    page.access.entries = entries
    if _flag(call.request, "prevent_selflock") and locked_out(call.wiki, page, call.viewer):
        page.access.entries = before
        raise WikiError(409, "SELF_LOCK", "The change would lock you out of the page",
                        "prevent_selflock is set")  # fmt: skip


def _entry(page: Page, access_id: str) -> Entry:
    if access_id == page.access.owner_entry_id:
        raise WikiError(409, "OWNER_ACCESS", "The owner's access cannot be changed or revoked")
    for entry in page.access.entries:
        if entry.id == access_id:
            return entry
    raise not_found("access")


def _holder(call: Call, body: dict[str, Any]) -> tuple[User | None, Group | None]:
    """(user, None) or (None, group): exactly one of the body's holders, found in the org."""
    user, group = body.get("user"), body.get("group")
    if (user is None) == (group is None):
        raise invalid("body", "value_error", "name exactly one of user and group")
    if user is not None:
        return _user(call, user), None
    return None, _group(call, group)


def _user(call: Call, value: Any) -> User:
    if not isinstance(value, dict):
        raise invalid("user", "type_error.dict", "must be an object")
    found = None
    if value.get("uid"):
        found = call.org.find_user(str(value["uid"]))
    elif value.get("cloud_uid"):
        found = next(
            (u for u in call.org.users.values() if u.cloud_uid == value["cloud_uid"]), None
        )
    if found is None:
        raise invalid("user", "value_error", "no such user in this organisation")
    if found.login in call.org.left:
        raise invalid("user", "value_error", "the user is dismissed from this organisation")
    return found


def _group(call: Call, value: Any) -> Group:
    if not isinstance(value, dict):
        raise invalid("group", "type_error.dict", "must be an object")
    _one_of(value, "src", GROUP_SOURCES, prefix="group.")
    found = call.wiki.groups.by_id.get(str(value.get("id")))
    if found is None:
        raise invalid("group.id", "value_error", "no such group in this organisation")
    return found


def _one_of(
    body: dict[str, Any], name: str, allowed: tuple[str, ...], *, default: Any = None,
    prefix: str = "",
) -> Any:  # fmt: skip
    value = body.get(name)
    if value is None:
        if default is None:
            raise invalid(prefix + name, "value_error.missing", "field required")
        return default
    if value not in allowed:
        raise invalid(prefix + name, "type_error.enum", f"one of {', '.join(allowed)}")
    return value


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() in ("true", "1")


def _member(user: User, left: set[str]) -> dict[str, Any]:
    return {
        "uid": str(user.uid),
        "cloud_uid": user.cloud_uid,
        "username": user.login,
        "is_dismissed": user.login in left,
    }
