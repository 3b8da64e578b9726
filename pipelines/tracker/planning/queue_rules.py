"""A queue's triggers and macros travel with their queue, and are created last.

The extract stages each queue's triggers (`trigger`) and macros (`macro`), under the queue.
They load in the last phase (`Phase.AUTOACTIONS`), beside the autoactions: after the fields
and values they name exist (the organisation's configuration loads first) and after every
issue is in, so importing issues fires none of them (no trigger exists in the target while
the issues are imported; each is then created with the source's `active` state). A trigger
keeps its name, conditions, actions and active state (a transition's status by key); a
macro its name, comment body and field changes, written as the v3 reference writes them
(`issueUpdate`: `rule_forms`). The people and queries they name are rewritten for the target as saved
filters' are (`pipelines.tracker.planning.queries`): a person through the user mapping, a
queue under its mapped key, an issue under its target key; what has no counterpart is kept as
written and counted under `not_carried`, never replaced by the default user. The fields they
name are carried under the same ids (global fields keep their id, local fields their key).

Each is found again (and verified) by its name in its target queue; verify compares its
settings. A later run carries a changed trigger or macro (`refresh`); one deleted at the
source is unstaged by the next extract and staged as `deleted` (reported by `haul status`),
and deleted in the target when `[sync] deletions = "mirror"` (`sync.deletions.DeletionSync`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, Order, Phase, Ref, each_record
from haul.pipelines.streams import RowsStream
from haul.pipelines.tracker.changes.deletions import DELETED, deleted_row
from haul.pipelines.tracker.planning.queries import QueryRewriter
from haul.pipelines.tracker.planning.rule_forms import status_by_key, written
from haul.pipelines.tracker.transform import QueueMap
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

# staged entity -> its path under a queue, and the settings verify compares
KINDS = {"trigger": "triggers", "macro": "macros"}
SETTINGS = {
    "trigger": ("name", "conditions", "actions", "active"),
    "macro": ("name", "body", "fieldChanges"),
}
_VALUE_KEYS = ("value", "set", "add", "remove")  # where a condition or change holds its value
_NESTED = ("conditions", "actions", "fieldChanges")

PLAN_TRIGGERS = each_record("trigger", sort_key=lambda record: record.source_id)
PLAN_MACROS = each_record("macro", sort_key=lambda record: record.source_id)


def rule_streams(
    client: TrackerClient, queues: Sequence[str], store: StagingStore
) -> list[RowsStream]:
    """The triggers and the macros of the queues in scope, each under its queue; one staged
    before and no longer listed is unstaged, and staged as `deleted` when it was loaded."""

    def stream(entity: str) -> RowsStream:
        async def fetch() -> list[dict[str, Any]]:
            rows = [
                {"source_id": f"{queue}/{rule['id']}", "parent": queue, "raw": rule}
                for queue in queues
                for rule in await client.list_rules(queue, KINDS[entity])
            ]
            _stage_deleted(store, entity, queues, {str(row["source_id"]) for row in rows})
            return rows

        return RowsStream(entity, fetch)

    return [stream(entity) for entity in KINDS]


def _stage_deleted(
    store: StagingStore, entity: str, queues: Sequence[str], listed: set[str]
) -> None:
    gone = {
        source_id
        for source_id in store.source_ids(entity) - listed
        if source_id.split("/", 1)[0] in queues  # a queue out of the scope now is not listed
    }
    with store.transaction():
        for source_id in sorted(gone):
            row = store.ledger.get(entity, source_id)
            if row is not None and row.status == "done":
                queue = source_id.split("/", 1)[0]
                deleted = deleted_row(
                    entity, source_id, queue, row.target_id, "deleted at the source"
                )
                store.upsert_records(DELETED, [deleted])
            store.delete_record(entity, source_id)
    if gone:
        log.info("deleted_at_source", entity=entity, records=len(gone))


def in_queue(record: StagedRecord) -> list[Ref]:
    """A queue's own record (staged under the queue's key) needs its queue in the target:
    `haul plan` plans it as made when the load makes its queue, without looking for it."""
    return [Ref("queue", record.parent)] if record.parent else []


def field_id(value: Any) -> Any:
    """A field as a rule names it: its id, whether written bare or as the service's reference
    (``{"self", "id", "display"}``)."""
    return value.get("id") or value.get("key") if isinstance(value, dict) else value


def _as_read(name: str, value: Any) -> Any:
    """A target's setting as verify compares it: a transition's status by key."""
    return (
        [status_by_key(item) for item in value]
        if name in _NESTED and isinstance(value, list)
        else value
    )


@dataclass
class RuleRewrite:
    """Rewrites a rule's conditions, actions and field changes for the target; remembers
    what has no counterpart there."""

    rewriter: QueryRewriter
    kept: list[str] = field(default_factory=list)

    def items(self, items: Any) -> Any:
        if not isinstance(items, list):
            return items
        return [self.item(item) for item in items]

    def item(self, item: Any) -> Any:
        if not isinstance(item, dict):
            return item
        rewritten = dict(status_by_key(item))
        name = field_id(item.get("field"))
        if "field" in item:
            rewritten["field"] = name
        for key in _NESTED:
            if key in item:
                rewritten[key] = self.items(item[key])
        if isinstance(item.get("query"), str):
            found = self.rewriter.query(item["query"])
            self.kept += found.kept
            rewritten["query"] = found.value
        if isinstance(name, str):
            for key in _VALUE_KEYS:
                if key in item:
                    found = self.rewriter.conditions({name: item[key]})
                    self.kept += found.kept
                    rewritten[key] = found.value[name]
        return rewritten


@dataclass
class QueueRuleLoad:
    """The triggers' and macros' specs for one target org."""

    client: TrackerClient
    queues: QueueMap
    rewriter: QueryRewriter
    kept: Counter[str] = field(default_factory=Counter)  # for `not_carried`

    def specs(self) -> list[EntitySpec]:
        return [self._spec("trigger", PLAN_TRIGGERS), self._spec("macro", PLAN_MACROS)]

    def _spec(self, entity: str, plan: Callable[..., Any]) -> EntitySpec:
        def expected(record: StagedRecord) -> Fields:
            return self._settings(record, count=False)

        async def listing(queue: str) -> list[Fields]:
            return [
                {"id": str(rule["id"]), **{name: _as_read(name, rule.get(name))
                                           for name in SETTINGS[entity]}}
                for rule in await self.client.list_rules(queue, KINDS[entity])
            ]  # fmt: skip

        async def send(record: StagedRecord, parent: str | None) -> str:
            body = written(entity, self._settings(record, count=True))
            reply = await self.client.create_rule(self._queue(record), KINDS[entity], body)
            return str(reply["id"])

        async def refresh(record: StagedRecord, target_id: str) -> None:
            await self._refresh(entity, record, target_id)

        printed = Fingerprint(expected, self._where, listing, ("name",))
        return EntitySpec(
            entity, entity, plan, send, printed.find, requires=in_queue, refresh=refresh,
            order=Order(Phase.AUTOACTIONS), fingerprint=printed,
        )  # fmt: skip

    def _queue(self, record: StagedRecord) -> str:
        return self.queues.queue(record.parent or "")

    def _where(self, record: StagedRecord, parent: str | None = None) -> str:
        return self._queue(record)

    def _settings(self, record: StagedRecord, *, count: bool) -> Fields:
        """What the target takes: the source's settings, what they name rewritten."""
        raw = record.raw
        rewrite = RuleRewrite(self.rewriter)
        found: Fields = {name: raw.get(name) for name in SETTINGS[record.entity]}
        for name in _NESTED:
            if name in found:
                found[name] = rewrite.items(raw.get(name) or [])
        if record.entity == "trigger":
            found["active"] = bool(raw.get("active", True))
        if count:
            for kept in dict.fromkeys(rewrite.kept):
                self.kept[
                    f"{record.entity} {kept} has no target counterpart (kept as written)"
                ] += 1
        return found

    async def _refresh(self, entity: str, record: StagedRecord, target_id: str) -> None:
        """A trigger or macro changed at the source (renamed, switched off, its conditions or
        actions edited): its settings again; a trigger under the target's current version."""
        queue, kind = self._queue(record), KINDS[entity]
        version = None
        if entity == "trigger":
            version = int((await self.client.get_rule(queue, kind, target_id)).get("version") or 1)
        body = written(record.entity, self._settings(record, count=True))
        await self.client.update_rule(queue, kind, target_id, body, version)
