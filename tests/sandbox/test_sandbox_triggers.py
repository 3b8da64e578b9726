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


def test_a_macro_written_as_issue_update_reads_back_as_field_changes(
    tiny: dict[str, Any],
) -> None:
    """The v3 reference's `issueUpdate` (a value, null, or operators per field) is kept and
    read back as `fieldChanges`, as a macro written in the v2 form is; both at once is a 422."""
    client = sdk_client(tiny, "empty")
    queue = _new_queue(client, "MACROS")
    macros = queue.collection.macros
    update = {"tags": {"add": "New tag"}, "resolution": None, "description": "New issue"}
    made = macros.create(name="v3", body="Done", issueUpdate=update)
    assert macros[str(made.id)].fieldChanges == [
        {"field": "tags", "add": "New tag"},
        {"field": "resolution", "set": None},
        {"field": "description", "set": "New issue"},
    ]
    made.update(issueUpdate={"tags": {"remove": ["old"]}})
    assert macros[str(made.id)].fieldChanges == [{"field": "tags", "remove": ["old"]}]
    with pytest.raises(sdk.exceptions.UnprocessableEntity):
        macros.create(name="both", issueUpdate=update, fieldChanges=[])


def test_a_transition_reads_back_alike_whether_seeded_or_made(tiny: dict[str, Any]) -> None:
    """A `Transition` action's status reads back as the status's reference, for a seeded
    trigger and for one made through the API with the status's key."""
    source = sdk_client(tiny, "source")
    queue = source.queues.get_all()[0]
    seeded = next(t for t in queue.triggers if t["name"] == "Reopen on comment")
    made = queue.collection.triggers.create(
        name="Reopen too", actions=[{"type": "Transition", "status": "open"}]
    )
    for trigger in (seeded, made):
        status = trigger["actions"][0]["status"]
        assert (status.key, status.id) == ("open", str(source.statuses["open"].id))
    made.delete()


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
