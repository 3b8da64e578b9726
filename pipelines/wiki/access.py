"""Who may read a wiki page, as the target should have it: the source's access, holders mapped.

A staged page carries its access as the wiki serves it: ``access_policy`` (``access_type``
inherited, all_staff or custom, and the type and role it resolves to) and ``access_lists``
(``direct`` entries, the owner's among them, and the ``inherited`` ones that reach it from
above). `wanted` turns that into the page's target `Access`:

- the policy as the source says; a migrated **root** (its parent stays behind) that inherits
  takes what it inherits instead: the type it resolves to and, as entries of its own, the
  entries that reach it, so that neither the target parent it lands under nor a missing one
  decides who reads it;
- every entry, the owner's as an ``author`` entry, its holder mapped (`HolderMap`): a user by
  `[mapping] users_file` or the same login, a group by `[mapping] groups_file` or the same
  name; the migrating admin is left out (it owns every page it makes, and reads them all);
- **fail closed**: when a holder has no target holder, the page does not keep its other
  entries nor open to a wider audience: it is restricted (custom) to its mapped owner and the
  migrating admin, and `unmapped` names the holders. `default_user` is not used here: it would
  give the default account a role the source never gave it.

`current` reads the target's reply the same way, and `readers` resolves who reads a page
(every entry that reaches it, and "all staff" when the policy resolves to all_staff), for
`haul verify`. Plain dicts in, plain values out: no I/O here (`access_sync` does the writes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ROLES = ("reader", "editor", "extra_editor", "author")  # weakest first
ALL_STAFF = "all staff"
Record = dict[str, Any]


@dataclass(frozen=True, order=True)
class Holder:
    """A target user (by uid) or group (by directory and id); `name` is for people to read."""

    kind: str  # "user" or "group"
    id: str
    name: str = field(compare=False)
    src: str = field(default="dir", compare=False)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"

    def body(self) -> Record:
        """The holder as a grant names it."""
        if self.kind == "user":
            return {"user": {"uid": self.id}}
        return {"group": {"src": self.src, "id": self.id}}


@dataclass(frozen=True, order=True)
class Grant:
    """One entry: a holder, a role, and whether it reaches the subpages that inherit."""

    holder: Holder
    role: str
    inheritance: str = "inherited"

    @property
    def label(self) -> str:
        return f"{self.holder.label}: {self.role}, {self.inheritance}"


@dataclass(frozen=True)
class Access:
    """A page's access in the target: its policy and its entries (the admin's left out)."""

    access_type: str  # inherited, all_staff or custom
    all_staff_role: str | None = None
    grants: tuple[Grant, ...] = ()
    unmapped: tuple[str, ...] = ()  # source holders without a target holder: failed closed

    @property
    def restricted(self) -> bool:
        """Only its entries read it: the page is made with no content, which follows them."""
        return self.access_type == "custom"

    def policy(self) -> Record | None:
        """The ``access_policy`` of a create or update (None: inherit, the default)."""
        if self.access_type == "inherited":
            return None
        if self.access_type == "all_staff":
            return {"access_type": "all_staff", "all_staff_role": self.all_staff_role or "reader"}
        return {"access_type": "custom"}

    def explicit(self) -> Record:
        """The ``access_policy`` of an update, which names even ``inherited``."""
        return self.policy() or {"access_type": "inherited"}

    def same_policy(self, other: Access) -> bool:
        if self.access_type != other.access_type:
            return False
        return self.access_type != "all_staff" or self.all_staff_role == other.all_staff_role

    def described(self) -> Record:
        """What verify compares: the policy, and each entry after mapping."""
        role = self.all_staff_role if self.access_type == "all_staff" else None
        return {
            "policy": f"{self.access_type} {role}" if role else self.access_type,
            "entries": sorted(grant.label for grant in self.grants),
        }


@dataclass(frozen=True)
class Directory:
    """The target org's holders: user ids by login, group ids by name, and our own uid; and
    the logins of those who left the org (listed as dismissed: no holder, since the wiki
    refuses them page access)."""

    users: Mapping[str, str]
    groups: Mapping[str, str]
    me: str
    lists_groups: bool = True  # False: the service told us no group names (ids only)
    left: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        me: Record,
        groups: list[Record] | None,
        users: Mapping[str, str] | None = None,
        left: Iterable[str] = (),
    ) -> Directory:
        """From the target's `/me`, its group list (None where it serves none: then a group
        maps only to an id given in the groups file), users known elsewhere by login, and
        the logins known to have left."""
        known = dict(users or {})
        gone = set(left)
        for group in groups or []:
            for member in group.get("members") or []:
                if member.get("username") and member.get("is_dismissed"):
                    gone.add(str(member["username"]))
                elif member.get("username") and member.get("uid"):
                    known[str(member["username"])] = str(member["uid"])
        for login in gone:
            known.pop(login, None)
        identity = me.get("identity") or {}
        uid = str(identity.get("uid") or me.get("id") or "")
        if me.get("username"):
            known[str(me["username"])] = uid
        names = {str(group["name"]): str(group["id"]) for group in groups or []}
        return cls(known, names, uid, groups is not None, frozenset(gone))


@dataclass(frozen=True)
class HolderMap:
    """Source holders -> target holders: explicit files first, then the same name."""

    directory: Directory
    users: Mapping[str, str] = field(default_factory=dict)  # source login -> target login
    groups: Mapping[str, str] = field(default_factory=dict)  # source group -> target group

    def map(self, entry: Record) -> Holder | None:
        """The target holder of a source entry (or of a target entry: same rules), or None."""
        if entry.get("user"):
            return self.user(entry["user"])
        if entry.get("group"):
            return self.group(entry["group"])
        return None

    def user(self, ref: Record) -> Holder | None:
        login = login_of(ref)
        target = self.users.get(login, login)
        uid = self.directory.users.get(target)
        return Holder("user", uid, target) if uid else None

    def group(self, ref: Record) -> Holder | None:
        name, gid = str(ref.get("name") or ""), str(ref.get("id") or "")
        target = self.groups.get(name) or self.groups.get(gid) or name
        if target in self.directory.groups:
            return Holder("group", self.directory.groups[target], target)
        src, colon, given = target.partition(":")
        if colon and given:  # "dir:4242": an id the file gives, for a service listing no groups
            return Holder("group", given, target, src)
        by_id = {value: key for key, value in self.directory.groups.items()}
        if target in by_id:
            return Holder("group", target, by_id[target])
        return None

    def missing(self, entry: Record) -> str:
        """How an entry whose holder maps to no one is named: a group the groups file maps to
        another name by that target name (what the target lacks), and the source group."""
        group: Record = entry.get("group") or {}
        name, gid = str(group.get("name") or ""), str(group.get("id") or "")
        target = self.groups.get(name) or self.groups.get(gid)
        if group and target and target not in (name, gid):
            return f"group {target} (from source group {name or gid})"
        if entry.get("user"):
            login = login_of(entry["user"])
            if (target := self.users.get(login, login)) in self.directory.left:
                named = login if target == login else f"{login} (mapped to {target})"
                return f"user {named} (left the target org)"
        return source_label(entry)

    def is_me(self, holder: Holder) -> bool:
        return holder.kind == "user" and holder.id == self.directory.me


def login_of(ref: Record) -> str:
    """A user reference's login (its uid when it carries none)."""
    identity = ref.get("identity") or {}
    return str(ref.get("username") or ref.get("login") or identity.get("uid") or ref.get("id"))


def source_label(entry: Record) -> str:
    """How a source entry's holder is named in messages: ``user peggy``, ``group hr``."""
    if entry.get("user"):
        return f"user {login_of(entry['user'])}"
    group = entry.get("group") or {}
    return f"group {group.get('name') or group.get('id')}"


def staged_with_access(raw: Record) -> bool:
    """Whether the page was staged with its access (a store staged before haul read it: no)."""
    return isinstance(raw.get("access_policy"), dict) and isinstance(raw.get("access_lists"), dict)


def wanted(raw: Record, holders: HolderMap, *, root: bool) -> Access:
    """The target access of a staged page; see the module docstring."""
    policy, lists = raw.get("access_policy") or {}, raw.get("access_lists") or {}
    access_type = str(policy.get("access_type") or "inherited")
    entries = list(lists.get("direct") or [])
    if root and access_type == "inherited":
        access_type = str(policy.get("inherited_access_type") or "all_staff")
        entries += list(lists.get("inherited") or [])
    role = policy.get("all_staff_role") if access_type == "all_staff" else None
    unmapped = sorted({holders.missing(entry) for entry in entries if holders.map(entry) is None})
    if unmapped:
        owner = [entry for entry in lists.get("direct") or [] if _is_owner(entry, raw)]
        grants = _grants(owner[:1], holders)
        return Access("custom", None, grants, tuple(unmapped))
    return Access(access_type, role, _grants(entries, holders))


def _is_owner(entry: Record, raw: Record) -> bool:
    owner = raw.get("owner") or (raw.get("active_revision") or {}).get("author") or {}
    user: Record = entry.get("user") or {}
    return bool(user) and login_of(user) == login_of(owner) and entry.get("role") == "author"


def _grants(entries: Iterable[Record], holders: HolderMap) -> tuple[Grant, ...]:
    """Mapped entries, one per holder (the strongest role; reaching subpages if any does)."""
    merged: dict[Holder, Grant] = {}
    for entry in entries:
        holder = holders.map(entry)
        if holder is None or holders.is_me(holder):
            continue
        grant = Grant(holder, str(entry.get("role") or "reader"), _inheritance(entry))
        if (before := merged.get(holder)) is not None:
            grant = Grant(
                holder,
                max(before.role, grant.role, key=_rank),
                "inherited" if "inherited" in (before.inheritance, grant.inheritance)
                else "not_inherited",
            )  # fmt: skip
        merged[holder] = grant
    return tuple(sorted(merged.values()))


def _rank(role: str) -> int:
    return ROLES.index(role) if role in ROLES else 0


def _inheritance(entry: Record) -> str:
    return "not_inherited" if entry.get("inheritance") == "not_inherited" else "inherited"


@dataclass(frozen=True)
class Entry:
    """One entry the target holds now: its access id, holder, role and inheritance."""

    access_id: str
    grant: Grant


def current(reply: Record, holders: HolderMap) -> tuple[Access, list[Entry]]:
    """A target page's access (policy, and entries but the admin's) and its entries by id."""
    policy, lists = reply.get("access_policy") or {}, reply.get("access_lists") or {}
    access_type = str(policy.get("access_type") or "inherited")
    role = policy.get("all_staff_role") if access_type == "all_staff" else None
    entries = []
    for entry in lists.get("direct") or []:
        holder = _target_holder(entry)
        if holder is None or holders.is_me(holder):
            continue
        grant = Grant(holder, str(entry.get("role") or "reader"), _inheritance(entry))
        entries.append(Entry(str(entry.get("id")), grant))
    grants = tuple(sorted(entry.grant for entry in entries))
    return Access(access_type, role, grants), entries


def _target_holder(entry: Record) -> Holder | None:
    """A target entry's holder as it is (no mapping: it is already the target's)."""
    if entry.get("user"):
        user = entry["user"]
        uid = (user.get("identity") or {}).get("uid") or user.get("id")
        return Holder("user", str(uid), login_of(user))
    if entry.get("group"):
        group = entry["group"]
        src = (group.get("identity") or {}).get("src") or "dir"
        return Holder("group", str(group.get("id")), str(group.get("name") or group.get("id")), src)
    return None


def readers(page: Record, holders: HolderMap | None, *, me: str = "") -> list[str]:
    """Who reads a page, resolved: every holder of an entry that reaches it (direct, and
    inherited while the page inherits), and "all staff" when its policy resolves to all_staff.
    `holders` maps a source page's holders (an unmappable one reads as ``unmapped ...``);
    None reads a target page's as they are, the admin (`me`) left out."""
    policy, lists = page.get("access_policy") or {}, page.get("access_lists") or {}
    access_type = policy.get("access_type") or "inherited"
    resolved = policy.get("inherited_access_type") if access_type == "inherited" else access_type
    names = {ALL_STAFF} if resolved == "all_staff" else set()
    for entry in [*(lists.get("direct") or []), *(lists.get("inherited") or [])]:
        holder = _target_holder(entry) if holders is None else holders.map(entry)
        if holder is None:
            names.add(f"unmapped {source_label(entry)}")
        elif holder.kind == "user" and holder.id == (
            me if holders is None else holders.directory.me
        ):
            continue
        else:
            names.add(holder.label)
    return sorted(names)
