"""Page access in the sandbox wiki, over sockets with raw httpx as the plain user and as the
admin: the user reads exactly the pages its access allows (and nothing on the others), grants
and revokes take effect at once, the owner's entry and prevent_selflock hold, inheritance turns
on and off, and groups have the same names but ids of their own in each org."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import ya_wiki_api

from haul.sandbox.groups import ALL_STAFF_ID, MEMBERS
from haul.sandbox.people import ADMIN_LOGIN, USER_LOGIN
from haul.sandbox.server import RunningSandbox
from haul.sandbox.wiki.seed import RESTRICTED
from tests.helpers.sandbox_clients import drain_cursor, wiki_for
from tests.helpers.sandbox_shapes import assert_like_recording

READABLE = {
    "team/handbook/engineering",
    "team/handbook/engineering/oncall",
    "team/handbook/hr/holidays",
    "team/runbooks/shared",
}
HIDDEN = {slug for slug, *_ in RESTRICTED} - READABLE
ON_A_PAGE = ("attachments", "grids", "resources", "comments", "descendants")


@pytest.fixture(scope="module")
def admin(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with wiki_for(sandbox, "source") as client:
        yield client


@pytest.fixture(scope="module")
def user(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with wiki_for(sandbox, "source", token="user") as client:
        yield client


def all_slugs(client: httpx.Client, sandbox: RunningSandbox) -> set[str]:
    return {
        ref["slug"]
        for root in sandbox.info["wiki_roots"]["source"]
        for ref in drain_cursor(client, "/pages/descendants", slug=root, include_self="true")
    }


def page_id(admin: httpx.Client, slug: str) -> int:
    return int(admin.get("/pages", params={"slug": slug}).json()["id"])


def assert_refused(reply: httpx.Response) -> None:
    assert reply.status_code == 403, reply.text
    body = reply.json()
    assert body["error_code"] == "FORBIDDEN" and isinstance(body["message"], list)


def create(admin: httpx.Client, slug: str, **extra: Any) -> int:
    body = {"slug": slug, "title": slug.rpartition("/")[2], "content": "text", **extra}
    reply = admin.post("/pages", json=body)
    assert reply.status_code == 200, reply.text
    return int(reply.json()["id"])


def access(client: httpx.Client, pid: int) -> dict[str, Any]:
    reply = client.get(f"/pages/{pid}", params={"fields": "access_policy,access_lists"})
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def groups(sandbox: RunningSandbox, org: str, token: str = "user") -> dict[str, dict[str, Any]]:
    """{name: group} from the sandbox-only group list of `org`."""
    with wiki_for(sandbox, org, token=token) as client:
        base = sandbox.info["wiki"].removesuffix("/v1")
        reply = client.get(base + "/_sandbox/groups")
        assert reply.status_code == 200, reply.text
        return {group["name"]: group for group in reply.json()["results"]}


def grant(client: httpx.Client, pid: int, **body: Any) -> httpx.Response:
    return client.post(f"/pages/{pid}/access", json=body)


def me(client: httpx.Client) -> dict[str, str]:
    return {"uid": client.get("/me").json()["identity"]["uid"]}


def test_the_user_lists_exactly_the_pages_its_access_allows(
    sandbox: RunningSandbox, admin: httpx.Client, user: httpx.Client
) -> None:
    everything = all_slugs(admin, sandbox)
    assert everything >= HIDDEN | READABLE
    assert all_slugs(user, sandbox) == everything - HIDDEN


def test_a_hidden_page_is_refused_with_everything_on_it(
    admin: httpx.Client, user: httpx.Client
) -> None:
    for slug in sorted(HIDDEN):
        pid = page_id(admin, slug)
        assert_refused(user.get("/pages", params={"slug": slug}))
        assert_refused(user.get(f"/pages/{pid}", params={"fields": "content"}))
        for listing in ON_A_PAGE:
            assert admin.get(f"/pages/{pid}/{listing}").status_code == 200
            assert_refused(user.get(f"/pages/{pid}/{listing}"))
        assert_refused(user.post(f"/pages/{pid}/comments", json={"body": "let me in"}))
        assert_refused(user.post(f"/pages/{pid}", json={"content": "mine now"}))


def test_files_grids_and_comments_of_a_hidden_page_are_refused_by_their_own_ids(
    admin: httpx.Client, user: httpx.Client
) -> None:
    """`team/handbook/hr/salaries` is hidden and furnished; `engineering/oncall` is readable."""
    for slug, readable in (("team/handbook/hr/salaries", False),
                           ("team/handbook/engineering/oncall", True)):  # fmt: skip
        pid = page_id(admin, slug)
        (file,) = drain_cursor(admin, f"/pages/{pid}/attachments")
        (grid,) = drain_cursor(admin, f"/pages/{pid}/grids")
        assert drain_cursor(admin, f"/pages/{pid}/comments")
        replies = [
            user.get(f"/pages/{pid}/attachments/{file['id']}"),
            user.get(f"/pages/{pid}/attachments/{file['id']}/download"),
            user.get(f"/grids/{grid['id']}"),
            user.get(f"/pages/{pid}", params={"fields": "content,attributes"}),
        ]
        for reply in replies:
            if readable:
                assert reply.status_code == 200, reply.text
            else:
                assert_refused(reply)
        if readable:
            assert drain_cursor(user, f"/pages/{pid}/comments")


def test_search_finds_only_what_the_user_may_read(admin: httpx.Client, user: httpx.Client) -> None:
    query = {"query": "Who reads this page is set in its access"}
    reply = admin.post("/search", json=query)
    assert_like_recording("wiki:pages/search", reply.status_code, reply.json())
    everyone = {hit["slug"] for hit in reply.json()["results"]}
    mine = {hit["slug"] for hit in user.post("/search", json=query).json()["results"]}
    assert everyone == HIDDEN | READABLE
    assert mine == READABLE
    first = user.post("/search", json=query, params={"page_size": 3}).json()
    last = user.post("/search", json=query, params={"page_size": 3, "cursor": 2}).json()
    after = user.post("/search", json=query, params={"page_size": 3, "cursor": 3}).json()
    assert (len(first["results"]), len(last["results"]), after["results"]) == (3, 1, [])
    assert after["next_cursor"] == "4"  # set after an empty page: stop at the first one


def test_the_seeded_access_reads_back_as_the_spec_shapes_it(admin: httpx.Client) -> None:
    hr = access(admin, page_id(admin, "team/handbook/hr"))
    assert hr["access_policy"]["access_type"] == "custom"
    owner, group = hr["access_lists"]["direct"]
    assert (owner["user"]["username"], owner["role"]) == ("heidi", "author")
    assert (group["group"]["name"], group["group"]["identity"]["src"]) == ("hr", "dir")
    assert (group["role"], group["inheritance"]) == ("editor", "inherited")
    salaries = access(admin, page_id(admin, "team/handbook/hr/salaries"))
    assert salaries["access_policy"] == {
        "access_type": "inherited",
        "inherited_access_type": "custom",
        "all_staff_role": None,
        "has_external": False,
        "invite": None,
    }
    inherited = {entry["id"] for entry in salaries["access_lists"]["inherited"]}
    assert inherited == {owner["id"], group["id"]}
    root = access(admin, page_id(admin, "team/handbook"))["access_policy"]
    assert (root["access_type"], root["all_staff_role"]) == ("all_staff", "editor")


def test_grant_change_and_revoke_take_effect_at_once(
    admin: httpx.Client, user: httpx.Client
) -> None:
    parent = create(admin, "team/access-test/grants", access_policy={"access_type": "custom"})
    child = create(admin, "team/access-test/grants/child")
    assert_refused(user.get(f"/pages/{parent}"))
    granted = grant(admin, parent, user=me(user), role="reader")
    assert granted.status_code == 200, granted.text
    entry = granted.json()
    assert (entry["role"], entry["inheritance"]) == ("reader", "inherited")
    assert entry["user"]["username"] == USER_LOGIN and entry["group"] is None
    assert user.get(f"/pages/{parent}").status_code == 200
    assert user.get(f"/pages/{child}").status_code == 200  # the entry reaches the subpage
    changed = admin.post(f"/pages/{parent}/access/{entry['id']}",
                         json={"inheritance": "not_inherited"})  # fmt: skip
    assert changed.status_code == 200 and changed.json()["role"] == "reader"
    assert user.get(f"/pages/{parent}").status_code == 200
    assert_refused(user.get(f"/pages/{child}"))
    assert admin.delete(f"/pages/{parent}/access/{entry['id']}").status_code == 204
    assert_refused(user.get(f"/pages/{parent}"))
    assert admin.delete(f"/pages/{parent}/access/{entry['id']}").status_code == 404


def test_a_group_grant_opens_the_page_to_its_members_only(
    sandbox: RunningSandbox, admin: httpx.Client, user: httpx.Client
) -> None:
    named = groups(sandbox, "source")
    pid = create(admin, "team/access-test/groups", access_policy={"access_type": "custom"})
    security = {"src": "dir", "id": named["security"]["id"]}
    assert grant(admin, pid, group=security, role="reader").status_code == 200
    assert_refused(user.get(f"/pages/{pid}"))
    engineering = {"src": "dir", "id": named["engineering"]["id"]}
    assert grant(admin, pid, group=engineering, role="reader").status_code == 200
    assert user.get(f"/pages/{pid}").status_code == 200
    again = grant(admin, pid, group=engineering, role="editor")
    assert again.status_code == 409 and again.json()["error_code"] == "ALREADY_EXISTS"


def test_groups_have_the_same_names_and_members_but_their_own_ids_in_each_org(
    sandbox: RunningSandbox,
) -> None:
    source, target = groups(sandbox, "source"), groups(sandbox, "target", token="admin")
    assert set(source) == set(target) == set(MEMBERS)
    shared = {g["id"] for g in source.values()} & {g["id"] for g in target.values()}
    assert shared == {ALL_STAFF_ID}  # the group of every person has one id everywhere
    for name in MEMBERS:
        logins = [m["username"] for m in source[name]["members"]]
        assert logins == [m["username"] for m in target[name]["members"]] == list(MEMBERS[name])
        assert source[name]["members_count"] == len(logins)
    mine = {name for name, group in source.items() if USER_LOGIN in MEMBERS[name]}
    assert mine == {"All employees", "engineering", "support"}
    assert USER_LOGIN not in MEMBERS["everyone-else"]
    assert ADMIN_LOGIN not in MEMBERS["All employees"]


def test_a_group_id_of_the_other_org_is_unknown(
    sandbox: RunningSandbox, admin: httpx.Client
) -> None:
    source_hr = groups(sandbox, "source")["hr"]["id"]
    with wiki_for(sandbox, "target") as target:
        pid = create(target, "team/access-test/foreign-group")
        wrong = grant(target, pid, group={"src": "dir", "id": source_hr}, role="reader")
        assert wrong.status_code == 400 and wrong.json()["error_code"] == "VALIDATION_ERROR"
        mapped = groups(sandbox, "target", token="admin")["hr"]["id"]
        right = grant(target, pid, group={"src": "dir", "id": mapped}, role="reader")
        assert right.status_code == 200 and right.json()["group"]["name"] == "hr"


def test_the_owners_entry_cannot_be_changed_or_revoked(
    admin: httpx.Client, user: httpx.Client
) -> None:
    pid = create(admin, "team/access-test/owner", access_policy={"access_type": "custom"})
    (owner,) = access(admin, pid)["access_lists"]["direct"]
    assert (owner["user"]["username"], owner["role"]) == (ADMIN_LOGIN, "author")
    for reply in (
        admin.post(f"/pages/{pid}/access/{owner['id']}", json={"role": "reader"}),
        admin.delete(f"/pages/{pid}/access/{owner['id']}"),
    ):
        assert reply.status_code == 409 and reply.json()["error_code"] == "OWNER_ACCESS"
    robot = access(admin, pid)["access_lists"]["direct"][0]["user"]["identity"]["uid"]
    assert grant(admin, pid, user={"uid": robot}, role="reader").status_code == 409
    assert grant(admin, pid, user=me(user), role="editor").status_code == 200
    assert admin.delete(f"/pages/{pid}/access").status_code == 204  # revoke all
    assert access(admin, pid)["access_lists"]["direct"] == [owner]
    assert_refused(user.get(f"/pages/{pid}"))


def test_prevent_selflock_refuses_a_change_that_locks_the_caller_out(
    admin: httpx.Client, user: httpx.Client
) -> None:
    pid = create(admin, "team/access-test/selflock", access_policy={"access_type": "custom"})
    mine = grant(admin, pid, user=me(user), role="extra_editor").json()
    locking = (
        ("DELETE", f"/pages/{pid}/access/{mine['id']}", None),
        ("DELETE", f"/pages/{pid}/access", None),
        ("POST", f"/pages/{pid}/access/{mine['id']}", {"role": "editor"}),
    )
    for method, path, body in locking:
        reply = user.request(method, path, params={"prevent_selflock": "true"}, json=body)
        assert reply.status_code == 409 and reply.json()["error_code"] == "SELF_LOCK", path
        assert user.get(f"/pages/{pid}").status_code == 200  # nothing changed
    assert user.delete(f"/pages/{pid}/access/{mine['id']}").status_code == 204  # not asked
    assert_refused(user.get(f"/pages/{pid}"))


def test_only_a_manager_changes_access(admin: httpx.Client, user: httpx.Client) -> None:
    pid = create(admin, "team/access-test/managers")  # open to all staff as editors
    assert user.get(f"/pages/{pid}").status_code == 200
    assert_refused(grant(user, pid, user=me(user), role="author"))
    assert_refused(user.delete(f"/pages/{pid}/access"))


def test_a_page_stops_and_resumes_inheriting(admin: httpx.Client, user: httpx.Client) -> None:
    parent = create(admin, "team/access-test/inherit", access_policy={"access_type": "custom"})
    child = create(admin, "team/access-test/inherit/child")
    grant(admin, parent, user=me(user), role="reader")
    assert user.get(f"/pages/{child}").status_code == 200
    own = {"content": "text", "access_policy": {"access_type": "custom"}}
    assert admin.post(f"/pages/{child}", json=own).status_code == 200
    assert_refused(user.get(f"/pages/{child}"))
    assert access(admin, child)["access_lists"]["inherited"] == []
    back = {"content": "text", "access_policy": {"access_type": "inherited"}}
    assert admin.post(f"/pages/{child}", json=back).status_code == 200
    assert user.get(f"/pages/{child}").status_code == 200
    everyone = {"content": "text", "access_policy": {"access_type": "all_staff"}}
    assert admin.post(f"/pages/{parent}", json=everyone).status_code == 200
    assert access(admin, child)["access_policy"]["inherited_access_type"] == "all_staff"


def test_a_page_created_without_access_inherits_and_so_widens(
    sandbox: RunningSandbox, admin: httpx.Client, user: httpx.Client
) -> None:
    """What a migration that does not carry access produces: a copy of a restricted page,
    created under an open parent, is open to the plain user."""
    pid = create(admin, "team/runbooks/new-page")
    assert user.get(f"/pages/{pid}", params={"fields": "content"}).status_code == 200
    policy = access(admin, pid)["access_policy"]
    assert (policy["access_type"], policy["inherited_access_type"]) == ("inherited", "all_staff")
    with wiki_for(sandbox, "target") as target, wiki_for(sandbox, "target", "user") as reader:
        create(target, "team/handbook")
        copy = create(target, "team/handbook/hr")  # the source's is shut to the plain user
        assert reader.get(f"/pages/{copy}").status_code == 200
        (owner,) = access(target, copy)["access_lists"]["direct"]
        assert owner["user"]["username"] == ADMIN_LOGIN  # the creator owns it


def test_the_admin_reads_every_page_and_its_access(
    sandbox: RunningSandbox, admin: httpx.Client
) -> None:
    for slug in sorted(HIDDEN):
        pid = page_id(admin, slug)
        assert admin.get(f"/pages/{pid}", params={"fields": "content"}).status_code == 200
        assert access(admin, pid)["access_lists"]["direct"]


def test_a_third_party_client_as_the_user_is_refused_and_lists_less(
    sandbox: RunningSandbox,
) -> None:
    """`ya-wiki-api` has no access calls: it reads, and is refused, as the real service would."""
    info = sandbox.info
    with ya_wiki_api.WikiClient(token=info["tokens"]["user"], org_id=info["orgs"]["source"],
                                base_url=info["wiki"]) as wiki:  # fmt: skip
        with pytest.raises(ya_wiki_api.WikiAPIError) as refused:
            wiki.pages.get("team/handbook/hr/salaries", fields="content")
        assert refused.value.status_code == 403
        assert refused.value.detail["error_code"] == "FORBIDDEN"
        assert wiki.pages.get("team/handbook/hr/holidays", fields="content").content
        refs = wiki.pages.get_descendants_by_slug("team/handbook", page_size=100).results
        slugs = {ref.slug for ref in refs}
        assert "team/handbook/hr/holidays" in slugs and not slugs & HIDDEN


def roles_on(sandbox: RunningSandbox, org: str, slug: str, token: str = "admin") -> httpx.Response:
    with wiki_for(sandbox, org, token=token) as client:
        base = sandbox.info["wiki"].removesuffix("/v1")
        return client.get(base + "/_sandbox/roles", params={"slug": slug})


def test_the_sandbox_tells_every_users_role_on_a_seeded_page(sandbox: RunningSandbox) -> None:
    """Who reads what, by login: the owners, the group's members, no one else."""
    salaries = roles_on(sandbox, "source", "team/handbook/hr/salaries").json()["roles"]
    assert salaries == {"heidi": "author", "judy": "author", "olga": "editor", "peggy": "editor"}
    details = roles_on(sandbox, "source", "team/runbooks/shared/details").json()["roles"]
    assert details == {"bob": "author", "peggy": "reader", "rupert": "reader", "sybil": "reader"}
    offsite = roles_on(sandbox, "source", "team/handbook/offsite").json()["roles"]
    assert set(offsite) == set(MEMBERS["everyone-else"])
    for slug, *_ in RESTRICTED:
        roles = roles_on(sandbox, "source", slug).json()["roles"]
        assert (USER_LOGIN in roles) == (slug in READABLE), slug
    assert roles_on(sandbox, "source", "team/handbook", token="user").status_code == 403
