"""Every route whose live reply was recorded answers with the same status, keys and types."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.sandbox_shapes import assert_like_recording, recorded, shape_problems

WINDOW = {"createdAt": "2023-01-01T00:00:00.000+0000", "createdBy": "alice"}


def all_issues(client: httpx.Client) -> list[dict]:
    return client.post("/issues/_search", params={"perPage": 1000}).json()


def richest_issue(client: httpx.Client) -> dict:
    """A source issue with every optional key the recorded issue shows."""
    wanted = ("description", "followers", "tags", "lastCommentUpdatedAt", "previousStatus")
    return next(i for i in all_issues(client) if all(name in i for name in wanted))


def issue_with(client: httpx.Client, listing: str) -> str:
    """The key of a source issue whose ``listing`` sub-resource is not empty."""
    for issue in all_issues(client):
        if client.get(f"/issues/{issue['key']}/{listing}").json():
            return issue["key"]
    raise AssertionError(f"no generated issue has {listing}")


@pytest.fixture(scope="module")
def imported(target: httpx.Client) -> str:
    """A target issue with a window wide enough for every import below."""
    reply = target.post(
        "/issues/_import",
        json={
            "queue": "TEST",
            "summary": "Shape check",
            **WINDOW,
            "updatedAt": "2023-06-01T00:00:00.000+0000",
            "updatedBy": "bob",
        },
    )
    assert_like_recording("issues/import_", reply.status_code, reply.json())
    target.post("/issues/_import", json={"queue": "TEST", "summary": "Other end", **WINDOW})
    return reply.json()["key"]


@pytest.mark.parametrize(
    ("recording", "path"),
    [
        ("me/get", "/myself"),
        ("statuses/list", "/statuses"),
        ("issuetypes/list", "/issuetypes"),
        ("priorities/list", "/priorities"),
        ("resolutions/list", "/resolutions"),
        ("linktypes/list", "/linktypes"),
        ("fields/list", "/fields"),
        ("queues/list", "/queues"),
        ("queues/get", "/queues/TEST"),
        ("users/list", "/users"),
    ],
)
def test_dictionaries_and_directory(source: httpx.Client, recording: str, path: str) -> None:
    """Dictionaries, queues, users and the caller look like the live service's."""
    reply = source.get(path)
    assert_like_recording(recording, reply.status_code, reply.json())


def test_issue_get_search_and_count(source: httpx.Client) -> None:
    """GET /issues/{key}, a search page and _count match their recordings."""
    issue = richest_issue(source)
    reply = source.get(f"/issues/{issue['key']}")
    assert_like_recording("issues/get", reply.status_code, reply.json())
    reply = source.post("/issues/_search", json={"keys": [issue["key"]]})
    assert_like_recording("issues/search", reply.status_code, reply.json())
    reply = source.post("/issues/_count", json={"query": "Queue: TEST"})
    assert_like_recording("issues/count", reply.status_code, reply.json())


@pytest.mark.parametrize(
    ("recording", "listing"),
    [
        ("comments/list", "comments"),
        ("changelog/list", "changelog"),
        ("checklists/list", "checklistItems"),
        ("worklog/list_global", "worklog"),  # no recorded per-issue list; items share the shape
        ("links/import_", "links"),  # likewise: a listed link has the imported link's shape
    ],
)
def test_record_listings(source: httpx.Client, recording: str, listing: str) -> None:
    """Sub-record listings of a generated issue have the recorded item shape."""
    key = issue_with(source, listing)
    reply = source.get(f"/issues/{key}/{listing}")
    expected = recorded(recording)["body"]
    if isinstance(expected, dict):  # a single recorded record: the listing holds such items
        expected = [expected]
    problems = shape_problems(reply.json(), expected)
    assert reply.status_code == 200 and not problems


def test_attachment_metadata(source: httpx.Client) -> None:
    """An attachment's own GET matches; its listing entries have the same keys."""
    key = issue_with(source, "attachments")
    listed = source.get(f"/issues/{key}/attachments").json()
    reply = source.get(f"/issues/{key}/attachments/{listed[0]['id']}")
    assert_like_recording("attachments/get", reply.status_code, reply.json())
    assert set(listed[0]) == set(reply.json())


def test_issue_edits(source: httpx.Client) -> None:
    """PATCH, comment creation and checklist creation answer like the live service."""
    key = all_issues(source)[-1]["key"]
    reply = source.patch(f"/issues/{key}", json={"description": "Edited", "tags": ["x"]})
    assert_like_recording("issues/update", reply.status_code, reply.json())
    reply = source.post(f"/issues/{key}/comments", json={"text": "A new comment"})
    assert_like_recording("comments/create", reply.status_code, reply.json())
    reply = source.post(f"/issues/{key}/checklistItems", json={"text": "Check", "checked": True})
    assert_like_recording("checklists/create", reply.status_code, reply.json())


def test_imports(target: httpx.Client, imported: str) -> None:
    """Comment, worklog, link and both attachment imports: status codes and shapes."""
    at = {"createdAt": "2023-02-01T00:00:00.000+0000", "createdBy": "carol"}
    comment = target.post(f"/issues/{imported}/comments/_import", json={"text": "Old", **at})
    assert_like_recording("comments/import_", comment.status_code, comment.json())
    worklog = target.post(
        f"/issues/{imported}/worklogs/_import",
        json={"duration": "PT2H", "start": at["createdAt"], "comment": "Spent", **at},
    )
    assert_like_recording("worklog/import_", worklog.status_code, worklog.json())
    other = target.post("/issues/_search", json={"query": "Queue: TEST"}).json()[-1]["key"]
    link = target.post(
        f"/issues/{imported}/links/_import",
        json={"relationship": "relates", "issue": other, **WINDOW},
    )
    assert_like_recording("links/import_", link.status_code, link.json())
    files = {"file": ("a.txt", b"hello")}
    params = {"filename": "a.txt", **at}
    reply = target.post(f"/issues/{imported}/attachments/_import", params=params, files=files)
    assert_like_recording("attachments/import_", reply.status_code, reply.json())
    path = f"/issues/{imported}/comments/{comment.json()['id']}/attachments/_import"
    reply = target.post(path, params=params, files=files)
    assert_like_recording("attachments/import_for_comment", reply.status_code, reply.json())


def test_a_persons_changes(source: httpx.Client) -> None:
    """A plain issue create, a worklog created and edited, a move: as the live service."""
    body = {"queue": "TEST", "summary": "Made plainly", "description": "As people write"}
    reply = source.post("/issues/", json=body)
    assert_like_recording("issues/create", reply.status_code, reply.json())
    key = reply.json()["key"]
    worklog = source.post(f"/issues/{key}/worklog", json={"duration": "PT1H", "comment": "w"})
    assert_like_recording("worklog/create", worklog.status_code, worklog.json())
    edited = source.patch(
        f"/issues/{key}/worklog/{worklog.json()['id']}", json={"duration": "PT2H"}
    )
    assert_like_recording("worklog/update", edited.status_code, edited.json())
    moved = source.post(f"/issues/{key}/_move", params={"queue": "DEV"})
    assert_like_recording("issues/move", moved.status_code, moved.json())
