"""What every organisation object loads with: found in the target first, else made there.

Field categories, global custom fields, queue-local fields, components, versions, boards with
their columns, and sprints are ledger entities of their own, loaded in phases below the issues'
(a category before the fields in it, a field before the queues' issues carry it, a board before
its columns and sprints). Each is first looked for in the target by what identifies it there (a
category, component, version, board, column or sprint by name, in its queue or board; a field
by key) and reused when there, else created; the ledger keeps its target id either way, and the
issues' bodies map ids through it (`StructureMap`, built with the target context in
`pipelines.tracker.target`). The fingerprint that finds an object is the one `haul verify`
compares it by.

One module per kind of object, each with its plans and a `specs(objects)` built on the one
`OrgObjects` of the target org: `dictionaries` (dictionary values and queues), `fields`
(categories, global and local fields), `queue_objects` (components and versions) and `boards`
(boards, their columns and sprints, and which boards go with the migrated queues).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import (
    EntitySpec,
    Fields,
    Fingerprint,
    Order,
    Phase,
    Planned,
    RecordFailure,
    Ref,
    Sender,
)
from haul.pipelines.tracker.transform import Transform
from haul.state.store import StagedRecord, StagingStore

ORG = "org"  # the container of what is org-wide (dictionaries, queues, fields, boards)
PHASES = {  # dictionary values first, then queues and field categories, then fields
    "status": Phase.DICTIONARY_VALUES,
    "issuetype": Phase.DICTIONARY_VALUES,
    "priority": Phase.DICTIONARY_VALUES,
    "resolution": Phase.DICTIONARY_VALUES,
    "queue": Phase.QUEUES_AND_CATEGORIES,
    "field_category": Phase.QUEUES_AND_CATEGORIES,
    "field": Phase.FIELDS,
}
Plan = Callable[[StagingStore], Iterator[Planned]]


def name_of(value: Any) -> str:
    """A name that may come localised (`{"en": ..., "ru": ...}`) as one string."""
    if isinstance(value, dict):
        return str(value.get("en") or next(iter(value.values()), ""))
    return str(value or "")


def plan_each(entity: str) -> Plan:
    """Every staged record of `entity`, a root of its own."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        for record in store.iter_records(entity):
            yield Planned(record, None, record.source_id)

    return plan


def in_org(record: StagedRecord, parent: str | None) -> str:
    """Where an org-wide object lives: the org."""
    return ORG


def under_parent(record: StagedRecord, parent: str | None) -> str | None:
    """Where a board's column or sprint lives: its board in the target."""
    return parent


def queue_refs(record: StagedRecord) -> list[Ref]:
    """A queue's own object (a local field, a component, a version) needs its queue first."""
    queue = record.raw.get("queue")
    key = queue.get("key") if isinstance(queue, dict) else queue
    key = key or record.parent
    return [Ref("queue", str(key))] if key else []


@dataclass
class OrgObjects:
    """Everything the organisation objects' specs need to write to one target org."""

    client: TrackerClient
    store: StagingStore
    transform: Transform
    create_missing: bool = True
    # what a queue haul just made takes before anything else: its permission scheme
    # (source key, target key), so it is never open to more people than the source's
    restrict: Callable[[str, str], Awaitable[None]] | None = None
    queues: Collection[str] = ()  # `scope.queues`: the boards of these are carried
    kept: Counter[str] = field(default_factory=Counter)  # for `not_carried`

    def spec(
        self,
        name: str,
        plan: Plan,
        printed: Fingerprint,
        send: Sender,
        requires: Callable[[StagedRecord], list[Ref]] | None = None,
        refresh: Callable[[StagedRecord, str], Awaitable[Fields | None]] | None = None,
    ) -> EntitySpec:
        """An object's spec: looked for in its container's snapshot first, made otherwise
        (unless `[mapping] create_missing = false`)."""
        seen = Snapshots(printed)
        spec = EntitySpec(
            name, name, plan, seen.keeping(self._if_allowed(name, send)), seen.find,
            order=Order(PHASES.get(name, Phase.CONFIGURATION), find_first=True),
            fingerprint=printed, refresh=refresh,
        )  # fmt: skip
        return spec if requires is None else replace(spec, requires=requires)

    def _if_allowed(self, entity: str, send: Sender) -> Sender:
        """`send`, unless `[mapping] create_missing = false`: then what the target lacks fails
        its record (haul check lists it first) and nothing is made."""
        if self.create_missing:
            return send

        async def refuse(record: StagedRecord, parent: str | None) -> str:
            raise RecordFailure(
                f"the target has no {entity} {record.source_id} and [mapping] create_missing "
                "is false: create it in the target, or allow haul to"
            )

        return refuse

    def target_of(self, entity: str, source_id: str) -> str:
        """The target id of an organisation object loaded before; RecordFailure if it is not."""
        target = self.store.ledger.target_id(entity, source_id)
        if target is None:
            raise RecordFailure(f"{entity} {source_id} was not loaded")
        return target

    def queue(self, record: StagedRecord) -> str:
        """The target queue of a queue's own object."""
        queue = record.raw.get("queue")
        key = queue.get("key") if isinstance(queue, dict) else queue
        return self.transform.queues.queue(str(key or (record.parent or "")))

    def in_queue(self, record: StagedRecord, parent: str | None) -> str:
        """Where a queue's own object lives: its queue in the target."""
        return self.queue(record)


class Snapshots:
    """What a container (the org, a queue, a board) holds, listed once a run: each object is
    looked for before it is made (`find_first`), and a container of many siblings (a board's
    sprints) would otherwise be listed again before each one is made. What this run makes
    there is added as it would be listed (its `expected` fields and the id the target gave),
    so a look after a send finds it as a fresh listing would. A write that failed or ended in
    doubt may have made something unseen, so it forgets the container: the engine's look that
    follows (is it there after all?) lists it afresh, as does the first look of a run, which
    settles what an interrupted one left in flight."""

    def __init__(self, printed: Fingerprint) -> None:
        self._printed = printed
        self._taken: dict[str, list[Fields]] = {}
        self._snapshot = replace(printed, listing=self._listing)

    async def _listing(self, container: str) -> list[Fields]:
        if container not in self._taken:
            self._taken[container] = await self._printed.listing(container)
        return self._taken[container]

    async def find(
        self, record: StagedRecord, parent: str | None, unclaimed: Callable[[str], bool]
    ) -> str | None:
        return await self._snapshot.find(record, parent, unclaimed)

    def keeping(self, send: Sender) -> Sender:
        """`send`, keeping the snapshot of the record's container current."""

        async def sent(record: StagedRecord, parent: str | None) -> str:
            container = self._printed.where(record, parent)
            try:
                target_id = await send(record, parent)
            except BaseException:
                self._taken.pop(container or "", None)
                raise
            if container in self._taken:
                self._taken[container].append({**self._printed.expected(record), "id": target_id})
            return target_id

        return sent
