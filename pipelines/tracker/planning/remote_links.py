"""Remote links (an issue's links to objects in external applications) travel with their issues.

The issue drain stages them (`remote_link`, under the issue's key: one listing per issue, as
nothing on an issue says whether it has any); they load once the issues are in the target
(the phase of the links), each keeping its origin application, the object's key there and the
relationship. The API takes no author or time for one (there is no import variant): the target
records the loading user and the moment, counted under `not_carried`.

An application the target does not have fails each of its links, named, and `haul check`
says so first (`application_findings`). A link is found again (and verified) by its
application and object key on its issue, which the target holds once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.findings import Finding
from haul.pipelines.specs import (
    EntitySpec,
    Fields,
    Fingerprint,
    Order,
    Phase,
    RecordFailure,
    Ref,
    each_record,
)
from haul.pipelines.tracker.transform import RELATIONSHIPS
from haul.state.store import StagedRecord, StagingStore

PLAN_REMOTE_LINKS = each_record(
    "remote_link",
    parent=lambda record: Ref("issue", record.parent or ""),
    sort_key=lambda record: str(record.raw.get("createdAt") or ""),
)


def origin(raw: dict[str, Any]) -> dict[str, Any]:
    """The application a staged remote link points into (`id`, `name`)."""
    return ((raw.get("object") or {}).get("application")) or {}


def link_fields(raw: dict[str, Any]) -> Fields:
    """What tells a remote link apart, as both sides read it."""
    kind = str((raw.get("type") or {}).get("id") or "relates")
    return {
        "origin": origin(raw).get("id"),
        "key": (raw.get("object") or {}).get("key"),
        "type": kind,
        "direction": "both" if kind == "relates" else raw.get("direction"),
    }


def missing_applications(store: StagingStore, have: set[str]) -> Counter[str]:
    """ "id (name)" of each application staged remote links use that is not in `have`, with
    how many links use it."""
    missing: Counter[str] = Counter()
    for record in store.iter_records("remote_link"):
        app = origin(record.raw)
        if app.get("id") not in have:
            missing[f"{app.get('id')} ({app.get('name') or 'unnamed'})"] += 1
    return missing


async def application_findings(client: TrackerClient, store: StagingStore) -> list[Finding]:
    """`haul check` on the target: every application the staged remote links use is there."""
    if not store.count_records().get("remote_link"):
        return []
    have = {str(app.get("id")) for app in await client.list_applications()}
    missing = missing_applications(store, have)
    if not missing:
        return [Finding("ok", "the target has every application the remote links point into")]
    return [
        Finding(
            "error",
            f"the target has no application {app}: its {count} remote link(s) will fail",
            "connect the application in the target before the load",
        )
        for app, count in sorted(missing.items())
    ]


@dataclass
class RemoteLinkLoad:
    """The remote links' spec for one target org; `target_key` maps a source issue key."""

    client: TrackerClient
    target_key: Callable[[str], str]
    kept: Counter[str] = field(default_factory=Counter)  # for `not_carried`
    _applications: set[str] | None = None
    _asking: asyncio.Lock = field(default_factory=asyncio.Lock)

    def spec(self) -> EntitySpec:
        printed = Fingerprint(
            lambda record: link_fields(record.raw), self._issue, self._listing, ("origin", "key")
        )
        return EntitySpec(
            "remote_link", "remote_link", PLAN_REMOTE_LINKS, self.send, printed.find,
            order=Order(Phase.LINKS, needs_named=True), fingerprint=printed,
        )  # fmt: skip

    def _issue(self, record: StagedRecord, parent: str | None) -> str:
        return self.target_key(record.parent or "")

    async def _listing(self, key: str) -> list[Fields]:
        return [
            {"id": str(link["id"]), **link_fields(link)}
            for link in await self.client.list_remote_links(key)
        ]

    async def applications(self) -> set[str]:
        """The target's application ids (asked once per load, however many links wait)."""
        async with self._asking:
            if self._applications is None:
                found = await self.client.list_applications()
                self._applications = {str(app.get("id")) for app in found}
        return self._applications

    async def send(self, record: StagedRecord, parent: str | None) -> str:
        raw, key = record.raw, self._issue(record, parent)
        app, fields = origin(raw), link_fields(raw)
        if fields["origin"] not in await self.applications():
            raise RecordFailure(
                f"remote link {fields['origin']}:{fields['key']} of {key}: the target has no "
                f"application {fields['origin']} ({app.get('name') or 'unnamed'}): connect it "
                "in the target, then run haul load --retry-failed"
            )
        relationship = RELATIONSHIPS.get((fields["type"], str(raw.get("direction"))))
        if relationship is None:
            raise RecordFailure(
                f"remote link {record.source_id}: no relationship for link type "
                f"{fields['type']} {raw.get('direction')}"
            )
        body = {"key": fields["key"], "origin": fields["origin"], "relationship": relationship}
        reply = await self.client.create_remote_link(key, body)
        self.kept["remote link author and time: the target records the loading user and now"] += 1
        # adding a remote link is an edit of its issue (the sandbox moves updatedAt, as for a
        # link): an issue's updatedAt cannot survive its remote links, as with its checklist
        self.kept["issue updatedAt: moved to the load's time by the issue's remote links"] += 1
        return str(reply["id"])
