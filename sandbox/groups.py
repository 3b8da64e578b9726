"""The groups of an organisation: the same names and members (by login) in every org, ids of
its own, so a group id copied from one org instead of mapped by name is unknown in the other.

Membership is a fixed table by login, not drawn at random, so a test can say who reads a page
open to a group. The plain user (``people.USER_LOGIN``) belongs to ``All employees``,
``engineering`` and ``support``, and not to ``hr``, ``security``, ``finance`` or
``everyone-else`` (every person but the plain user).

The group of every person is named as the service names it, in the organisation's language
(``ALL_STAFF_NAMES``): the tracker's own help tells a queue's owner "to add all your
organization's employees, select the group All employees"
(yandex.com/support/connect-tracker/manager/queue-access.html); a Russian organisation calls it
"Все сотрудники". Its id is the same in every organisation, ``ALL_STAFF_ID`` (1), as the vendor's
own importer names it (``ALL_PARTICIPANTS_GROUP_ID = 1``): found by that id, never by a name
that changes with the language. The sandbox's code names it ``ALL_STAFF`` whatever the
language (:meth:`Groups.named`). The service account (the admin token's
user) is in no group. Computed from what an :class:`Org` already holds (its id, role and
users) and kept per org, so any service of the sandbox can ask for them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from haul.sandbox import people
from haul.sandbox.people import User
from haul.sandbox.tracker.model import Org

PEOPLE = tuple(login for login, _, _ in people.PEOPLE if login != people.ADMIN_LOGIN)
ALL_STAFF = "All employees"  # the group of every person, as the service names it in English
ALL_STAFF_ID = "1"  # its id in every organisation
ALL_STAFF_NAMES = {"en": ALL_STAFF, "ru": "Все сотрудники"}  # its name in each language
MEMBERS: dict[str, tuple[str, ...]] = {
    ALL_STAFF: PEOPLE,
    "engineering": ("alice", "bob", "carol", "dave", "ivan", "yuki"),
    "support": ("alice", "frank", "grace", "niaj", "wendy"),
    "hr": ("heidi", "judy", "olga", "peggy"),
    "security": ("eve", "mallory", "trent", "victor"),
    "finance": ("peggy", "rupert", "sybil"),
    "everyone-else": tuple(login for login in PEOPLE if login != people.USER_LOGIN),
}
BANDS = {"source": 0, "target": 1}  # id ranges of the two orgs never overlap


@dataclass(frozen=True, slots=True)
class Group:
    id: str
    name: str
    members: tuple[User, ...]

    def json(self) -> dict[str, object]:
        """The group as an access entry names it (``src`` is the directory: ``dir``)."""
        return {
            "id": self.id,
            "identity": {"src": "dir", "id": self.id},
            "name": self.name,
            "type": "group",
            "members_count": len(self.members),
        }


class Groups:
    """One org's groups, found by id or by name, and the groups a user belongs to."""

    def __init__(self, groups: list[Group]) -> None:
        self.all = groups
        self.by_id = {group.id: group for group in groups}
        self.by_name = {group.name: group for group in groups}
        self._of_user: dict[int, frozenset[str]] = {}
        for group in groups:
            for user in group.members:
                self._of_user[user.uid] = self._of_user.get(user.uid, frozenset()) | {group.id}

    def named(self, name: str) -> Group:
        """A group by the name this module gives it (``ALL_STAFF``: the group of every
        person, whatever the organisation's language calls it)."""
        return self.by_id[ALL_STAFF_ID] if name == ALL_STAFF else self.by_name[name]

    def ids_of(self, user: User) -> frozenset[str]:
        """The ids of the groups `user` is a member of."""
        return self._of_user.get(user.uid, frozenset())


def build_groups(org: Org) -> Groups:
    """`org`'s groups: members by login from its users, ids drawn from the org's id (the
    group of every person: ``ALL_STAFF_ID``, named in the org's language)."""
    band = BANDS.get(org.role, 2)
    rng = random.Random(f"groups:{org.id}")
    ids = rng.sample(range(100 + 1000 * band, 1000 * (band + 1)), len(MEMBERS))
    groups = []
    for gid, (name, logins) in zip(ids, MEMBERS.items(), strict=True):
        members = tuple(user for login in logins if (user := org.find_user(login)) is not None)
        if name == ALL_STAFF:
            gid, name = int(ALL_STAFF_ID), ALL_STAFF_NAMES[org.language]
        groups.append(Group(str(gid), name, members))
    return Groups(groups)


_BUILT: dict[tuple[str, int, str, str], Groups] = {}


def groups_of(org: Org) -> Groups:
    """`org`'s groups, built once per organisation (same id, seed, role and language: same
    groups)."""
    key = (org.id, org.seed, org.role, org.language)
    if key not in _BUILT:
        _BUILT[key] = build_groups(org)
    return _BUILT[key]
