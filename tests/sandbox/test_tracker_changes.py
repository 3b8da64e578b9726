"""What a person changes through the tracker's ordinary API, driven by the official SDK where
it has the call: each change is served, moves the issue's updatedAt and leaves its changelog
entry, as the service does (a sync has to notice every one)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yandex_tracker_client as sdk

from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import client_for


@pytest.fixture(scope="module")
def running() -> Iterator[RunningSandbox]:
    with start_sandbox(seed=5, size="tiny") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def client(running: RunningSandbox) -> Any:
    info = running.info
    return sdk.TrackerClient(
        token=info["tokens"]["admin"],
        org_id=info["orgs"]["source"],
        base_url=info["tracker"].rsplit("/v3", 1)[0],
        retries=1,
    )


@pytest.fixture(scope="module")
def plain(running: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(running, "source") as http:
        yield http


def _last_change(plain: httpx.Client, key: str) -> dict[str, Any]:
    return plain.get(f"/issues/{key}/changelog").json()[-1]


def _moved_on(plain: httpx.Client, key: str, before: str, kind: str) -> None:
    issue = plain.get(f"/issues/{key}").json()
    assert issue["updatedAt"] > before
    change = _last_change(plain, issue["key"])
    assert change["type"] == kind and change["updatedAt"] == issue["updatedAt"]


def test_an_issue_made_plainly_starts_in_its_workflows_first_status(client: Any) -> None:
    issue = client.issues.create(queue="TEST", summary="made by a person", type={"key": "bug"})
    assert issue.key.startswith("TEST-") and issue.status.key == "open"
    assert client.issues[issue.key].summary == "made by a person"


def test_transitions_are_listed_and_executed_step_by_step(client: Any, plain: httpx.Client) -> None:
    """The reply of an execute lists what follows; a done status asks for a resolution."""
    issue = client.issues.create(queue="TEST", summary="to be resolved")
    before = plain.get(f"/issues/{issue.key}").json()["updatedAt"]
    assert {t.id for t in issue.transitions} >= {"inProgress", "resolved"}
    following = issue.transitions["inProgress"].execute()
    assert "inReview" in {t["id"] for t in following}
    _moved_on(plain, issue.key, before, "IssueWorkflow")
    refused = plain.post(f"/issues/{issue.key}/transitions/resolved/_execute", json={})
    assert refused.status_code == 422
    client.issues[issue.key].transitions["resolved"].execute(resolution="fixed")
    done = client.issues[issue.key]
    assert (done.status.key, done.resolution.key) == ("resolved", "fixed")
    reopened = plain.post(f"/issues/{issue.key}/transitions/open/_execute")
    assert reopened.status_code == 200
    assert "resolution" not in plain.get(f"/issues/{issue.key}").json()


def test_a_transition_not_available_from_the_status_is_refused(plain: httpx.Client) -> None:
    key = plain.post("/issues/", json={"queue": "TEST", "summary": "new"}).json()["key"]
    reply = plain.post(f"/issues/{key}/transitions/inReview/_execute")
    assert reply.status_code == 404


def test_the_new_queue_is_a_kanban_where_closed_leads_nowhere(running: RunningSandbox) -> None:
    with client_for(running, "target") as target:
        key = target.post("/issues/", json={"queue": "NEW", "summary": "k"}).json()["key"]
        assert {t["id"] for t in target.get(f"/issues/{key}/transitions").json()} == {
            "needInfo",
            "inProgress",
        }
        for step in ("inProgress", "resolved"):
            target.post(f"/issues/{key}/transitions/{step}/_execute", json={"resolution": "fixed"})
        target.post(f"/issues/{key}/transitions/closed/_execute")
        assert target.get(f"/issues/{key}/transitions").json() == []


def test_comments_are_edited_and_deleted(client: Any, plain: httpx.Client) -> None:
    issue = client.issues.create(queue="TEST", summary="talk")
    comment = issue.comments.create(text="first words")
    before = plain.get(f"/issues/{issue.key}").json()["updatedAt"]
    comment.update(text="better words")
    assert [c.text for c in client.issues[issue.key].comments] == ["better words"]
    _moved_on(plain, issue.key, before, "IssueCommentUpdated")
    before = plain.get(f"/issues/{issue.key}").json()["updatedAt"]
    comment.delete()
    assert list(client.issues[issue.key].comments) == []
    _moved_on(plain, issue.key, before, "IssueCommentRemoved")


def test_worklogs_are_created_edited_and_deleted(client: Any, plain: httpx.Client) -> None:
    issue = client.issues.create(queue="TEST", summary="work")
    record = issue.worklog.create(duration="PT1H", comment="did it")
    assert plain.get(f"/issues/{issue.key}").json()["spent"] == "PT1H"
    before = plain.get(f"/issues/{issue.key}").json()["updatedAt"]
    record.update(duration="PT2H30M", comment="did more")
    (listed,) = client.issues[issue.key].worklog
    assert (listed.duration, listed.comment) == ("PT2H30M", "did more")
    _moved_on(plain, issue.key, before, "IssueWorklogUpdated")
    before = plain.get(f"/issues/{issue.key}").json()["updatedAt"]
    listed.delete()
    assert list(client.issues[issue.key].worklog) == []
    _moved_on(plain, issue.key, before, "IssueWorklogRemoved")


def test_links_are_added_and_deleted_on_both_ends(client: Any, plain: httpx.Client) -> None:
    one = client.issues.create(queue="TEST", summary="one")
    two = client.issues.create(queue="DEV", summary="two")
    before = plain.get(f"/issues/{two.key}").json()["updatedAt"]
    link = one.links.create(issue=two.key, relationship="depends on")
    assert [lk.object.key for lk in client.issues[two.key].links] == [one.key]
    _moved_on(plain, two.key, before, "IssueLinked")
    before = plain.get(f"/issues/{one.key}").json()["updatedAt"]
    link.delete()
    assert list(client.issues[two.key].links) == [] == list(client.issues[one.key].links)
    _moved_on(plain, one.key, before, "IssueUnlinked")


def test_attachments_are_uploaded_and_deleted(plain: httpx.Client) -> None:
    key = plain.post("/issues/", json={"queue": "TEST", "summary": "files"}).json()["key"]
    sent = plain.post(
        f"/issues/{key}/attachments",
        params={"filename": "notes.txt"},
        files={"file": ("notes.txt", io.BytesIO(b"hello"))},
    )
    assert sent.status_code == 201 and sent.json()["size"] == 5
    before = plain.get(f"/issues/{key}").json()["updatedAt"]
    assert plain.delete(f"/issues/{key}/attachments/{sent.json()['id']}").status_code == 200
    assert plain.get(f"/issues/{key}/attachments").json() == []
    _moved_on(plain, key, before, "IssueAttachmentRemoved")


def test_a_moved_issue_takes_its_records_and_its_old_key_finds_it(
    client: Any, plain: httpx.Client
) -> None:
    issue = client.issues.create(queue="TEST", summary="wanders")
    issue.comments.create(text="kept")
    other = client.issues.create(queue="DEV", summary="stays")
    issue.links.create(issue=other.key, relationship="relates")
    moved = client.issues.move_to(issue, "OPS")
    assert moved.key.startswith("OPS-") and moved.aliases == [issue.key]
    assert plain.get(f"/issues/{issue.key}").json()["key"] == moved.key
    assert [c["text"] for c in plain.get(f"/issues/{moved.key}/comments").json()] == ["kept"]
    (link,) = plain.get(f"/issues/{other.key}/links").json()
    assert link["object"]["key"] == moved.key
    assert _last_change(plain, moved.key)["type"] == "IssueMoved"


def test_a_generated_issue_moves_with_its_generated_records(plain: httpx.Client) -> None:
    hit = plain.post("/issues/_search", json={"filter": {"queue": "TEST"}}).json()[0]
    comments = plain.get(f"/issues/{hit['key']}/comments").json()
    moved = plain.post(f"/issues/{hit['key']}/_move", params={"queue": "DEV"}).json()
    assert plain.get(f"/issues/{moved['key']}/comments").json() == [
        {**c, "self": c["self"].replace(hit["key"], moved["key"])} for c in comments
    ]


def test_an_issue_made_to_vanish_answers_404(running: RunningSandbox, plain: httpx.Client) -> None:
    key = plain.post("/issues/", json={"queue": "TEST", "summary": "gone"}).json()["key"]
    info = running.info
    control = info["tracker"].rsplit("/v3", 1)[0]
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    assert httpx.delete(f"{control}/_sandbox/issues/{key}", headers=headers).status_code == 200
    assert plain.get(f"/issues/{key}").status_code == 404
