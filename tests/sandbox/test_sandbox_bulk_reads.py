"""The reads that serve many issues at once: the "Have Links To Queue" condition and the
organisation-wide worklog search, each checked against the per-issue listings."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox
from tests.helpers.sandbox_clients import client_for


@pytest.fixture
def admin(fresh: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(fresh, "source") as client:
        yield client


def every_issue(client: httpx.Client) -> list[dict]:
    return client.post("/issues/_search", params={"perPage": 1000}).json()


def found(client: httpx.Client, query: str) -> set[str]:
    reply = client.post("/issues/_search", json={"query": query}, params={"perPage": 1000})
    assert reply.status_code == 200, reply.text
    return {issue["key"] for issue in reply.json()}


def test_have_links_to_queue_finds_exactly_the_linked_issues(admin: httpx.Client) -> None:
    """Naming every queue selects exactly the issues whose link listing is not empty; naming
    one queue, those with a link to an issue of it."""
    created = admin.post("/issues", json={"queue": "TEST", "summary": "no links"})
    assert created.status_code == 201, created.text
    issues = every_issue(admin)
    queues = sorted({issue["queue"]["key"] for issue in issues})
    links = {issue["key"]: admin.get(f"/issues/{issue['key']}/links").json() for issue in issues}
    linked = {key for key, listed in links.items() if listed}
    assert linked and created.json()["key"] not in linked
    every = ", ".join(queues)
    assert found(admin, f'"Have Links To Queue": {every}') == linked
    first = queues[0]
    to_first = {
        key
        for key, listed in links.items()
        if any(link["object"]["key"].startswith(f"{first}-") for link in listed)
    }
    assert found(admin, f'Queue: {queues[1]} AND "Have Links To Queue": {first}') == {
        key for key in to_first if key.startswith(f"{queues[1]}-")
    }


def test_links_missed_fault_hides_some_linked_issues(
    fresh: RunningSandbox, admin: httpx.Client
) -> None:
    """With ``links_missed`` the condition finds fewer, always the same ones."""
    queues = ", ".join(sorted({issue["queue"]["key"] for issue in every_issue(admin)}))
    query = f'"Have Links To Queue": {queues}'
    whole = found(admin, query)
    fresh.set_faults("links_missed:0.5")
    missing = found(admin, query)
    assert missing < whole and missing == found(admin, query)


def test_worklog_search_is_the_union_of_the_issue_listings(
    fresh: RunningSandbox, admin: httpx.Client
) -> None:
    """The organisation's worklogs by createdAt window are those of every issue; beyond the
    cap the request is refused with 400 as the service refuses it."""
    per_issue = {
        record["id"]: record
        for issue in every_issue(admin)
        for record in admin.get(f"/issues/{issue['key']}/worklog", params={"perPage": 100}).json()
    }
    assert per_issue
    reply = admin.post("/worklog/_search", json={})
    assert reply.status_code == 200, reply.text
    assert {record["id"]: record for record in reply.json()} == per_issue
    stamps = sorted(record["createdAt"] for record in per_issue.values())
    middle = stamps[len(stamps) // 2]
    window = {"createdAt": {"from": stamps[0], "to": middle}}
    early = admin.post("/worklog/_search", json=window).json()
    assert {r["id"] for r in early} == {
        key for key, r in per_issue.items() if r["createdAt"] <= middle
    }
    fresh.set_faults(f"worklog_cap:{len(per_issue) - 1}")
    refused = admin.post("/worklog/_search", json={})
    assert refused.status_code == 400
    assert "exceeds" in refused.json()["errorMessages"][0]


def test_have_links_to_queue_does_not_see_links_into_a_queue_the_caller_cannot_read(
    fresh: RunningSandbox, admin: httpx.Client
) -> None:
    """With OPS unreadable to the plain user, the condition naming every queue misses the
    issues whose links all go into OPS, though their own listings show those links."""
    created = admin.post("/issues", json={"queue": "TEST", "summary": "linked into OPS only"})
    assert created.status_code == 201, created.text
    alone = created.json()["key"]
    linked = admin.post(
        f"/issues/{alone}/links", json={"relationship": "relates", "issue": "OPS-1"}
    )
    assert linked.status_code == 201, linked.text
    everyone = next(
        ref["id"]
        for via in admin.get("/queues/OPS/permissions/users/heidi").json()["permissions"].values()
        for ref in via.get("groups", [])
    )
    control = {
        "Authorization": str(admin.headers["Authorization"]),
        "X-Org-ID": admin.headers["X-Org-ID"],
    }
    base = fresh.info["tracker"].rsplit("/v3", 1)[0]
    hidden = httpx.put(
        f"{base}/_sandbox/queues/OPS/permissions/groups/{everyone}",
        json={"permissions": ["CREATE"]},
        headers=control,
    )
    assert hidden.status_code == 200, hidden.text
    with client_for(fresh, "source", token="user") as plain:
        issues = every_issue(plain)
        assert issues and all(issue["queue"]["key"] != "OPS" for issue in issues)
        links = {i["key"]: plain.get(f"/issues/{i['key']}/links").json() for i in issues}
        seen = {
            key
            for key, listed in links.items()
            if any(not link["object"]["key"].startswith("OPS-") for link in listed)
        }
        blind = {key for key, listed in links.items() if listed} - seen
        assert alone in blind
        assert found(plain, '"Have Links To Queue": DEV, OPS, TEST') == seen
