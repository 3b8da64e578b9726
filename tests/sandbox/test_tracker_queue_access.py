"""The tracker sandbox serves what a user or group may do in a queue, per organisation.

The official SDK has no call for one user's or group's queue permissions (only the queue's
whole `permissions` and `checkPermissions/{code}` for the caller), so these go over raw httpx.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import client_for
from tests.helpers.sandbox_shapes import assert_like_recording


def held(reply: httpx.Response) -> dict[str, dict[str, list[str]]]:
    """code -> {"users"/"groups": the displays it is held through}."""
    assert reply.status_code == 200, reply.text
    return {
        code: {kind: [ref["display"] for ref in refs] for kind, refs in via.items()}
        for code, via in reply.json()["permissions"].items()
    }


def group_id(client: httpx.Client, name: str) -> str:
    """A group's id in the client's org, read off the plain user's reply in TEST (where it
    holds permissions through everyone, engineering and support)."""
    body = client.get("/queues/TEST/permissions/users/alice").json()
    refs = [ref for via in body["permissions"].values() for ref in via.get("groups", [])]
    return next(str(ref["id"]) for ref in refs if ref["display"] == name)


@pytest.fixture(scope="module")
def plain(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(sandbox, "source", token="user") as client:
        yield client


def test_a_users_permissions_name_how_each_is_held(source: httpx.Client) -> None:
    """The queue's lead holds create, write and grant itself, and reads, creates and writes
    through its groups; the reply is shaped like the recorded live one."""
    reply = source.get("/queues/TEST/permissions/users/alice")

    assert_like_recording("queues/user_permissions_get", reply.status_code, reply.json())
    assert reply.json()["user"]["display"] == "Alice Anderson"
    assert held(reply) == {
        "READ": {"groups": ["All employees"]},
        "CREATE": {"users": ["Alice Anderson"], "groups": ["All employees"]},
        "WRITE": {"users": ["Alice Anderson"], "groups": ["engineering", "support"]},
        "GRANT": {"users": ["Alice Anderson"]},
    }


def test_a_groups_permissions_are_its_own_grants(source: httpx.Client) -> None:
    support = group_id(source, "support")

    reply = source.get(f"/queues/DEV/permissions/groups/{support}")

    assert held(reply) == {"WRITE": {"groups": ["support"]}}
    group = reply.json()["group"]
    assert (group["id"], group["display"]) == (support, "support")
    assert group["self"].endswith(f"/groups/{support}")


def test_the_target_org_differs_in_two_queues(source: httpx.Client, target: httpx.Client) -> None:
    """In the target, support may not write in DEV and bob may grant in TEST; OPS is alike;
    a person is named by login or uid."""
    src_support, dst_support = group_id(source, "support"), group_id(target, "support")
    assert src_support != dst_support  # same name, ids of each org
    assert held(source.get(f"/queues/DEV/permissions/groups/{src_support}")) != {}
    assert held(target.get(f"/queues/DEV/permissions/groups/{dst_support}")) == {}
    assert "WRITE" in held(source.get("/queues/DEV/permissions/users/frank"))
    assert "WRITE" not in held(target.get("/queues/DEV/permissions/users/frank"))
    bob = target.get("/users/bob").json()["uid"]
    assert "GRANT" not in held(source.get("/queues/TEST/permissions/users/bob"))
    assert held(target.get(f"/queues/TEST/permissions/users/{bob}"))["GRANT"] == {
        "users": ["Bob Brown"]
    }
    for login in ("alice", "bob", "frank", "heidi"):
        path = f"/queues/OPS/permissions/users/{login}"
        assert held(source.get(path)) == held(target.get(path))


def test_unknown_queue_user_or_group_is_a_404(source: httpx.Client) -> None:
    assert source.get("/queues/NOPE/permissions/users/alice").status_code == 404
    assert source.get("/queues/TEST/permissions/users/nobody").status_code == 404
    missing = source.get("/queues/TEST/permissions/groups/support")  # a name is not an id
    assert missing.status_code == 404
    assert missing.json()["errors"] == {"group": "support"}


def test_the_plain_user_may_read_them(plain: httpx.Client) -> None:
    assert "READ" in held(plain.get("/queues/TEST/permissions/users/heidi"))


def test_a_test_sets_one_holders_grants(
    sandbox: RunningSandbox, target: httpx.Client, plain: httpx.Client
) -> None:
    """PUT /_sandbox/queues/.../permissions/{kind}/{holder}: the admin token only; the holder's
    own grants become exactly the codes given, and its members' permissions follow."""
    control = httpx.Client(
        base_url=sandbox.info["tracker"].rsplit("/v3", 1)[0],
        headers=dict(target.headers),
        timeout=30,
    )
    everyone = next(
        ref["id"]
        for via in target.get("/queues/OPS/permissions/users/heidi").json()["permissions"].values()
        for ref in via.get("groups", [])
    )  # heidi holds all she holds through everyone
    with control:
        narrowed = control.put(
            f"/_sandbox/queues/OPS/permissions/groups/{everyone}", json={"permissions": ["CREATE"]}
        )
        widened = control.put(
            "/_sandbox/queues/OPS/permissions/users/heidi", json={"permissions": ["GRANT"]}
        )
        bad = control.put(
            "/_sandbox/queues/OPS/permissions/users/heidi", json={"permissions": ["FLY"]}
        )
        refused = control.put(
            "/_sandbox/queues/OPS/permissions/users/heidi",
            json={"permissions": []},
            headers={"Authorization": str(plain.headers["Authorization"])},
        )

    assert held(narrowed) == {"CREATE": {"groups": ["All employees"]}}
    assert held(widened) == {
        "CREATE": {"groups": ["All employees"]},
        "GRANT": {"users": ["Heidi Hall"]},
    }
    assert held(target.get("/queues/OPS/permissions/users/heidi")) == held(widened)
    assert bad.status_code == 400
    assert refused.status_code == 403


def test_the_group_of_every_person_is_named_as_the_service_names_it(
    source: httpx.Client, target: httpx.Client, plain: httpx.Client
) -> None:
    """The tracker's help names the group of all an organisation's employees "All employees":
    `GET /groups` lists it so (name and display) in both orgs, under the id 1 of every org
    (the vendor's importer's `ALL_PARTICIPANTS_GROUP_ID`), and the plain user reads a queue
    through it."""
    for org, client in (("source", source), ("target", target)):
        groups = client.get("/groups").json()
        everyone = [g for g in groups if g["name"] == "All employees"]
        assert [(g["display"], g["id"]) for g in everyone] == [("All employees", 1)], org
        assert "everyone" not in {g["name"] for g in groups}
    assert held(plain.get("/queues/TEST/permissions/users/heidi"))["READ"] == {
        "groups": ["All employees"]
    }


def test_a_russian_org_names_the_group_of_every_person_in_russian_under_id_1() -> None:
    """The group's name follows the organisation's language, its id does not: removing id 1
    from a queue's scheme (as the vendor's importer does) works in either language."""
    with (
        start_sandbox(seed=1, size="tiny", languages={"target": "ru"}) as russian,
        client_for(russian, "target") as target,
    ):
        everyone = [g for g in target.get("/groups").json() if g["id"] == 1]
        assert [(g["name"], g["display"]) for g in everyone] == [("Все сотрудники",) * 2]
        removed = target.patch(
            "/queues/NEW/permissions", json={"read": {"groups": {"remove": [1]}}}
        )
        assert removed.status_code == 200, removed.text
        assert "READ" not in held(target.get("/queues/NEW/permissions/groups/1"))
