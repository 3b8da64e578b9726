"""Dictionary values (statuses, issue types, priorities, resolutions) and queues: found in
the target by key, made there when missing; a queue haul makes takes its permission scheme
before anything else (`configuration`), so it is never open to more people than the source's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from haul.connectors.errors import RecordError
from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, Planned, RecordFailure, Sender
from haul.pipelines.tracker.organisation.configured import configured_values, planned_queues
from haul.pipelines.tracker.organisation.objects import OrgObjects, in_org, name_of
from haul.state.store import StagedRecord, StagingStore

DICTIONARIES = {  # ledger entity -> (the issue field that names it, its path in the API)
    "status": ("status", "statuses"),
    "issuetype": ("type", "issuetypes"),
    "priority": ("priority", "priorities"),
    "resolution": ("resolution", "resolutions"),
}


def plan_dictionary(entity: str) -> Callable[[StagingStore], Iterator[Planned]]:
    """The values of a dictionary the staged issues (and the queues' defaults) use, and those
    the planned queues' configurations allow (every type, resolution and workflow status)."""
    field = DICTIONARIES[entity][0]
    default = {"issuetype": "defaultType", "priority": "defaultPriority"}.get(entity)

    def plan(store: StagingStore) -> Iterator[Planned]:
        used = store.distinct_values("issue", field, "id") | configured_values(store, entity)
        if default is not None:
            used |= store.distinct_values("queue", default, "id")
        for record in store.iter_records(entity):
            if record.source_id in used:
                yield Planned(record, None, record.source_id)

    return plan


def plan_queues(store: StagingStore) -> Iterator[Planned]:
    """The queues the staged issues are in (`planned_queues`)."""
    used = planned_queues(store)
    for record in store.iter_records("queue"):
        if record.source_id in used:
            yield Planned(record, None, record.source_id)


PLANS = {**{entity: plan_dictionary(entity) for entity in DICTIONARIES}, "queue": plan_queues}


def _value_print(objects: OrgObjects, kind: str) -> Fingerprint:
    path = DICTIONARIES[kind][1]

    async def listing(container: str) -> list[Fields]:
        values = await objects.client.list_dictionary(path)
        return [{"id": str(v["id"]), "key": v.get("key")} for v in values]

    return Fingerprint(lambda record: {"key": record.raw.get("key")}, in_org, listing, ("key",))


def _send_value(objects: OrgObjects, kind: str) -> Sender:
    path = DICTIONARIES[kind][1]

    async def send(record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body: dict[str, Any] = {
            "key": raw["key"],
            "name": name_of(raw.get("name") or raw.get("display")) or raw["key"],
        }
        for name in ("order", "description"):
            if raw.get(name) not in (None, ""):
                body[name] = raw[name]
        if kind == "status":
            body["type"] = raw.get("type") or "new"
        return str((await objects.client.create_dictionary_value(path, body))["id"])

    return send


def _queue_print(objects: OrgObjects) -> Fingerprint:
    async def listing(container: str) -> list[Fields]:
        return [{"id": str(q["key"]), "key": q["key"]} async for q in objects.client.iter_queues()]

    return Fingerprint(
        lambda record: {"key": objects.transform.queues.queue(record.source_id)},
        in_org,
        listing,
        ("key",),
    )


def _send_queue(objects: OrgObjects) -> Sender:
    async def send(record: StagedRecord, parent: str | None) -> str:
        raw, transform = record.raw, objects.transform
        body: dict[str, Any] = {
            "key": transform.queues.queue(record.source_id),
            "name": raw.get("name") or record.source_id,
            "lead": transform.users.login(raw.get("lead")),
        }
        for name in ("defaultType", "defaultPriority"):
            if isinstance(raw.get(name), dict):
                body[name] = {"key": raw[name].get("key")}
        if raw.get("description"):
            body["description"] = raw["description"]
        made = str((await objects.client.create_queue(body))["key"])
        if objects.restrict is not None:
            try:
                await objects.restrict(record.source_id, made)
            except RecordError as exc:  # refused: a person must look (an outage stops the run)
                raise RecordFailure(
                    f"queue {made} was made but its permissions could not be set ({exc}):"
                    " nothing is imported into it until they are; fix that, then run haul load"
                    " --retry-failed (it sets them before any issue)"
                ) from exc
        return made

    return send


def specs(objects: OrgObjects) -> list[EntitySpec]:
    """The dictionary values' specs, then the queues'."""
    values = [
        objects.spec(kind, PLANS[kind], _value_print(objects, kind), _send_value(objects, kind))
        for kind in DICTIONARIES
    ]
    queue = objects.spec("queue", plan_queues, _queue_print(objects), _send_queue(objects))
    return [*values, queue]
