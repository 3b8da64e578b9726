"""Queue autoactions travel with their queues, and are created last.

The extract stages each queue's autoactions (`autoaction`, under the queue). They load in the
last phase, once every issue, link and saved object is in the target, so importing issues fires
none of them; each is created with the source's active state, its interval, notifications,
actions and calendar as they were, and its query (or conditions) rewritten for the target
(`pipelines.tracker.planning.queries`; what names something the target lacks is kept and counted under
`not_carried`). Run logs stay behind: they record launches at the source.

An autoaction is found again (and verified) by its name and query in its target queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, Order, Phase, each_record
from haul.pipelines.streams import RowsStream
from haul.pipelines.tracker.planning.queries import QueryRewriter
from haul.pipelines.tracker.planning.queue_rules import in_queue
from haul.pipelines.tracker.transform import QueueMap
from haul.state.store import StagedRecord

SETTINGS = ("intervalMillis", "enableNotifications", "calendar")
PLAN_AUTOACTIONS = each_record("autoaction", sort_key=lambda record: record.source_id)


def autoaction_stream(client: TrackerClient, queues: Sequence[str]) -> RowsStream:
    """The autoactions of the queues in scope, each under its queue."""

    async def fetch() -> list[dict[str, Any]]:
        return [
            {"source_id": f"{queue}/{action['id']}", "parent": queue, "raw": action}
            for queue in queues
            for action in await client.list_autoactions(queue)
        ]

    return RowsStream("autoaction", fetch)


@dataclass
class AutoactionLoad:
    """The autoactions' spec for one target org."""

    client: TrackerClient
    queues: QueueMap
    rewriter: QueryRewriter
    kept: Counter[str] = field(default_factory=Counter)  # for `not_carried`

    def spec(self) -> EntitySpec:
        printed = Fingerprint(self._fields, self._queue, self._listing, ("name", "query"))
        return EntitySpec(
            "autoaction", "autoaction", PLAN_AUTOACTIONS, self.send, printed.find,
            requires=in_queue, refresh=self.refresh, order=Order(Phase.AUTOACTIONS),
            fingerprint=printed,
        )  # fmt: skip

    def _queue(self, record: StagedRecord, parent: str | None = None) -> str:
        return self.queues.queue(record.parent or "")

    def _fields(self, record: StagedRecord) -> Fields:
        raw = record.raw
        return {
            "name": raw.get("name"),
            "query": self.rewriter.query(raw.get("query")).value,
            "filter": self.rewriter.conditions(raw.get("filter")).value,
            "actions": raw.get("actions"),
            "active": raw.get("active"),
            "intervalMillis": raw.get("intervalMillis"),
        }

    async def _listing(self, queue: str) -> list[Fields]:
        return [
            {"id": str(a["id"]), "name": a.get("name"), "query": a.get("query"),
             "filter": a.get("filter"), "actions": a.get("actions"), "active": a.get("active"),
             "intervalMillis": a.get("intervalMillis")}
            for a in await self.client.list_autoactions(queue)
        ]  # fmt: skip

    def _body(self, record: StagedRecord) -> dict[str, Any]:
        """What the target takes: the source's settings, its query or conditions rewritten."""
        raw = record.raw
        body: dict[str, Any] = {
            "name": raw.get("name"),
            "actions": raw.get("actions"),
            "active": bool(raw.get("active", True)),
        }
        for name, rewrite in (("query", self.rewriter.query), ("filter", self.rewriter.conditions)):
            if raw.get(name):
                rewritten = rewrite(raw[name])
                for kept in rewritten.kept:
                    why = "has no target counterpart (kept as written)"
                    self.kept[f"autoaction {name}: {kept} {why}"] += 1
                body[name] = rewritten.value
        body |= {name: raw[name] for name in SETTINGS if raw.get(name) is not None}
        if raw.get("calendar"):
            self.kept["autoaction calendar: sent under its source id"] += 1
        return body

    async def send(self, record: StagedRecord, parent: str | None) -> str:
        reply = await self.client.create_autoaction(self._queue(record), self._body(record))
        return str(reply["id"])

    async def refresh(self, record: StagedRecord, target_id: str) -> None:
        """An autoaction changed at the source (switched off, renamed, its query or actions
        edited): its settings again, under the target's current version."""
        queue = self._queue(record)
        version = (await self.client.get_autoaction(queue, target_id)).get("version")
        body = {"query": None, "filter": None} | self._body(record)  # one cleared at the source
        await self.client.update_autoaction(queue, target_id, int(version or 1), body)
