"""Field categories, global custom fields and queue-local fields: a category found by name,
a field by key (and type), made when missing; a field needs its category first, a local field
its queue too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, Planned, Ref
from haul.pipelines.tracker.organisation.objects import (
    OrgObjects,
    in_org,
    name_of,
    plan_each,
    queue_refs,
)
from haul.state.store import StagedRecord, StagingStore


def plan_categories(store: StagingStore) -> Iterator[Planned]:
    """The categories the custom fields (global and local) are in."""
    used = {
        str((record.raw.get("category") or {}).get("id"))
        for entity in ("field", "local_field")
        for record in store.iter_records(entity)
        if entity == "local_field" or record.raw.get("type") == "global"
    }
    for record in store.iter_records("field_category"):
        if record.source_id in used:
            yield Planned(record)


def plan_fields(store: StagingStore) -> Iterator[Planned]:
    """Every global custom field of the source (system fields exist everywhere)."""
    for record in store.iter_records("field"):
        if record.raw.get("type") == "global":
            yield Planned(record, None, record.source_id)


PLANS = {
    "field_category": plan_categories,
    "field": plan_fields,
    "local_field": plan_each("local_field"),
}


def category_refs(record: StagedRecord) -> list[Ref]:
    """A field needs its category in the target first."""
    category = (record.raw.get("category") or {}).get("id")
    return [Ref("field_category", str(category))] if category else []


class FieldKinds:
    """Sends field categories and fields into one target org."""

    def __init__(self, objects: OrgObjects) -> None:
        self.objects = objects

    def specs(self) -> list[EntitySpec]:
        objects = self.objects
        return [
            objects.spec("field_category", plan_categories, self._category_print(),
                         self.send_category),
            objects.spec("field", plan_fields, self._field_print(), self.send_field,
                         requires=category_refs),
            objects.spec("local_field", PLANS["local_field"], self._local_print(),
                         self.send_local, requires=lambda r: [*category_refs(r), *queue_refs(r)]),
        ]  # fmt: skip

    def _category_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            found = await self.objects.client.list_field_categories()
            return [{"id": str(c["id"]), "name": name_of(c.get("name"))} for c in found]

        return Fingerprint(
            lambda record: {"name": name_of(record.raw.get("name"))}, in_org, listing, ("name",)
        )

    async def send_category(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body = {"name": raw.get("name"), "order": raw.get("order") or 0}
        if raw.get("description"):
            body["description"] = raw["description"]
        return str((await self.objects.client.create_field_category(body))["id"])

    def _body(self, record: StagedRecord) -> dict[str, Any]:
        raw = record.raw
        category = str((raw.get("category") or {}).get("id") or "")
        body: dict[str, Any] = {
            "id": raw.get("key") or raw.get("id"),
            "name": raw.get("name"),
            "category": self.objects.target_of("field_category", category),
            "type": raw.get("fieldType"),
        }
        for name in ("description", "readonly", "optionsProvider", "order"):
            if raw.get(name) not in (None, ""):
                body[name] = raw[name]
        return body

    def _field_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            return [
                {"id": str(f["id"]), "key": f.get("key") or f.get("id"), "type": f.get("fieldType")}
                for f in await self.objects.client.list_fields()
                if f.get("type") == "global"
            ]

        return Fingerprint(
            lambda record: {
                "key": record.raw.get("key") or record.source_id,
                "type": record.raw.get("fieldType"),
            },
            in_org,
            listing,
            ("key",),
        )

    async def send_field(self, record: StagedRecord, parent: str | None) -> str:
        return str((await self.objects.client.create_field(self._body(record)))["id"])

    def _local_print(self) -> Fingerprint:
        async def listing(queue: str) -> list[Fields]:
            return [
                {"id": str(f["id"]), "key": f.get("key"), "type": f.get("fieldType")}
                for f in await self.objects.client.list_local_fields(queue)
            ]

        return Fingerprint(
            lambda record: {"key": record.raw.get("key"), "type": record.raw.get("fieldType")},
            self.objects.in_queue,
            listing,
            ("key",),
        )

    async def send_local(self, record: StagedRecord, parent: str | None) -> str:
        body = self._body(record)
        body["id"] = record.raw.get("key")
        queue = self.objects.queue(record)
        return str((await self.objects.client.create_local_field(queue, body))["id"])


def specs(objects: OrgObjects) -> list[EntitySpec]:
    """The categories', global fields' and local fields' specs."""
    return FieldKinds(objects).specs()
