"""Queue permissions: who may read, create, write in and grant a queue, as the spec's
``GET /queues/{id}/permissions/users/{user}`` and ``.../groups/{group}`` answer it.

The user's reply follows the recorded live one (``tracker/queues/user_permissions_get.json``):
``{"permissions": {CODE: {"users": [user ref], "groups": [group ref]}}, "user": user ref}``,
one entry per code the user holds (READ, CREATE, WRITE, GRANT), listing how: a grant to the
user itself, and the groups of the user that hold it; a code the user does not hold is absent.
No group reply was recorded, so it is the plain mirror of that: ``{"permissions": {CODE:
{"groups": [group ref]}}, "group": group ref}``, the group's own grants. A user is named by
login or uid, a group by its id (ids differ between organisations, names do not: see
:mod:`sandbox.groups`).

The whole scheme is read and edited per code: ``GET/PATCH /queues/{id}/permissions`` (the
official SDK's ``queue.permissions`` and ``update_permissions``). The reply follows the
recorded live one (``tracker/queues/permissions_update.json``): ``{"self", "version",
"create"|"write"|"read"|"grant": {"self", "users": [user ref], "groups": [group ref],
"roles": [role ref]}}``, a list left out when empty. A PATCH names, per code, ``users`` (logins
or uids), ``groups`` (ids) and ``roles`` (author, assignee, follower, ...), each a list that
replaces the holders of that code, or ``{"add": [...], "remove": [...]}`` (the documented
body); a holder the org does not know is a 422 and nothing changes. READ is enforced for the
plain user: an issue of a queue it may not read is not found and not searched
(:func:`may_read`); the other codes are served, not enforced.

Every queue of every organisation starts with one scheme: All employees read and create; the
groups engineering and support write; the queue's lead (alice) creates, writes and grants
itself. The target organisation differs in two queues, so a migration has something to find:
in DEV the group support may not write, and in TEST bob may grant. ``PUT /_sandbox/queues/
{queue}/permissions/{users|groups}/{holder}`` (admin, the org header, body ``{"permissions":
[CODE, ...]}``) sets one holder's own grants in one queue, for tests.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.groups import ALL_STAFF, Group, groups_of
from haul.sandbox.people import User
from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.render_refs import user_ref
from haul.sandbox.tracker.model import Org, Queue, QueueGrants
from haul.sandbox.tracker.structure.routes_structure import queue_of_path

CODES = ("READ", "CREATE", "WRITE", "GRANT")
SCHEME = {ALL_STAFF: {"READ", "CREATE"}, "engineering": {"WRITE"}, "support": {"WRITE"}}
LEAD = {"CREATE", "WRITE", "GRANT"}
# the target org's departures from the scheme: queue -> (kind, login or group name, codes)
TARGET_CHANGES = {
    "DEV": ("groups", "support", set[str]()),
    "TEST": ("users", "bob", {"GRANT"}),
}


def grants_of(org: Org, queue: Queue) -> QueueGrants:
    """The queue's grants, seeded on first use from the scheme (and the org's departures)."""
    found = org.queue_grants.get(queue.key)
    if found is None:
        found = org.queue_grants[queue.key] = _seeded(org, queue)
    return found


def _seeded(org: Org, queue: Queue) -> QueueGrants:
    named = groups_of(org).named
    grants = QueueGrants({queue.lead: set(LEAD)}, {named(n).id: set(c) for n, c in SCHEME.items()})
    change = TARGET_CHANGES.get(queue.key) if org.role == "target" else None
    if change is not None:
        kind, name, codes = change
        user = org.find_user(name)
        if kind == "users" and user is not None:
            grants.users[user.uid] = set(codes)
        elif kind == "groups":
            grants.groups[named(name).id] = set(codes)
    return grants


def group_ref(call: Call, group: Group) -> dict:
    return {"self": f"{call.view.base}/groups/{group.id}", "id": group.id, "display": group.name}


def _user(call: Call, request: Request) -> User:
    wanted = request.path_params["holder"]
    user = call.org.find_user(wanted)
    if user is None:
        raise ApiError(404, "User does not exist.", errors={"user": wanted})
    return user


def _group(call: Call, request: Request) -> Group:
    wanted = request.path_params["holder"]
    group = groups_of(call.org).by_id.get(wanted)
    if group is None:
        raise ApiError(404, "Group does not exist.", errors={"group": wanted})
    return group


def user_permissions(call: Call, queue: Queue, user: User) -> dict:
    """The user's reply: per code it holds, itself and/or its groups that hold it."""
    grants = grants_of(call.org, queue)
    mine = grants.users.get(user.uid, set())
    known = groups_of(call.org)
    groups = [group for group in known.all if group.id in known.ids_of(user)]
    held = {}
    for code in CODES:
        via = {"users": [user_ref(call.view, user.uid)] if code in mine else []}
        via["groups"] = [group_ref(call, g) for g in groups if code in grants.groups.get(g.id, ())]
        if via["users"] or via["groups"]:
            held[code] = {name: refs for name, refs in via.items() if refs}
    return {"permissions": held, "user": user_ref(call.view, user.uid)}


def group_permissions(call: Call, queue: Queue, group: Group) -> dict:
    """The group's reply: per code it holds, the group itself."""
    codes = grants_of(call.org, queue).groups.get(group.id, set())
    ref = group_ref(call, group)
    held = {code: {"groups": [ref]} for code in CODES if code in codes}
    return {"permissions": held, "group": ref}


async def get_user_permissions(request: Request) -> Response:
    """GET /queues/{queue}/permissions/users/{holder}: what the user may do in the queue."""
    call = open_call(request)
    queue = queue_of_path(call, request)
    return JSONResponse(user_permissions(call, queue, _user(call, request)))


async def get_group_permissions(request: Request) -> Response:
    """GET /queues/{queue}/permissions/groups/{holder}: what the group may do in the queue."""
    call = open_call(request)
    queue = queue_of_path(call, request)
    return JSONResponse(group_permissions(call, queue, _group(call, request)))


async def set_permissions(request: Request) -> Response:
    """PUT /_sandbox/queues/{queue}/permissions/{kind}/{holder} {"permissions": [CODE, ...]}
    (admin): the holder's own grants in the queue become exactly these; answers as GET."""
    call = open_call(request, admin=True)
    queue = queue_of_path(call, request)
    codes = (await json_object(request)).get("permissions")
    if not isinstance(codes, list) or not set(codes) <= set(CODES):
        raise ApiError(400, f"'permissions' must be a list of {', '.join(CODES)}")
    grants = grants_of(call.org, queue)
    kind = request.path_params["kind"]
    if kind == "users":
        user = _user(call, request)
        grants.users[user.uid] = set(codes)
        return JSONResponse(user_permissions(call, queue, user))
    if kind == "groups":
        group = _group(call, request)
        grants.groups[group.id] = set(codes)
        return JSONResponse(group_permissions(call, queue, group))
    raise ApiError(404, "Not found", errors={"kind": kind})


# -- the whole scheme, per code (GET/PATCH /queues/{id}/permissions) ----------------------

ROLES = ("author", "assignee", "follower", "access", "qaEngineer", "component_lead")


def may_read(org: Org, queue: str, user: User) -> bool:
    """Whether `user` may read issues of `queue`: READ given to it or to one of its groups."""
    found = org.queues.get(queue)
    if found is None:
        return True
    grants = grants_of(org, found)
    if "READ" in grants.users.get(user.uid, ()):
        return True
    return any("READ" in grants.groups.get(g, ()) for g in groups_of(org).ids_of(user))


def role_ref(call: Call, role: str) -> dict:
    return {"self": f"{call.view.base}/roles/{role}", "id": role, "display": role}


def scheme(call: Call, queue: Queue) -> dict:
    """The queue's whole scheme, per code (see the module docstring)."""
    grants = grants_of(call.org, queue)
    known = groups_of(call.org).by_id
    base = f"{call.view.base}/queues/{queue.key}/permissions"
    body: dict = {"self": base, "version": grants.version}
    for code in CODES:
        users = [user_ref(call.view, uid) for uid, codes in grants.users.items() if code in codes]
        groups = [
            group_ref(call, known[gid])
            for gid, codes in grants.groups.items()
            if code in codes and gid in known
        ]
        roles = [role_ref(call, role) for role, codes in grants.roles.items() if code in codes]
        held = {"users": [u for u in users if u], "groups": groups, "roles": roles}
        body[code.lower()] = {"self": f"{base}/{code.lower()}"} | {
            k: v for k, v in held.items() if v
        }
    return body


async def get_permissions(request: Request) -> Response:
    """GET /queues/{queue}/permissions: who holds each code of the queue."""
    call = open_call(request)
    return JSONResponse(scheme(call, queue_of_path(call, request)))


async def get_code_permissions(request: Request) -> Response:
    """GET /queues/{queue}/permissions/{code}: one code's holders (the `self` of each code in
    the scheme, which the official SDK follows for a list the reply left out)."""
    call = open_call(request)
    code = request.path_params["code"].lower()
    body = scheme(call, queue_of_path(call, request))
    if code not in {c.lower() for c in CODES}:
        raise ApiError(404, "Not found", errors={"permission": code})
    return JSONResponse({"users": [], "groups": [], "roles": [], **body[code]})


async def patch_permissions(request: Request) -> Response:
    """PATCH /queues/{queue}/permissions (admin): per code, the holders replaced, added or
    removed; every holder is checked before anything changes."""
    call = open_call(request, admin=True)
    queue = queue_of_path(call, request)
    body = await json_object(request)
    unknown = set(body) - {code.lower() for code in CODES}
    if unknown:
        raise ApiError(
            400, f"Unknown permission {sorted(unknown)[0]!r}: use create, write, read, grant"
        )
    grants = grants_of(call.org, queue)
    edits = [
        (code, kind, change)
        for code in CODES
        if isinstance(body.get(code.lower()), dict)
        for kind, change in body[code.lower()].items()
    ]
    planned = [(code, kind, *_holders(call, kind, change)) for code, kind, change in edits]
    for code, kind, replace, add, remove in planned:
        table = _table(grants, kind)
        if replace is not None:
            for codes in table.values():
                codes.discard(code)
            add = replace
        for holder in add:
            table.setdefault(holder, set()).add(code)
        for holder in remove:
            table.get(holder, set()).discard(code)
    grants.version += 1
    return JSONResponse(scheme(call, queue))


def _table(grants: QueueGrants, kind: str) -> dict:
    tables: dict[str, dict] = {
        "users": grants.users,
        "groups": grants.groups,
        "roles": grants.roles,
    }
    return tables[kind]


def _holders(call: Call, kind: str, change: object) -> tuple[list | None, list, list]:
    """(replace, add, remove) of one holder kind, each holder resolved (422 if unknown)."""
    if kind not in ("users", "groups", "roles"):
        raise ApiError(400, f"Unknown holder kind {kind!r}: use users, groups, roles")
    if isinstance(change, list):
        return [_holder(call, kind, value) for value in change], [], []
    if not isinstance(change, dict) or set(change) - {"add", "remove"}:
        raise ApiError(400, f"'{kind}' must be a list or {{add, remove}}")
    add = [_holder(call, kind, value) for value in change.get("add") or []]
    remove = [_holder(call, kind, value) for value in change.get("remove") or []]
    return None, add, remove


def _holder(call: Call, kind: str, value: object) -> object:
    if isinstance(value, dict):
        value = value.get("id") or value.get("login")
    if kind == "users":
        user = call.org.find_user(value)
        if user is None:
            raise ApiError(422, f"Unknown user {value!r}", errors={"users": str(value)})
        return user.uid
    if kind == "groups":
        group = groups_of(call.org).by_id.get(str(value))
        if group is None:
            raise ApiError(422, f"Unknown group {value!r}", errors={"groups": str(value)})
        return group.id
    if value not in ROLES:
        raise ApiError(422, f"Unknown role {value!r}", errors={"roles": str(value)})
    return value
