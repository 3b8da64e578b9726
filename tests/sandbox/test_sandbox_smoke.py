"""The minimal migration path end to end: auth, scroll the source, read records, import."""

from __future__ import annotations

import httpx

from haul.sandbox.server import RunningSandbox


def test_myself_names_the_token_owner(source: httpx.Client, user: httpx.Client) -> None:
    """The admin token acts as the robot account, the user token as a person."""
    assert source.get("/myself").json()["login"] == "robot"
    assert user.get("/myself").json()["login"] == "alice"


def test_scroll_reaches_every_issue_once(source: httpx.Client) -> None:
    """A sorted scroll returns each issue exactly once and as many as _count says."""
    body = {"query": "Queue: TEST"}
    reply = source.post(
        "/issues/_search", json=body, params={"scrollType": "sorted", "perScroll": 7}
    )
    keys = [issue["key"] for issue in reply.json()]
    while "X-Scroll-Id" in reply.headers:
        reply = source.post(
            "/issues/_search", json=body, params={"scrollId": reply.headers["X-Scroll-Id"]}
        )
        keys += [issue["key"] for issue in reply.json()]
    assert len(keys) == len(set(keys)) == source.post("/issues/_count", json=body).json() > 7


def test_import_then_read_back(sandbox: RunningSandbox, target: httpx.Client) -> None:
    """An imported issue and comment keep their given times and show up in listings."""
    issue = target.post(
        "/issues/_import",
        json={
            "queue": "NEW",
            "key": "NEW-500",
            "summary": "Imported",
            "createdAt": "2023-01-01T00:00:00.000+0000",
            "createdBy": "alice",
            "updatedAt": "2023-02-01T00:00:00.000+0000",
            "updatedBy": "bob",
        },
    )
    assert issue.status_code == 201
    assert issue.json()["updatedAt"] == "2023-02-01T00:00:00.000+0000"
    comment = target.post(
        "/issues/NEW-500/comments/_import",
        json={"text": "hi", "createdAt": "2023-01-10T00:00:00.000+0000", "createdBy": "carol"},
    )
    assert comment.status_code == 201
    listed = target.get("/issues/NEW-500/comments").json()
    assert [c["id"] for c in listed] == [comment.json()["id"]]
    assert target.get("/issues/NEW-500").json()["updatedAt"] == "2023-02-01T00:00:00.000+0000"
