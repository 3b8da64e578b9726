"""Who may do what on a wiki page: its access policy, its personal entries, and the role a
caller ends up with.

A page's access is a **policy** and a list of **entries**. The policy's ``access_type`` is
``inherited`` (the parent decides), ``all_staff`` (everyone in the organisation, with
``all_staff_role``) or ``custom`` (only the entries). An entry gives a user or a group a role
(``reader`` < ``editor`` < ``extra_editor`` < ``author``); its ``inheritance`` says whether it
also covers the subpages that inherit. The page's owner (its author) holds an entry of its own,
role ``author``, that cannot be changed or revoked.

The role of a caller on a page, resolved on every request:
- the admin token's user is an ``author`` everywhere (the wiki administrator);
- the page's own entries count (the owner's among them);
- while a page's policy is ``inherited``, its parent's entries with ``inheritance`` inherited
  count too (the parent's owner's among them), and so on up: the first ancestor that does not
  inherit sets the policy; a page that stops inheriting sees only its own entries;
- an ``all_staff`` policy gives everyone its ``all_staff_role``; a page without a parent that
  says ``inherited`` is ``all_staff`` (a top-level page cannot inherit);
- the strongest role wins; no role at all means the page is not there for the caller.
A new page inherits, except a top-level one, which is open to all staff as editors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from haul.sandbox.groups import Group
from haul.sandbox.people import User

if TYPE_CHECKING:
    from haul.sandbox.wiki.model import Page, WikiOrg

ROLES = ("reader", "editor", "extra_editor", "author")  # weakest first
ALL_STAFF_ROLES = ("reader", "editor", "extra_editor")
INHERITANCE = ("inherited", "not_inherited")
ACCESS_TYPES = ("inherited", "all_staff", "custom")
EDITORS = frozenset(ROLES[1:])
MANAGERS = frozenset(("extra_editor", "author"))  # may change who has access


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who asks: a user, the ids of the groups they are in, and whether they are the admin."""

    user: User
    groups: frozenset[str]
    admin: bool = False


@dataclass(slots=True)
class Entry:
    """One personal access: exactly one of `user` and `group`, with a role."""

    id: str
    role: str
    inheritance: str
    created_at: int
    user: User | None = None
    group: Group | None = None

    def holds(self, viewer: Viewer) -> bool:
        if self.user is not None:
            return self.user.uid == viewer.user.uid
        return self.group is not None and self.group.id in viewer.groups

    def same_holder(self, other: Entry) -> bool:
        if self.user is not None and other.user is not None:
            return self.user.uid == other.user.uid
        return self.group is not None and other.group is not None and self.group == other.group


@dataclass(slots=True)
class Policy:
    access_type: str = "inherited"
    all_staff_role: str = "editor"


@dataclass(slots=True)
class PageAccess:
    """A page's policy and personal entries; the owner's entry is drawn from the page's author
    under `owner_entry_id`."""

    policy: Policy = field(default_factory=Policy)
    entries: list[Entry] = field(default_factory=list)
    owner_entry_id: str = ""


def owner_entry(page: Page) -> Entry:
    return Entry(page.access.owner_entry_id, "author", "inherited", page.created_at, page.author)


def direct_entries(page: Page) -> list[Entry]:
    """The page's own entries, the owner's first."""
    return [owner_entry(page), *page.access.entries]


def chain(wiki: WikiOrg, page: Page) -> list[Page]:
    """The page, then each ancestor it inherits from; the last one sets the policy."""
    pages = [page]
    while pages[-1].access.policy.access_type == "inherited":
        parent = wiki.parent_of(pages[-1])
        if parent is None:
            break
        pages.append(parent)
    return pages


def inherited_entries(wiki: WikiOrg, page: Page) -> list[Entry]:
    """The entries of the ancestors that reach `page` (their inheritance is ``inherited``)."""
    return [
        entry
        for ancestor in chain(wiki, page)[1:]
        for entry in direct_entries(ancestor)
        if entry.inheritance == "inherited"
    ]


def effective_policy(wiki: WikiOrg, page: Page) -> Policy:
    top = chain(wiki, page)[-1].access.policy
    if top.access_type == "inherited":  # a top-level page cannot inherit
        return Policy("all_staff", top.all_staff_role)
    return top


def role_of(wiki: WikiOrg, page: Page, viewer: Viewer) -> str | None:
    """The strongest role `viewer` holds on `page`, or None when they may not even read it."""
    if viewer.admin:
        return "author"
    roles = [
        entry.role
        for entry in direct_entries(page) + inherited_entries(wiki, page)
        if entry.holds(viewer)
    ]
    policy = effective_policy(wiki, page)
    if policy.access_type == "all_staff":
        roles.append(policy.all_staff_role)
    return max(roles, key=ROLES.index) if roles else None


def may_read(wiki: WikiOrg, page: Page, viewer: Viewer) -> bool:
    return role_of(wiki, page, viewer) is not None


def locked_out(wiki: WikiOrg, page: Page, viewer: Viewer) -> bool:
    """Whether `viewer` can no longer both read `page` and change its access."""
    return role_of(wiki, page, viewer) not in MANAGERS
