"""Entity permissions: per level (READ, WRITE, GRANT) the users, groups and roles that hold it.

Two edit routes, as the spec has them:
- ``PATCH .../permissions`` takes ``{"grant": {LEVEL: holders}, "revoke": {LEVEL: holders}}``;
  a body naming ``permissionSources`` is a 400 (inherited parents are not edited here), as is
  any other key;
- ``PATCH .../extendedPermissions`` takes ``{"acl": {"grant": {...}, "revoke": {...}}}``; any
  verb but grant and revoke is a 400.
``holders`` is ``{"users": [login or uid], "groups": [id], "roles": [role]}``; an unknown user,
group or role is a 422.  ``permissionSources`` on read are the entity's parents, nearest first.

Who may do what: an entity open to the organisation (``teamAccess`` false, the default) is
read and written by everyone; a team-only one (``teamAccess`` true) by the holders of READ,
WRITE or GRANT only (a user directly, through a group, or through a role: AUTHOR the author,
OWNER the lead, MEMBER a participant, CLIENT a client, FOLLOWER a follower), on it or on a
parent it inherits from (its permissionSources); editing permissions, or ``teamAccess``, needs
GRANT.  The admin token passes everywhere.  Others get a 403, and a search
leaves out what they may not read.
"""

from __future__ import annotations

from haul.sandbox.groups import groups_of
from haul.sandbox.people import User
from haul.sandbox.tracker.api.errors import ApiError, invalid
from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.planning.planning import LEVELS, ROLES, Entity, Holders, Planning

VERBS = ("grant", "revoke")


def permissions_edit(body: dict) -> dict:
    """The grant/revoke maps of a ``/permissions`` PATCH; 400 for anything else."""
    if "permissionSources" in body:
        raise ApiError(
            400,
            "permissionSources cannot be changed: they are the entity's parents",
            errors={"permissionSources": "Not editable"},
        )
    return _verbs(body)


def extended_edit(body: dict) -> dict:
    """The grant/revoke maps inside the ``acl`` of an ``/extendedPermissions`` PATCH."""
    acl = body.get("acl")
    others = sorted(set(body) - {"acl"})
    if not isinstance(acl, dict) or others:
        raise ApiError(400, 'The body must be {"acl": {"grant": ..., "revoke": ...}}')
    return _verbs(acl)


def _verbs(body: dict) -> dict:
    others = sorted(set(body) - set(VERBS))
    if others:
        message = f"Only grant and revoke are accepted, not {', '.join(others)}"
        raise ApiError(400, message, errors={name: "Unknown verb" for name in others})
    for verb in VERBS:
        levels = body.get(verb, {})
        if not isinstance(levels, dict) or set(levels) - set(LEVELS):
            raise ApiError(400, f"'{verb}' maps READ, WRITE or GRANT to holders")
    return body


def apply_edit(org: Org, entity: Entity, edit: dict) -> None:
    """Grant, then revoke; every holder checked first (422 naming the bad ones)."""
    parsed: list[tuple[str, str, Holders]] = []
    errors: dict[str, str] = {}
    for verb in VERBS:
        for level, value in (edit.get(verb) or {}).items():
            holders, problems = _holders(org, f"{verb}.{level}", value)
            parsed.append((verb, level, holders))
            errors.update(problems)
    if errors:
        raise invalid(errors)
    for verb, level, holders in parsed:
        target = entity.acl.setdefault(level, Holders())
        for name in ("users", "groups", "roles"):
            current: set = getattr(target, name)
            change: set = getattr(holders, name)
            setattr(target, name, current | change if verb == "grant" else current - change)


def _holders(org: Org, where: str, value: object) -> tuple[Holders, dict[str, str]]:
    if not isinstance(value, dict):
        return Holders(), {where: "Must be an object {users, groups, roles}"}
    found: dict[str, str] = {}
    users = [
        org.find_user(u.get("id") if isinstance(u, dict) else u) for u in _list(value, "users")
    ]
    if any(user is None for user in users):
        found[f"{where}.users"] = "Every entry must be a user of this organization"
    known_groups = groups_of(org).by_id
    groups = [str(g.get("id") if isinstance(g, dict) else g) for g in _list(value, "groups")]
    if any(group not in known_groups for group in groups):
        found[f"{where}.groups"] = "Every entry must be a group id of this organization"
    roles = [str(role) for role in _list(value, "roles")]
    if any(role not in ROLES for role in roles):
        found[f"{where}.roles"] = f"Roles are {', '.join(ROLES)}"
    holders = Holders({u.uid for u in users if u is not None}, set(groups), set(roles))
    return holders, found


def _list(value: dict, name: str) -> list:
    items = value.get(name) or []
    return items if isinstance(items, list) else [items]


def may(org: Org, planning: Planning, entity: Entity, user: User, level: str) -> bool:
    """Whether ``user`` (not the admin) holds ``level`` on ``entity``: on it, or on one of
    the parents it inherits permissions from."""
    if not entity.team_access and level != "GRANT":
        return True
    groups = groups_of(org).ids_of(user)
    return any(
        _holds(source, user, groups, level)
        for source in (entity, *permission_sources(planning, entity))
    )


def _holds(entity: Entity, user: User, groups: frozenset[str], level: str) -> bool:
    holders = entity.acl.get(level, Holders())
    roles = {
        "AUTHOR": user.uid == entity.author,
        "OWNER": user.uid == entity.lead,
        "MEMBER": user.uid in entity.team,
        "CLIENT": user.uid in entity.clients,
        "FOLLOWER": user.uid in entity.followers,
    }
    return (
        user.uid in holders.users
        or bool(holders.groups & groups)
        or any(roles[role] for role in holders.roles if role in roles)
    )


def permission_sources(planning: Planning, entity: Entity) -> list[Entity]:
    """The entity's ancestors, nearest first (where its inherited permissions come from)."""
    found: list[Entity] = []
    current = planning.entities.get(entity.parent) if entity.parent else None
    while current is not None and all(current.id != seen.id for seen in found):
        found.append(current)
        current = planning.entities.get(current.parent) if current.parent else None
    return found
