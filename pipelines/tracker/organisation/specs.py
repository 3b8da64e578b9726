"""The organisation objects the issues point to: found in the target, or made, before any issue.

Field categories, global custom fields, queue-local fields, components, versions, boards with
their columns, and sprints are ledger entities of their own, loaded in phases below the issues'
(a category before the fields in it, a field before the queues' issues carry it, a board before
its columns and sprints). Each is first looked for in the target by what identifies it there (a
category, component, version, board, column or sprint by name, in its queue or board; a field
by key) and reused when there, else created; the ledger keeps its target id either way, and the
issues' bodies map ids through it (`StructureMap`, built with the target context in
`pipelines.tracker.target`). The fingerprint that finds an object is the
one `haul verify` compares it by.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from haul.connectors.errors import RecordError
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
from haul.pipelines.tracker.organisation.board_scope import board_of, carried_boards
from haul.pipelines.tracker.organisation.configured import configured_values, planned_queues
from haul.pipelines.tracker.transform import Transform
from haul.state.store import StagedRecord, StagingStore

ORG = "org"  # the container of what is org-wide (dictionaries, queues, fields, boards)
PHASES = {  # dictionary values first, then queues and field categories, then fields
    "queue": Phase.QUEUES_AND_CATEGORIES,
    "field_category": Phase.QUEUES_AND_CATEGORIES,
    "field": Phase.FIELDS,
}
DICTIONARIES = {  # ledger entity -> (the issue field that names it, its path in the API)
    "status": ("status", "statuses"),
    "issuetype": ("type", "issuetypes"),
    "priority": ("priority", "priorities"),
    "resolution": ("resolution", "resolutions"),
}


def _phase(entity: str) -> Phase:
    """The load phase of an organisation object (what is not named loads with the rest)."""
    if entity in DICTIONARIES:
        return Phase.DICTIONARY_VALUES
    return PHASES.get(entity, Phase.CONFIGURATION)


def _name(value: Any) -> str:
    """A name that may come localised (`{"en": ..., "ru": ...}`) as one string."""
    if isinstance(value, dict):
        return str(value.get("en") or next(iter(value.values()), ""))
    return str(value or "")


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


def plan_each(entity: str) -> Callable[[StagingStore], Iterator[Planned]]:
    """Every staged record of `entity`, a root of its own."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        for record in store.iter_records(entity):
            yield Planned(record, None, record.source_id)

    return plan


def board_plans(scope: Collection[str]) -> dict[str, Callable[[StagingStore], Iterator[Planned]]]:
    """The plans of the boards carried (`board_scope`: a board goes with its queue, `scope`
    being `scope.queues`), their columns in the board's order, and every sprint of theirs
    (past, active and future ones: people plan in them), each under its board."""

    def boards(store: StagingStore) -> Iterator[Planned]:
        carried = carried_boards(store, scope)
        for record in store.iter_records("board"):
            if record.source_id in carried:
                yield Planned(record, None, record.source_id)

    def columns(store: StagingStore) -> Iterator[Planned]:
        carried = carried_boards(store, scope)
        for record in store.iter_records("board_column"):
            if record.parent in carried:
                position = f"{record.raw.get('position', 0):06d}"
                yield Planned(record, Ref("board", record.parent or ""), position)

    def sprints(store: StagingStore) -> Iterator[Planned]:
        carried = carried_boards(store, scope)
        for record in store.iter_records("sprint"):
            if (board := board_of(record)) in carried:
                yield Planned(record, Ref("board", board), str(record.raw.get("startDate") or ""))

    return {"board": boards, "board_column": columns, "sprint": sprints}


ORG_PLANS = {
    **{entity: plan_dictionary(entity) for entity in DICTIONARIES},
    "queue": plan_queues,
    "field_category": plan_categories,
    "field": plan_fields,
    "local_field": plan_each("local_field"),
    "component": plan_each("component"),
    "version": plan_each("version"),
}


@dataclass
class OrganisationLoad:
    """The specs of the organisation objects for one target org."""

    client: TrackerClient
    store: StagingStore
    transform: Transform
    create_missing: bool = True
    # what a queue haul just made takes before anything else: its permission scheme
    # (source key, target key), so it is never open to more people than the source's
    restrict: Callable[[str, str], Awaitable[None]] | None = None
    queues: Collection[str] = ()  # `scope.queues`: the boards of these are carried
    kept: Counter[str] = field(default_factory=Counter)  # for `not_carried`

    def specs(self) -> list[EntitySpec]:
        """Every organisation object's spec, in the order siblings load."""
        made = [
            *(
                (kind, self._dictionary_print(kind), self._send_value(kind))
                for kind in DICTIONARIES
            ),
            ("queue", self._queue_key_print(), self.send_queue),
            ("field_category", self._category_print(), self.send_category),
            ("field", self._field_print(), self.send_field),
            ("local_field", self._local_field_print(), self.send_local_field),
            (
                "component",
                self._queue_print(self.client.list_queue_components),
                self.send_component,
            ),
            ("version", self._version_print(), self.send_version),
            ("board", self._board_print(), self.send_board),
            ("board_column", self._column_print(), self.send_column),
            ("sprint", self._sprint_print(), self.send_sprint),
        ]
        plans = {**ORG_PLANS, **board_plans(self.queues)}
        specs = []
        for name, printed, send in made:
            seen = Snapshots(printed)
            specs.append(
                EntitySpec(name, name, plans[name], seen.keeping(self._if_allowed(name, send)),
                           seen.find, order=Order(_phase(name), find_first=True),
                           fingerprint=printed)
            )  # fmt: skip
        needs = {"field": _category_of, "local_field": _category_and_queue_of,
                 "component": _queue_of, "version": _queue_of}  # fmt: skip
        specs = [
            replace(spec, requires=needs[spec.name]) if spec.name in needs else spec
            for spec in specs
        ]
        return [
            replace(spec, refresh=self.refresh_version) if spec.name == "version" else spec
            for spec in specs
        ]

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

    # -- dictionary values and queues -----------------------------------------------------

    def _dictionary_print(self, kind: str) -> Fingerprint:
        path = DICTIONARIES[kind][1]

        async def listing(container: str) -> list[Fields]:
            values = await self.client.list_dictionary(path)
            return [{"id": str(v["id"]), "key": v.get("key")} for v in values]

        return Fingerprint(lambda record: {"key": record.raw.get("key")}, _org, listing, ("key",))

    def _send_value(self, kind: str) -> Sender:
        path = DICTIONARIES[kind][1]

        async def send(record: StagedRecord, parent: str | None) -> str:
            raw = record.raw
            body: dict[str, Any] = {
                "key": raw["key"],
                "name": _name(raw.get("name") or raw.get("display")) or raw["key"],
            }
            for name in ("order", "description"):
                if raw.get(name) not in (None, ""):
                    body[name] = raw[name]
            if kind == "status":
                body["type"] = raw.get("type") or "new"
            return str((await self.client.create_dictionary_value(path, body))["id"])

        return send

    def _queue_key_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            return [{"id": str(q["key"]), "key": q["key"]} async for q in self.client.iter_queues()]

        return Fingerprint(
            lambda record: {"key": self.transform.queues.queue(record.source_id)},
            _org,
            listing,
            ("key",),
        )

    async def send_queue(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body: dict[str, Any] = {
            "key": self.transform.queues.queue(record.source_id),
            "name": raw.get("name") or record.source_id,
            "lead": self.transform.users.login(raw.get("lead")),
        }
        for name in ("defaultType", "defaultPriority"):
            if isinstance(raw.get(name), dict):
                body[name] = {"key": raw[name].get("key")}
        if raw.get("description"):
            body["description"] = raw["description"]
        made = str((await self.client.create_queue(body))["key"])
        if self.restrict is not None:
            try:
                await self.restrict(record.source_id, made)
            except RecordError as exc:  # refused: a person must look (an outage stops the run)
                raise RecordFailure(
                    f"queue {made} was made but its permissions could not be set ({exc}):"
                    " nothing is imported into it until they are; fix that, then run haul load"
                    " --retry-failed (it sets them before any issue)"
                ) from exc
        return made

    def target_of(self, entity: str, source_id: str) -> str:
        """The target id of an organisation object loaded before; RecordFailure if it is not."""
        target = self.store.ledger.target_id(entity, source_id)
        if target is None:
            raise RecordFailure(f"{entity} {source_id} was not loaded")
        return target

    def _queue(self, record: StagedRecord) -> str:
        queue = record.raw.get("queue")
        key = queue.get("key") if isinstance(queue, dict) else queue
        return self.transform.queues.queue(str(key or (record.parent or "")))

    # -- field categories and fields ------------------------------------------------------

    def _category_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            found = await self.client.list_field_categories()
            return [{"id": str(c["id"]), "name": _name(c.get("name"))} for c in found]

        return Fingerprint(
            lambda record: {"name": _name(record.raw.get("name"))}, _org, listing, ("name",)
        )

    async def send_category(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body = {"name": raw.get("name"), "order": raw.get("order") or 0}
        if raw.get("description"):
            body["description"] = raw["description"]
        return str((await self.client.create_field_category(body))["id"])

    def _field_body(self, record: StagedRecord) -> dict[str, Any]:
        raw = record.raw
        category = str((raw.get("category") or {}).get("id") or "")
        body: dict[str, Any] = {
            "id": raw.get("key") or raw.get("id"),
            "name": raw.get("name"),
            "category": self.target_of("field_category", category),
            "type": raw.get("fieldType"),
        }
        for name in ("description", "readonly", "optionsProvider", "order"):
            if raw.get(name) not in (None, ""):
                body[name] = raw[name]
        return body

    def _field_fields(self, item: dict[str, Any]) -> Fields:
        return {
            "id": str(item["id"]),
            "key": item.get("key") or item.get("id"),
            "type": item.get("fieldType"),
        }

    def _field_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            return [
                self._field_fields(f)
                for f in await self.client.list_fields()
                if f.get("type") == "global"
            ]

        return Fingerprint(
            lambda record: {
                "key": record.raw.get("key") or record.source_id,
                "type": record.raw.get("fieldType"),
            },
            _org,
            listing,
            ("key",),
        )

    async def send_field(self, record: StagedRecord, parent: str | None) -> str:
        return str((await self.client.create_field(self._field_body(record)))["id"])

    def _local_field_print(self) -> Fingerprint:
        async def listing(queue: str) -> list[Fields]:
            return [
                {"id": str(f["id"]), "key": f.get("key"), "type": f.get("fieldType")}
                for f in await self.client.list_local_fields(queue)
            ]

        return Fingerprint(
            lambda record: {"key": record.raw.get("key"), "type": record.raw.get("fieldType")},
            lambda record, parent: self._queue(record),
            listing,
            ("key",),
        )

    async def send_local_field(self, record: StagedRecord, parent: str | None) -> str:
        body = self._field_body(record)
        body["id"] = record.raw.get("key")
        reply = await self.client.create_local_field(self._queue(record), body)
        return str(reply["id"])

    # -- components and versions (per queue) ----------------------------------------------

    def _queue_print(self, listed: Callable[[str], Awaitable[list[dict[str, Any]]]]) -> Fingerprint:
        async def listing(queue: str) -> list[Fields]:
            return [
                {"id": str(item["id"]), "name": item.get("name")} for item in await listed(queue)
            ]

        return Fingerprint(
            lambda record: {"name": record.raw.get("name")},
            lambda record, parent: self._queue(record),
            listing,
            ("name",),
        )

    async def send_component(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body: dict[str, Any] = {"name": raw["name"], "queue": self._queue(record)}
        for name in ("description", "assignAuto"):
            if raw.get(name) not in (None, ""):
                body[name] = raw[name]
        if raw.get("lead"):
            body["lead"] = self.transform.users.login(raw["lead"])
        return str((await self.client.create_component(body))["id"])

    async def refresh_version(self, record: StagedRecord, target_id: str) -> None:
        """A version changed at the source (released, archived, renamed, its dates moved):
        its settings again, under the target's current version lock."""
        listed = await self.client.list_queue_versions(self._queue(record))
        found = next((item for item in listed if str(item.get("id")) == target_id), None)
        if found is None:
            raise RecordFailure(f"version {target_id} is no longer in the target's queue")
        body = {name: value for name, value in _version_fields(record.raw).items()
                if value is not None}  # fmt: skip
        if record.raw.get("description") is not None:
            body["description"] = record.raw["description"]
        await self.client.update_version(target_id, int(found.get("version") or 1), body)

    def _version_print(self) -> Fingerprint:
        """A version by its name in its queue; verify compares its dates and flags too."""

        async def listing(queue: str) -> list[Fields]:
            return [
                {"id": str(item["id"]), **_version_fields(item)}
                for item in await self.client.list_queue_versions(queue)
            ]

        return Fingerprint(
            lambda record: _version_fields(record.raw),
            lambda record, parent: self._queue(record),
            listing,
            ("name",),
        )

    async def send_version(self, record: StagedRecord, parent: str | None) -> str:
        """Made with its dates and `released` flag; an archived one is then archived (the
        creation takes no `archived`)."""
        raw = record.raw
        body: dict[str, Any] = {"name": raw["name"], "queue": self._queue(record)}
        for name in ("description", "startDate", "dueDate"):
            if raw.get(name):
                body[name] = raw[name]
        if raw.get("released"):
            body["released"] = True
        made = await self.client.create_version(body)
        if raw.get("archived") and not made.get("archived"):
            await self.client.update_version(
                made["id"], int(made.get("version") or 1), {"archived": True}
            )
        return str(made["id"])

    # -- boards, their columns and sprints ------------------------------------------------

    def _board_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            return [
                {"id": str(b["id"]), "name": b.get("name")} for b in await self.client.list_boards()
            ]

        return Fingerprint(
            lambda record: {"name": record.raw.get("name")}, _org, listing, ("name",)
        )

    async def send_board(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body: dict[str, Any] = {"name": raw["name"], "useRanking": bool(raw.get("useRanking"))}
        queue = (raw.get("filter") or {}).get("queue")
        if queue:
            body["defaultQueue"] = self.transform.queues.queue(str(queue))
        return str((await self.client.create_board(body))["id"])

    def _column_print(self) -> Fingerprint:
        async def listing(board: str) -> list[Fields]:
            return [
                {"id": str(c["id"]), "name": c.get("name"), "statuses": _status_keys(c)}
                for c in await self.client.list_board_columns(board)
            ]

        return Fingerprint(
            lambda record: {"name": record.raw.get("name"), "statuses": _status_keys(record.raw)},
            _under_parent,
            listing,
            ("name",),
        )

    async def send_column(self, record: StagedRecord, board: str | None) -> str:
        if board is None:
            raise RecordFailure(f"the board of column {record.source_id} is not loaded")
        body = {"name": record.raw["name"], "statuses": _status_keys(record.raw)}
        return str((await self.client.create_board_column(board, body))["id"])

    def _sprint_print(self) -> Fingerprint:
        async def listing(board: str) -> list[Fields]:
            return [
                {
                    "id": str(s["id"]),
                    "name": s.get("name"),
                    "startDate": s.get("startDate"),
                    "endDate": s.get("endDate"),
                    "status": s.get("status") or "draft",
                }
                for s in await self.client.list_board_sprints(board)
            ]

        return Fingerprint(
            lambda record: {
                "name": record.raw.get("name"),
                "startDate": record.raw.get("startDate"),
                "endDate": record.raw.get("endDate"),
                "status": record.raw.get("status") or "draft",
            },
            _under_parent,
            listing,
            ("name",),
        )

    async def send_sprint(self, record: StagedRecord, board: str | None) -> str:
        if board is None:
            raise RecordFailure(f"the board of sprint {record.source_id} is not loaded")
        raw = record.raw
        body = {
            "name": raw["name"],
            "board": board,
            "startDate": raw.get("startDate"),
            "endDate": raw.get("endDate"),
            "status": raw.get("status") or "draft",
        }
        if raw.get("archived"):
            self.kept["sprint archived: the API archives no sprint (made unarchived)"] += 1
        return str((await self.client.create_sprint(body))["id"])


def _version_fields(version: dict[str, Any]) -> Fields:
    return {
        "name": version.get("name"),
        "startDate": version.get("startDate") or None,
        "dueDate": version.get("dueDate") or None,
        "released": bool(version.get("released")),
        "archived": bool(version.get("archived")),
    }


def _category_of(record: StagedRecord) -> list[Ref]:
    """A field needs its category in the target first."""
    category = (record.raw.get("category") or {}).get("id")
    return [Ref("field_category", str(category))] if category else []


def _queue_of(record: StagedRecord) -> list[Ref]:
    """A queue's own object (a local field, a component, a version) needs its queue first."""
    queue = record.raw.get("queue")
    key = queue.get("key") if isinstance(queue, dict) else queue
    key = key or record.parent
    return [Ref("queue", str(key))] if key else []


def _category_and_queue_of(record: StagedRecord) -> list[Ref]:
    return [*_category_of(record), *_queue_of(record)]


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


def _org(record: StagedRecord, parent: str | None) -> str:
    return ORG


def _under_parent(record: StagedRecord, parent: str | None) -> str | None:
    return parent


def _status_keys(column: dict[str, Any]) -> list[str]:
    return sorted(str(s.get("key")) for s in column.get("statuses") or [] if isinstance(s, dict))
