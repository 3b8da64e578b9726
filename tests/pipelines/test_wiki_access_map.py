"""Page access mapping on plain dicts: what a staged page's access becomes in the target, who
reads it, and how a holder that maps to no one fails closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.config.mapping_files import MappingFileError, read_groups_csv
from haul.pipelines.wiki.access import (
    ALL_STAFF,
    Directory,
    Grant,
    Holder,
    HolderMap,
    current,
    readers,
    wanted,
)

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

TARGET = Directory(
    users={"robot": "900", "heidi": "901", "bob": "902", "alice": "903", "peggy.p": "904"},
    groups={"hr": "7001", "everyone": "7002", "engineering": "7003"},
    me="900",
)


def user(login: str, uid: str = "1") -> dict[str, Any]:
    return {"id": int(uid), "identity": {"uid": uid, "cloud_uid": None}, "username": login}


def group(name: str, gid: str) -> dict[str, Any]:
    return {"id": gid, "identity": {"src": "dir", "id": gid}, "name": name, "type": "group"}


def entry(holder: dict[str, Any], role: str = "reader", inheritance: str = "inherited") -> Any:
    """An access entry of a user or a group (a group says ``type: group``)."""
    kind, other = ("group", "user") if holder.get("type") == "group" else ("user", "group")
    return {"id": "a1", kind: holder, other: None, "role": role, "inheritance": inheritance}


def page(access_type: str, direct: list[dict[str, Any]], inherited: list[dict[str, Any]] = (),
         resolved: str | None = None, owner: str = "heidi") -> dict[str, Any]:  # fmt: skip
    return {
        "owner": user(owner),
        "access_policy": {
            "access_type": access_type,
            "inherited_access_type": resolved,
            "all_staff_role": "editor" if "all_staff" in (access_type, resolved) else None,
        },
        "access_lists": {"direct": direct, "inherited": list(inherited), "by_link": []},
    }


HR = page("custom", [entry(user("heidi"), "author"), entry(group("hr", "11"), "editor")])


def test_a_custom_page_keeps_its_entries_mapped_to_target_ids() -> None:
    access = wanted(HR, HolderMap(TARGET), root=False)
    assert access.access_type == "custom" and access.restricted and not access.unmapped
    assert access.grants == (
        Grant(Holder("group", "7001", "hr"), "editor"),
        Grant(Holder("user", "901", "heidi"), "author"),
    )
    assert access.policy() == {"access_type": "custom"}


def test_the_migrating_admin_is_left_out_it_owns_what_it_makes() -> None:
    robot = page("custom", [entry(user("robot"), "author"), entry(user("bob"))], owner="robot")
    assert [g.holder.name for g in wanted(robot, HolderMap(TARGET), root=False).grants] == ["bob"]


def test_an_inheriting_page_inherits_and_a_root_takes_what_it_inherited_as_its_own() -> None:
    child = page("inherited", [entry(user("bob"), "author")], [entry(group("hr", "11"))],
                 resolved="custom", owner="bob")  # fmt: skip
    below = wanted(child, HolderMap(TARGET), root=False)
    assert below.access_type == "inherited" and below.policy() is None
    assert [g.holder.name for g in below.grants] == ["bob"]
    root = wanted(child, HolderMap(TARGET), root=True)
    assert root.access_type == "custom"  # the target parent it lands under decides nothing
    assert sorted(g.holder.name for g in root.grants) == ["bob", "hr"]
    staff = wanted(page("inherited", [], resolved="all_staff"), HolderMap(TARGET), root=True)
    assert staff.policy() == {"access_type": "all_staff", "all_staff_role": "editor"}


def test_users_and_groups_map_through_the_files_then_by_name() -> None:
    holders = HolderMap(TARGET, users={"peggy": "peggy.p"}, groups={"hr": "engineering",
                                                                     "11": "x", "sec": "dir:55"})  # fmt: skip
    assert holders.user(user("peggy")) == Holder("user", "904", "peggy.p")
    assert holders.group(group("hr", "11")) == Holder("group", "7003", "engineering")
    assert holders.group(group("sec", "12")) == Holder("group", "55", "dir:55")  # an id as given
    assert holders.group(group("everyone", "13")) == Holder("group", "7002", "everyone")
    assert holders.group(group("finance", "14")) is None
    assert holders.user(user("mallory")) is None  # default_user is never used for access


def test_a_holder_mapped_to_no_one_restricts_the_page_to_its_owner() -> None:
    """Fail closed: not the other entries, not the policy; the owner (mapped) and the admin."""
    shared = page("all_staff", [entry(user("heidi"), "author"), entry(group("finance", "14")),
                                entry(user("alice"))])  # fmt: skip
    access = wanted(shared, HolderMap(TARGET), root=False)
    assert access.access_type == "custom"
    assert access.grants == (Grant(Holder("user", "901", "heidi"), "author"),)
    assert access.unmapped == ("group finance",)
    gone = page("custom", [entry(user("zed"), "author"), entry(user("bob"))], owner="zed")
    lost = wanted(gone, HolderMap(TARGET), root=False)
    assert lost.grants == () and lost.unmapped == ("user zed",)  # the admin alone


def test_a_user_the_target_lists_as_dismissed_is_no_holder_named_as_one_who_left() -> None:
    """Dismissed by the tracker's user list or in a group's members: never granted (the wiki
    refuses it), the page fails closed, and the name says why."""
    hr = {"name": "hr", "id": "7001", "members": [
        {"username": "heidi", "uid": "901"}, {"username": "olga", "uid": "905", "is_dismissed": True},
    ]}  # fmt: skip
    directory = Directory.of({"username": "robot", "identity": {"uid": "900"}}, [hr],
                             {"bob": "902", "peggy": "904"}, left=["peggy"])  # fmt: skip
    assert directory.left == {"olga", "peggy"} and set(directory.users) == {"heidi", "bob", "robot"}
    owned = page("custom", [entry(user("olga"), "author"), entry(user("peggy")),
                            entry(user("heidi"))], owner="olga")  # fmt: skip
    access = wanted(owned, HolderMap(directory), root=False)
    assert access.grants == ()  # not heidi: fail closed, never wider
    assert access.unmapped == (
        "user olga (left the target org)",
        "user peggy (left the target org)",
    )


def test_a_group_mapped_to_a_group_the_target_lacks_is_named_by_that_target_group() -> None:
    """`haul check`, `haul plan` and the load name what the target lacks (the group the groups
    file names) and where it comes from, not the source group alone."""
    shared = page("custom", [entry(user("heidi"), "author"), entry(group("finance", "14"))])
    access = wanted(shared, HolderMap(TARGET, groups={"finance": "accounts"}), root=False)
    assert access.unmapped == ("group accounts (from source group finance)",)


def test_one_holder_twice_is_one_entry_with_the_stronger_role() -> None:
    twice = page("custom", [entry(user("bob"), "reader", "not_inherited")],
                 [entry(user("bob"), "editor")], resolved="custom")  # fmt: skip
    (grant,) = wanted({**twice, "access_policy": {"access_type": "inherited",
                                                  "inherited_access_type": "custom"}},
                      HolderMap(TARGET), root=True).grants  # fmt: skip
    assert (grant.role, grant.inheritance) == ("editor", "inherited")


def test_readers_resolve_entries_inheritance_and_all_staff() -> None:
    holders = HolderMap(TARGET)
    child = page("inherited", [entry(user("bob"), "author")], [entry(group("hr", "11"))],
                 resolved="custom")  # fmt: skip
    assert readers(child, holders) == ["group hr", "user bob"]
    staff = page("inherited", [entry(user("robot"), "author")], resolved="all_staff")
    assert readers(staff, holders) == [ALL_STAFF]  # the admin is not counted
    stray = page("custom", [entry(group("finance", "14"))])
    assert readers(stray, holders) == ["unmapped group finance"]
    target = page("custom", [entry(user("robot", "900"), "author"),
                             entry(group("hr", "7001"))])  # fmt: skip
    assert readers(target, None, me="900") == ["group hr"]


def test_current_reads_a_target_page_without_the_admins_entry() -> None:
    reply = page("custom", [entry(user("robot", "900"), "author"),
                            entry(user("bob", "902"), "editor", "not_inherited")])  # fmt: skip
    access, entries = current(reply, HolderMap(TARGET))
    assert access.grants == (Grant(Holder("user", "902", "bob"), "editor", "not_inherited"),)
    assert [e.access_id for e in entries] == ["a1"]


def test_the_groups_file_reads_like_the_users_file(tmp_path: Path) -> None:
    path = tmp_path / "groups.csv"
    path.write_text("source group,target group\n# a comment\nhr,people\n\nsec,dir:55\n", "utf-8")
    assert read_groups_csv(path) == {"hr": "people", "sec": "dir:55"}
    path.write_text("hr\n", "utf-8")
    with pytest.raises(MappingFileError, match=r"groups\.csv:1: expected"):
        read_groups_csv(path)
