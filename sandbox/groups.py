"""The groups of an organisation: the same names and members (by login) in every org, ids of
its own, so a group id copied from one org instead of mapped by name is unknown in the other.

Membership is a fixed table by login, not drawn at random, so a test can say who reads a page
open to a group. The plain user (``people.USER_LOGIN``) belongs to ``All employees``,
``engineering`` and ``support``, and not to ``hr``, ``security``, ``finance`` or
``everyone-else`` (every person but the plain user).

The group of every person is named as the service names it (``ALL_STAFF``): the tracker's own
help tells a queue's owner "to add all your organization's employees, select the group All
employees" (yandex.com/support/connect-tracker/manager/queue-access.html); it is a group like
the others here, with an id of each org's own, mapped by that name. The service account (the admin token's
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
ALL_STAFF = "All employees"  # the group of every person, as the service names it
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

    def ids_of(self, user: User) -> frozenset[str]:
        """The ids of the groups `user` is a member of."""
        return self._of_user.get(user.uid, frozenset())


def build_groups(org: Org) -> Groups:
    """`org`'s groups: members by login from its users, ids drawn from the org's id."""
    band = BANDS.get(org.role, 2)
    rng = random.Random(f"groups:{org.id}")
    ids = rng.sample(range(100 + 1000 * band, 1000 * (band + 1)), len(MEMBERS))
    groups = []
    for gid, (name, logins) in zip(ids, MEMBERS.items(), strict=True):
        members = tuple(user for login in logins if (user := org.find_user(login)) is not None)
        groups.append(Group(str(gid), name, members))
    return Groups(groups)


_BUILT: dict[tuple[str, int, str], Groups] = {}


def groups_of(org: Org) -> Groups:
    """`org`'s groups, built once per organisation (same id, seed and role: same groups)."""
    key = (org.id, org.seed, org.role)
    if key not in _BUILT:
        _BUILT[key] = build_groups(org)
    return _BUILT[key]
