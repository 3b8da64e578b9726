"""A queue's configuration as the official SDK reads and edits it on the sandbox: the org's
workflows (statuses and transitions, the queue reply's workflow link resolving), the queue's
issue-type configuration (updated with `queue.update`), and its permissions (read, updated, in
the shape of the recorded live reply, and READ enforced for the plain user)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from haul.sandbox.server import start_sandbox
from tests.helpers.entity_snapshot import sdk_client
from tests.helpers.sandbox_shapes import REPLIES

LIVE = REPLIES / "tracker" / "queues" / "permissions_update.json"


def plain(info: dict[str, Any], org: str, token: str = "admin") -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens'][token]}", "X-Org-ID": info["orgs"][org]}
    return httpx.Client(base_url=info["tracker"], headers=headers)


@pytest.fixture
def tiny() -> Iterator[dict[str, Any]]:
    with start_sandbox(size="tiny", seed=3) as running:
        yield running.info


def test_the_sdk_reads_workflows_and_follows_the_queue_replys_link(tiny: dict[str, Any]) -> None:
    """`client.workflows` lists the org's workflows with steps; the queue's config names one
    whose link answers, and a fresh org's workflow lacks the review status."""
    client = sdk_client(tiny, "source")
    workflows = {w.id: w for w in client.workflows.get_all()}
    assert set(workflows) == {"classic", "kanban"}
    classic = workflows["classic"]
    steps = {
        step["status"].key: [a["target"].key for a in step["actions"]] for step in classic.steps
    }
    assert "inReview" in steps and "inReview" in steps["inProgress"]
    assert classic.initialAction["target"].key == "open"
    queue = client.queues["TEST"]
    linked = queue.issueTypesConfig[0]["workflow"]
    assert linked.name == "Classic"  # the SDK follows the reference's link to read it
    assert len(linked.steps) == len(steps)
    assert {w["id"] for w in queue.workflows} == {"classic"}
    empty = sdk_client(tiny, "empty")
    basic = [w for w in empty.workflows.get_all()]
    assert [w.id for w in basic] == ["basic"]
    assert "inReview" not in {step["status"].key for step in basic[0].steps}


def test_the_sdk_creates_a_workflow_and_updates_a_queues_type_config(tiny: dict[str, Any]) -> None:
    """A workflow made with the importer's body, then a queue's issue types pointed at it with
    `queue.update(issueTypesConfig=...)`: GET shows the new configuration and workflow."""
    client = sdk_client(tiny, "target")
    made = client.workflows.create(
        _create_path="/{api_version}/workflows/",
        id="short",
        name="Short",
        steps=[
            {"status": {"key": "open"}, "actions": [{"name": "Done", "target": {"key": "closed"}}]},
            {"status": {"key": "closed"}, "actions": [{"name": "Again", "target": "open"}]},
        ],
        initialAction={"name": "Create", "target": {"key": "open"}},
    )
    assert made.id == "short"
    queue = client.queues["DEV"]
    queue.update(
        issueTypesConfig=[
            {"issueType": "incident", "workflow": "short", "resolutions": ["cantReproduce"]},
            {"issueType": {"key": "bug"}, "workflow": {"id": "classic"}, "resolutions": ["fixed"]},
        ]
    )
    again = client.queues["DEV"]
    config = {
        item["issueType"].key: (item["workflow"].id, [r.key for r in item["resolutions"]])
        for item in again.issueTypesConfig
    }
    assert config == {"incident": ("short", ["cantReproduce"]), "bug": ("classic", ["fixed"])}
    assert again.version == queue.version
    with plain(tiny, "target") as http:
        stale = http.patch("/queues/DEV", params={"version": 1}, json={"name": "x"})
        refused = http.patch("/queues/DEV", json={"issueTypesConfig": [
            {"issueType": "bug", "workflow": "nowhere", "resolutions": []}]})  # fmt: skip
    assert stale.status_code == 409 and refused.status_code == 422


def test_the_sdk_reads_and_updates_queue_permissions_in_the_live_shape(
    tiny: dict[str, Any],
) -> None:
    """The scheme's keys and nesting are the recorded live reply's; restricting READ to one
    group hides the queue's issues from the plain user (not in it) and shows them again."""
    client = sdk_client(tiny, "source")
    queue = client.queues["TEST"]
    with plain(tiny, "source") as http:
        groups = {g["name"]: str(g["id"]) for g in http.get("/groups").json()}
        before = http.get("/queues/TEST/permissions").json()
    live = json.loads(LIVE.read_text(encoding="utf-8"))["body"]
    assert set(before) == set(live)
    for code in ("create", "grant", "read", "write"):
        assert "self" in before[code] and set(before[code]) <= {"self", "users", "groups", "roles"}
    # the recorded user refs have five keys, one a number (passportUid); group refs three
    user, live_user = before["create"]["users"][0], live["create"]["<unknown-4>"][0]
    assert len(user) == len(live_user) and isinstance(user["passportUid"], int)
    assert len(before["create"]["groups"][0]) == len(live["create"]["<unknown-1>"][0])
    read = client.queues.update_permissions(
        queue, data={"read": {"groups": [int(groups["security"])], "users": [], "roles": []}}
    )
    assert [g.display for g in read.read.groups] == ["security"]
    assert set(read.read._value) == {"self", "groups"}  # empty lists are left out, as live
    assert read.read.users == [] and read.read.roles == []  # the SDK follows `self` for them
    assert [g.display for g in client.queues["TEST"].permissions.read.groups] == ["security"]
    with plain(tiny, "source", token="user") as user:
        hits = user.post("/issues/_search", json={"filter": {"queue": "TEST"}}).json()
        some = next(iter(client.issues.find(query="Queue: TEST", per_page=1))).key
        assert hits == [] and user.get(f"/issues/{some}").status_code == 403
        client.queues.update_permissions(
            queue, data={"read": {"groups": {"add": [groups["All employees"]]}}}
        )
        assert user.post("/issues/_search", json={"filter": {"queue": "TEST"}}).json()
    with plain(tiny, "source") as http:
        unknown = http.patch("/queues/TEST/permissions", json={"read": {"users": ["nobody"]}})
    assert unknown.status_code == 422
