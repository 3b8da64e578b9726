"""An issue's checklist can be taken back: one item (DELETE on the path of the official SDK's
`checklistItems` collection, /issues/{issue}/checklistItems/{id}) or the whole checklist (DELETE
without an item id, the spec's "clear"). Both answer 200 with the issue, as the checklist's
other writes do; an item that is not there is a 404."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import client_for


@pytest.fixture
def sandbox() -> Iterator[RunningSandbox]:
    with start_sandbox(size="tiny", seed=3) as running:
        yield running


def checklist(tracker: Any, key: str) -> list[str]:
    reply = tracker.get(f"/issues/{key}/checklistItems")
    assert reply.status_code == 200, reply.text
    return [item["text"] for item in reply.json()]


def test_the_sdk_deletes_one_item_and_a_delete_without_id_clears_the_rest(
    sandbox: RunningSandbox,
) -> None:
    with client_for(sandbox, "source") as tracker:
        added = tracker.post("/issues/DEV-1/checklistItems", json=[{"text": "a"}, {"text": "b"}])
        assert added.status_code == 200, added.text
        before = checklist(tracker, "DEV-1")
        items = tracker.get("/issues/DEV-1/checklistItems").json()
        first = next(item["id"] for item in items if item["text"] == "a")
        one = tracker.delete(f"/issues/DEV-1/checklistItems/{first}")
        assert one.status_code == 200, one.text
        assert checklist(tracker, "DEV-1") == [text for text in before if text != "a"]

        cleared = tracker.delete("/issues/DEV-1/checklistItems")
        gone = tracker.delete(f"/issues/DEV-1/checklistItems/{first}")

    assert cleared.status_code == 200 and cleared.json()["key"] == "DEV-1"
    assert gone.status_code == 404
    with client_for(sandbox, "source") as tracker:
        assert checklist(tracker, "DEV-1") == []
