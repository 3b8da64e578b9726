"""Who may read, write and share an entity in the target: the source's permissions, mapped.

A staged entity's access is its `teamAccess` (true: only the holders read it) and its ACL: per
level (READ, WRITE, GRANT) users, groups and roles (AUTHOR, OWNER, CLIENT, FOLLOWER, MEMBER:
the entity's author, lead, clients, followers and participants). `wanted` maps it:

- a user by `[mapping] users_file` or the same login (never `default_user`: that would give
  the default account a level the source never gave it), as its target uid;
- a group by `[mapping] groups_file` or the same name, as its target id (the group of every
  person by its id, 1 in every org: `all_staff`);
- roles as they are (they name the entity's own people, mapped the same way);
- **fail closed**: when a holder has no target holder (or the author of a team-only entity
  that names AUTHOR), the entity keeps none of its entries nor opens to everyone: it is
  team-only to its mapped owner (its lead, else its author), at the levels the source gave
  the owner by name or by its role, and the migrating admin (who passes everywhere);
  `unmapped` names the holders.

Plain dicts in, plain values out: no I/O here (`specs` does the writes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from haul.pipelines.tracker.export_columns import ROLE_PEOPLE
from haul.pipelines.tracker.transform import ALL_STAFF_ID, is_all_staff

LEVELS = ("READ", "WRITE", "GRANT")
Record = dict[str, Any]
Acl = dict[str, dict[str, list[str]]]  # level -> {"users": uids, "groups": ids, "roles": names}


@dataclass(frozen=True)
class EntityHolders:
    """Source holders -> target holders: a user's login (strict: no default) to its target uid,
    a group's name to its target id."""

    login_of: Callable[[Any], str | None]  # a source user ref -> its target login, or None
    uids: Mapping[str, str]  # target login -> target uid
    groups: Mapping[str, str] = field(default_factory=dict)  # target group name -> id
    group_file: Mapping[str, str] = field(default_factory=dict)  # source group -> target group
    source_logins: Mapping[str, str] = field(default_factory=dict)  # source uid -> login

    def name(self, ref: Any) -> str:
        """How a source user is named in messages: its login."""
        uid = str(ref.get("id")) if isinstance(ref, dict) else str(ref)
        return self.source_logins.get(uid, _label(ref))

    def missing_group(self, ref: Record) -> str:
        """How a group that maps to no one is named: by the target group the groups file
        names (what the target lacks) and the source group, else by its source name."""
        name, gid = str(ref.get("display") or ref.get("name") or ""), str(ref.get("id") or "")
        target = self.group_file.get(name) or self.group_file.get(gid)
        if target and target not in (name, gid):
            return f"group {target.removeprefix('dir:')} (from source group {name or gid})"
        return f"group {name or gid}"

    def user(self, ref: Any) -> str | None:
        login = self.login_of(ref)
        return self.uids.get(login) if login else None

    def group(self, ref: Record) -> str | None:
        """A source group's target id: by the groups file (a name, or an id as `dir:<id>`),
        else by its name; an id the target does not list maps to none (where it lists no
        groups, an id the file gives is taken as it is)."""
        name, gid = str(ref.get("display") or ref.get("name") or ""), str(ref.get("id") or "")
        if is_all_staff(gid, name, self.group_file):  # by its id: its name is the language's
            return ALL_STAFF_ID
        target = self.group_file.get(name) or self.group_file.get(gid) or name
        target = target.removeprefix("dir:")
        if target in self.groups:
            return self.groups[target]
        listed = target in self.groups.values()
        given = not self.groups and target.isdigit() and target != gid
        return target if listed or given else None


@dataclass(frozen=True)
class EntityAccess:
    """An entity's access in the target: team-only or not, its ACL, and what failed closed."""

    team_access: bool
    acl: Acl
    unmapped: tuple[str, ...] = ()

    @property
    def restricted(self) -> bool:
        """Only its holders read it: it is made without its content, which follows them."""
        return self.team_access

    def described(self) -> Record:
        """What verify compares."""
        return {"teamAccess": self.team_access, "acl": self.acl}


def empty_acl() -> Acl:
    """Every level held by no one."""
    return {level: {"users": [], "groups": [], "roles": []} for level in LEVELS}


def wanted(entity: Record, permissions: Record, holders: EntityHolders) -> EntityAccess:
    """The target access of a staged entity and its staged permissions; see the docstring."""
    fields = entity.get("fields") or {}
    team = bool(fields.get("teamAccess"))
    source = permissions.get("acl") or {}
    acl, unmapped = empty_acl(), set()
    for level in LEVELS:
        held = source.get(level) or {}
        for ref in held.get("users") or []:
            uid = holders.user(ref)
            if uid is None:
                unmapped.add(f"user {holders.name(ref)}")
            acl[level]["users"].append(uid or "")
        for ref in held.get("groups") or []:
            gid = holders.group(ref)
            if gid is None:
                unmapped.add(holders.missing_group(ref))
            acl[level]["groups"].append(gid or "")
        acl[level]["roles"] = sorted(str(role) for role in held.get("roles") or [])
    names_author = any("AUTHOR" in acl[level]["roles"] for level in LEVELS)
    author = fields.get("author") or entity.get("createdBy")  # whom the AUTHOR role names
    if team and names_author and author and holders.user(author) is None:
        unmapped.add(f"author {holders.name(author)}")
    if unmapped:
        return EntityAccess(True, _closed(source, fields.get("lead"), author, holders),
                            tuple(sorted(unmapped)))  # fmt: skip
    return EntityAccess(team, _sorted(acl))


def _closed(source: Record, lead: Any, author: Any, holders: EntityHolders) -> Acl:
    """The ACL of an entity that fails closed: its owner (its mapped lead, else its mapped
    author) alone, at each level the source gave the owner by name or by the role that names
    it (OWNER, AUTHOR); a level it held only through a group or another role is not given:
    narrower, never wider."""
    owner = holders.user(lead) or holders.user(author)
    closed = empty_acl()
    if owner is None:
        return closed
    roles = {"OWNER"} if holders.user(lead) == owner else set()
    roles |= {"AUTHOR"} if holders.user(author) == owner else set()
    for level in LEVELS:
        held = source.get(level) or {}
        by_name = any(holders.user(ref) == owner for ref in held.get("users") or [])
        if by_name or roles & {str(role) for role in held.get("roles") or []}:
            closed[level]["users"] = [owner]
    return closed


def current(reply: Record, team_access: bool) -> EntityAccess:
    """A target entity's access as its permissions reply and `teamAccess` give it."""
    acl = empty_acl()
    for level in LEVELS:
        held = (reply.get("acl") or {}).get(level) or {}
        acl[level] = {
            "users": [str(ref.get("id")) for ref in held.get("users") or []],
            "groups": [str(ref.get("id")) for ref in held.get("groups") or []],
            "roles": [str(role) for role in held.get("roles") or []],
        }
    return EntityAccess(team_access, _sorted(acl))


People = Mapping[str, list[str]]  # role -> the uids it names on one entity


def readers(team_access: bool, chain: list[tuple[Acl, People]]) -> list[str]:
    """Who reads an entity, resolved: everyone when it is open; else the READ holders of it and
    of each parent it inherits from (`chain`: each one's ACL and its people by role, itself
    first), a role as the people it names there (``user:<uid>``, ``group:<id>``)."""
    if not team_access:
        return ["everyone"]
    found: set[str] = set()
    for acl, people in chain:
        held = acl.get("READ") or {}
        found |= {f"user:{uid}" for uid in held.get("users") or []}
        found |= {f"group:{gid}" for gid in held.get("groups") or []}
        for role in held.get("roles") or []:
            found |= {f"user:{uid}" for uid in people.get(role) or [] if uid}
    return sorted(found)


def target_people(fields: Record) -> People:
    """A target entity's people by role, from its fields (references to users)."""
    people: dict[str, list[str]] = {}
    for role, name in ROLE_PEOPLE.items():
        value = fields.get(name)
        refs = value if isinstance(value, list) else [value] if value else []
        people[role] = [str(ref.get("id")) if isinstance(ref, dict) else str(ref) for ref in refs]
    return people


def edit(have: Acl, want: Acl) -> Record:
    """The ``{grant, revoke}`` body that turns `have` into `want` (empty when they agree)."""
    body: Record = {}
    for verb, plus, minus in (("revoke", have, want), ("grant", want, have)):
        levels = {}
        for level in LEVELS:
            change = {
                kind: sorted(set(plus[level][kind]) - set(minus[level][kind]))
                for kind in ("users", "groups", "roles")
            }
            change = {kind: items for kind, items in change.items() if items}
            if change:
                levels[level] = change
        if levels:
            body[verb] = levels
    return body


def _sorted(acl: Acl) -> Acl:
    return {
        level: {kind: sorted(set(items)) for kind, items in held.items()}
        for level, held in acl.items()
    }


def _label(ref: Any) -> str:
    if isinstance(ref, dict):
        return str(ref.get("display") or ref.get("id"))
    return str(ref)
