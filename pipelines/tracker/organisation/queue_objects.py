"""A queue's components and versions: found by name in their queue, made when missing (each
needs its queue first). A version changed at the source (released, archived, renamed, its dates
moved) is refreshed under the target's version lock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, RecordFailure
from haul.pipelines.tracker.organisation.objects import OrgObjects, plan_each, queue_refs
from haul.state.store import StagedRecord

PLANS = {"component": plan_each("component"), "version": plan_each("version")}


def version_fields(version: dict[str, Any]) -> Fields:
    """A version's fields as found and compared: its name, dates and flags."""
    return {
        "name": version.get("name"),
        "startDate": version.get("startDate") or None,
        "dueDate": version.get("dueDate") or None,
        "released": bool(version.get("released")),
        "archived": bool(version.get("archived")),
    }


class QueueObjects:
    """Sends and refreshes components and versions in one target org."""

    def __init__(self, objects: OrgObjects) -> None:
        self.objects = objects

    def specs(self) -> list[EntitySpec]:
        objects, client = self.objects, self.objects.client
        return [
            objects.spec("component", PLANS["component"],
                         self._by_name(client.list_queue_components), self.send_component,
                         requires=queue_refs),
            objects.spec("version", PLANS["version"], self._version_print(), self.send_version,
                         requires=queue_refs, refresh=self.refresh_version),
        ]  # fmt: skip

    def _by_name(self, listed: Callable[[str], Awaitable[list[dict[str, Any]]]]) -> Fingerprint:
        async def listing(queue: str) -> list[Fields]:
            return [
                {"id": str(item["id"]), "name": item.get("name")} for item in await listed(queue)
            ]

        return Fingerprint(
            lambda record: {"name": record.raw.get("name")},
            self.objects.in_queue,
            listing,
            ("name",),
        )

    async def send_component(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body: dict[str, Any] = {"name": raw["name"], "queue": self.objects.queue(record)}
        for name in ("description", "assignAuto"):
            if raw.get(name) not in (None, ""):
                body[name] = raw[name]
        if raw.get("lead"):
            body["lead"] = self.objects.transform.users.login(raw["lead"])
        return str((await self.objects.client.create_component(body))["id"])

    async def refresh_version(self, record: StagedRecord, target_id: str) -> None:
        """A version changed at the source (released, archived, renamed, its dates moved):
        its settings again, under the target's current version lock."""
        client = self.objects.client
        listed = await client.list_queue_versions(self.objects.queue(record))
        found = next((item for item in listed if str(item.get("id")) == target_id), None)
        if found is None:
            raise RecordFailure(f"version {target_id} is no longer in the target's queue")
        body = {name: value for name, value in version_fields(record.raw).items()
                if value is not None}  # fmt: skip
        if record.raw.get("description") is not None:
            body["description"] = record.raw["description"]
        await client.update_version(target_id, int(found.get("version") or 1), body)

    def _version_print(self) -> Fingerprint:
        """A version by its name in its queue; verify compares its dates and flags too."""

        async def listing(queue: str) -> list[Fields]:
            return [
                {"id": str(item["id"]), **version_fields(item)}
                for item in await self.objects.client.list_queue_versions(queue)
            ]

        return Fingerprint(
            lambda record: version_fields(record.raw), self.objects.in_queue, listing, ("name",)
        )

    async def send_version(self, record: StagedRecord, parent: str | None) -> str:
        """Made with its dates and `released` flag; an archived one is then archived (the
        creation takes no `archived`)."""
        raw, client = record.raw, self.objects.client
        body: dict[str, Any] = {"name": raw["name"], "queue": self.objects.queue(record)}
        for name in ("description", "startDate", "dueDate"):
            if raw.get(name):
                body[name] = raw[name]
        if raw.get("released"):
            body["released"] = True
        made = await client.create_version(body)
        if raw.get("archived") and not made.get("archived"):
            await client.update_version(
                made["id"], int(made.get("version") or 1), {"archived": True}
            )
        return str(made["id"])


def specs(objects: OrgObjects) -> list[EntitySpec]:
    """The components' and versions' specs."""
    return QueueObjects(objects).specs()
