"""A queue's triggers and autoactions made by haul are switched off while a later run loads
its issues, and switched back on after the load: importing fires none of them.

The first run creates triggers and autoactions last (`Phase.AUTOACTIONS`), after every issue,
so it fires nothing. A later run (a nightly sync) imports new issues, and carries changed ones,
into queues where those are already active. So, before the load of a run with issues to load
(pending, in flight, or loaded and changed at the source) in a queue that holds triggers or
autoactions this store loaded, each of those the target has active is switched off; after
the load's last phase, each is switched on again (unless the source switched it off
meanwhile: then it stays off, as the source's). Macros fire on nobody's import: they are left
alone.

Resumable, and exactly once, with one checkpoint (`QUIET_RULES`), written apart from the
ledger (only the engine writes that):

1. read which of them are active in the target (each queue's listing of its triggers, and of
   its autoactions: one read a queue, not one a rule); add them to the checkpoint, and commit;
2. switch each off (a PATCH of `active` under the version read, repeatable);
3. load;
4. switch each in the checkpoint on again, under the version its switch off answered (read
   again only where that is stale: a person edited it during the load, or an earlier run
   switched it off); then empty the checkpoint, and commit.

A run killed anywhere between 1 and 4 leaves the checkpoint naming every rule it may have
switched off (one still on is named too: switching it on again changes nothing); the next run
keeps those held with its own, and switches them all on after its load, even when it has no
issue to load. A rule the target or the source no longer holds is dropped from the checkpoint
and counted. A run that stops (an error, exit 1 or 4) switches them on too, on its way out.
One killed cannot: `haul status` names what its checkpoint holds (`held_in_target`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import structlog

from haul.connectors.errors import ConflictError, NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.transform import QueueMap
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

QUIET_RULES = "quiet_rules"  # the checkpoint naming the rules switched off for a load
HELD = ("trigger", "autoaction")  # the ledger entities that fire on an issue's import or edit


@dataclass(frozen=True)
class Rule:
    """One trigger or autoaction in the target: its ledger entity and source id, its target
    queue and id."""

    entity: str
    source_id: str
    queue: str
    target_id: str

    def as_json(self) -> list[str]:
        return [self.entity, self.source_id, self.queue, self.target_id]


@dataclass
class QuietRules:
    """Holds one target's haul-made triggers and autoactions off while a load runs."""

    client: TrackerClient
    store: StagingStore
    queues: QueueMap
    # each rule as its switch off answered (its version then: the lock of the switch on)
    switched_off: dict[Rule, dict[str, Any]] = field(default_factory=dict)

    @asynccontextmanager
    async def holding(self) -> AsyncIterator[None]:
        active = await self._active(self._loaded_in(self._loading_queues()))
        held = self._held() | set(active)
        if held:
            self._record(held)
            for rule in sorted(held, key=Rule.as_json):
                await self._switch(rule, active=False, found=active.get(rule))
            log.info("rules_switched_off", rules=len(held))
        try:
            yield
        finally:
            await self._restore(held)

    async def _restore(self, held: set[Rule]) -> None:
        for rule in sorted(held, key=Rule.as_json):
            if not self._source_active(rule):
                continue
            try:  # as its switch off left it, unread
                await self._switch(rule, active=True, found=self.switched_off.get(rule))
            except ConflictError:  # edited in the target during the load: read, then switch
                await self._switch(rule, active=True)
        if held:
            self._record(set())
            log.info("rules_switched_on", rules=len(held))

    def _held(self) -> set[Rule]:
        """What an earlier run switched off and did not switch on again (it was killed)."""
        kept = self.store.get_checkpoint(QUIET_RULES) or {}
        return {Rule(*row) for row in kept.get("rules", [])}

    def _record(self, rules: set[Rule]) -> None:
        with self.store.transaction():
            rows = sorted(rule.as_json() for rule in rules)
            self.store.set_checkpoint(QUIET_RULES, {"rules": rows})

    def _loading_queues(self) -> set[str]:
        """The source queues this load imports issues into, or changes issues of."""
        ledger = self.store.ledger
        rows = [row for status in ("pending", "in_flight")
                for row in ledger.iter_rows(status=status, entity="issue")]  # fmt: skip
        rows += ledger.iter_changed("issue")
        return {row.source_id.rsplit("-", 1)[0] for row in rows}

    def _loaded_in(self, queues: set[str]) -> list[Rule]:
        if not queues:
            return []
        return [
            Rule(entity, row.source_id, self.queues.queue(queue), row.target_id)
            for entity in HELD
            for row in self.store.ledger.iter_rows(status="done", entity=entity)
            if row.target_id and not row.undone
            and (queue := row.source_id.split("/", 1)[0]) in queues
        ]  # fmt: skip

    async def _active(self, rules: Iterable[Rule]) -> dict[Rule, dict[str, Any]]:
        """Each rule the target has active, as just read (its version: the switch's lock), from
        its queue's listing: one read a queue and kind, not one a rule."""
        listings: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        active: dict[Rule, dict[str, Any]] = {}
        for rule in rules:
            where = (rule.entity, rule.queue)
            if where not in listings:
                listings[where] = await self._listing(*where)
            found = listings[where].get(str(rule.target_id))
            if found is not None and "version" not in found:  # a listing without the lock
                found = await self._read(rule)
            if found is None:
                log.info("held_rule_gone", entity=rule.entity, source_id=rule.source_id)
            elif found.get("active"):
                active[rule] = found
        return active

    async def _listing(self, entity: str, queue: str) -> dict[str, dict[str, Any]]:
        """A queue's triggers or autoactions, by id."""
        try:
            if entity == "trigger":
                listed = await self.client.list_rules(queue, "triggers")
            else:
                listed = await self.client.list_autoactions(queue)
        except NotFoundError:  # the queue is gone from the target
            return {}
        return {str(item.get("id")): item for item in listed if isinstance(item, dict)}

    def _source_active(self, rule: Rule) -> bool:
        """Whether it goes back on: unless the source switched it off meanwhile (one deleted at
        the source and kept in the target goes back as it was: on)."""
        record = self.store.get_record(rule.entity, rule.source_id)
        return record is None or bool(record.raw.get("active", True))

    async def _read(self, rule: Rule) -> dict[str, Any] | None:
        try:
            if rule.entity == "trigger":
                return await self.client.get_rule(rule.queue, "triggers", rule.target_id)
            return await self.client.get_autoaction(rule.queue, rule.target_id)
        except NotFoundError:
            log.info("held_rule_gone", entity=rule.entity, source_id=rule.source_id)
            return None

    async def _switch(
        self, rule: Rule, *, active: bool, found: dict[str, Any] | None = None
    ) -> None:
        """PATCH its `active` under its current version (repeatable: twice is once); `found`:
        the rule as read just before (else read now). An edit made since is refused on the
        version, not overwritten."""
        found = found or await self._read(rule)
        if found is None or bool(found.get("active")) == active:
            return
        version = int(found.get("version") or 1)
        if rule.entity == "trigger":
            body = {"active": active}
            reply = await self.client.update_rule(
                rule.queue, "triggers", rule.target_id, body, version
            )
        else:
            reply = await self.client.update_autoaction(
                rule.queue, rule.target_id, version, {"active": active}
            )
        if not active and isinstance(reply, dict) and "version" in reply:
            self.switched_off[rule] = reply


def held_in_target(store: StagingStore) -> list[str]:
    """What a killed load left switched off in the target (its checkpoint names them), one
    line each, by name, queue and target id; the next load switches them on again."""
    kept = store.get_checkpoint(QUIET_RULES) or {}
    rules = sorted({Rule(*row) for row in kept.get("rules", [])}, key=Rule.as_json)
    return [
        f"{rule.entity} {_name(store, rule)} in queue {rule.queue} (id {rule.target_id}) is "
        "switched off"
        for rule in rules
    ]


def _name(store: StagingStore, rule: Rule) -> str:
    record = store.get_record(rule.entity, rule.source_id)
    name = record.raw.get("name") if record is not None else None
    return repr(str(name)) if name else rule.source_id
