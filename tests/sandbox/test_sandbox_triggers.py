"""A queue's triggers and macros on the sandbox, driven by the official SDK unmodified."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yandex_tracker_client as sdk

from haul.sandbox.server import start_sandbox
from tests.helpers.entity_snapshot import sdk_client


@pytest.fixture(scope="module")
def tiny() -> Iterator[dict[str, Any]]:
    with start_sandbox(size="tiny", seed=3) as running:
        yield running.info


def test_the_sdk_reads_each_queues_seeded_triggers_and_macros(tiny: dict[str, Any]) -> None:
    client = sdk_client(tiny, "source")
    for queue in client.queues:
        triggers = queue.triggers
        macros = queue.macros
        assert [t["name"] for t in triggers] == [
            "Assign new bugs", "Escalate production", "Reopen on comment"
        ]  # fmt: skip
        assert [t["active"] for t in triggers] == [True, True, False]
        assert triggers[1]["conditions"] == [
            {"type": "FieldEquals", "field": "environment", "value": "prod"}
        ]
        assert [m["name"] for m in macros] == ["Need info", "Budget review"]
        one = queue.collection.triggers[str(triggers[0]["id"])]
        assert (one.name, one.version, one.queue.key) == ("Assign new bugs", 1, queue.key)


def test_the_sdk_creates_updates_and_deletes_a_trigger_and_a_macro(tiny: dict[str, Any]) -> None:
    client = sdk_client(tiny, "empty")
    queue = _new_queue(client, "RULES")
    triggers = queue.collection.triggers
    made = triggers.create(
        name="Close on comment",
        conditions=[{"type": "Event.comment-create"}],
        actions=[{"type": "Transition", "status": {"key": "closed"}}],
        active=False,
    )
    assert (made.active, made.version) == (False, 1)
    made.update(active=True, name="Close when commented")
    again = triggers[str(made.id)]
    assert (again.name, again.active, again.version) == ("Close when commented", True, 2)
    macro = queue.collection.macros.create(
        name="Tag it", body="Tagged", fieldChanges=[{"field": "tags", "add": ["x"]}]
    )
    macro.update(body="Tagged again")
    assert queue.collection.macros[str(macro.id)].body == "Tagged again"
    made.delete()
    macro.delete()
    assert queue.triggers == [] and queue.macros == []


def test_a_trigger_naming_an_unknown_field_or_person_is_refused(tiny: dict[str, Any]) -> None:
    client = sdk_client(tiny, "empty")
    queue = _new_queue(client, "REFUSE")
    for actions in (
        [{"type": "Set", "field": "environment", "value": "prod"}],  # no such local field here
        [{"type": "Set", "field": "assignee", "value": "nobody-at-all"}],
    ):
        with pytest.raises(sdk.exceptions.UnprocessableEntity):
            queue.collection.triggers.create(name="Bad", actions=actions)


def test_a_created_issue_fires_an_active_trigger_listening_for_creation(
    tiny: dict[str, Any],
) -> None:
    client = sdk_client(tiny, "empty")
    queue = _new_queue(client, "FIRE")
    listening = queue.collection.triggers.create(
        name="On create", conditions=[{"type": "Event.create"}],
        actions=[{"type": "CreateComment", "text": "hello"}], active=False,
    )  # fmt: skip
    client.issues.create(queue="FIRE", summary="one")
    assert _firings(tiny, "FIRE") == 0  # switched off: nothing fires
    listening.update(active=True)
    client.issues.create(queue="FIRE", summary="two")
    assert _firings(tiny, "FIRE") == 1


def _new_queue(client: Any, key: str) -> Any:
    lead = client.myself.login
    return client.queues.create(
        key=key, name=key.title(), lead=lead, defaultType="task", defaultPriority="normal"
    )


def _firings(info: dict[str, Any], queue: str) -> int:
    reply = httpx.get(
        f"{info['tracker'].rsplit('/v3', 1)[0]}/_sandbox/queues/{queue}/triggers/firings",
        headers={"Authorization": f"OAuth {info['tokens']['admin']}",
                 "X-Org-ID": info["orgs"]["empty"]},
    )  # fmt: skip
    reply.raise_for_status()
    return int(reply.json()["total"])
