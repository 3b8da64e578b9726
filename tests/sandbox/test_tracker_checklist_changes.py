"""A person's checklist edits and remote links through the tracker's plain API: each is
served as the spec names it, and moves the issue's updatedAt (a sync has to notice it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from haul.sandbox.server import start_sandbox
from tests.helpers.sandbox_clients import client_for


@pytest.fixture(scope="module")
def plain() -> Iterator[httpx.Client]:
    with start_sandbox(seed=5, size="tiny") as running, client_for(running, "source") as http:
        yield http


def _issue(plain: httpx.Client, key: str) -> dict[str, Any]:
    return plain.get(f"/issues/{key}").json()


def _checklist(plain: httpx.Client, key: str) -> list[tuple[str, bool]]:
    return [(i["text"], i["checked"]) for i in plain.get(f"/issues/{key}/checklistItems").json()]


def test_one_item_is_edited_or_deleted_and_the_whole_list_cleared(plain: httpx.Client) -> None:
    key = "DEV-2"
    added = plain.post(f"/issues/{key}/checklistItems", json=[{"text": "a"}, {"text": "b"}])
    first, second = added.json()["checklistItems"][-2:]
    before = _issue(plain, key)["updatedAt"]

    edited = plain.patch(
        f"/issues/{key}/checklistItems/{first['id']}", json={"text": "a2", "checked": True}
    )

    assert edited.status_code == 200 and edited.json()["key"] == key
    assert _checklist(plain, key)[-2:] == [("a2", True), ("b", False)]
    assert _issue(plain, key)["updatedAt"] > before
    assert plain.delete(f"/issues/{key}/checklistItems/{second['id']}").status_code == 200
    assert _checklist(plain, key)[-1] == ("a2", True)
    assert plain.delete(f"/issues/{key}/checklistItems").status_code == 200
    assert _checklist(plain, key) == []
    gone = plain.patch(f"/issues/{key}/checklistItems/{first['id']}", json={"text": "x"})
    assert gone.status_code == 404


def test_a_remote_link_added_or_removed_moves_its_issues_updated_at(plain: httpx.Client) -> None:
    key = "OPS-3"
    before = _issue(plain, key)["updatedAt"]
    app = plain.get("/applications").json()[0]["id"]

    made = plain.post(f"/issues/{key}/remotelinks", json={"key": "x/1", "origin": app})

    assert made.status_code == 201
    linked = _issue(plain, key)["updatedAt"]
    assert linked > before
    assert plain.get(f"/issues/{key}/changelog").json()[-1]["type"] == "IssueRemoteLinked"
    assert plain.delete(f"/issues/{key}/remotelinks/{made.json()['id']}").status_code == 200
    assert _issue(plain, key)["updatedAt"] >= linked
    assert plain.get(f"/issues/{key}/changelog").json()[-1]["type"] == "IssueRemoteUnlinked"
