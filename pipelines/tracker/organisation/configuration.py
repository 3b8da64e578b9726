"""A queue as configured, loaded with the organisation: the workflows its issue types follow
(statuses and transitions), its issue-type configuration (every type it allows, each with its
workflow and resolutions, used by a staged issue or not) and its permission scheme.

- A **workflow** (ledger `workflow`, phase QUEUES_AND_CATEGORIES) named by a planned queue's
  configuration is found in the target by its key (its id) or made with the same key, its
  steps naming statuses by key (the dictionary phase made every status they name first).
- A queue's **configuration** (ledger `queue_config`, one per planned queue, under its queue,
  phase CONFIGURATION: before any issue) sets the target queue's `issueTypesConfig` and its
  permission scheme. The scheme is the source's, mapped: a user by `[mapping] users_file` or
  the same login (never the default user), a group by `[mapping] groups_file` or the same
  name (the group of every person by its id, 1 in every org: `all_staff`), roles as they are. **Fail closed**: a holder that maps to no one is left out of every
  code it held, which narrows access, never widens it, and is counted and named as not carried.
- A queue haul **creates** is restricted to that scheme right after its creation, in the same
  send (`restrict_new_queue`), before its first issue can arrive; the configuration's own send
  sets it again (idempotent). A queue the target **already had** is the target's: haul adds
  the issue types it lacks (with the source's workflow and resolutions) and changes nothing
  else of it, neither its types' workflows nor its permissions (`haul check` names where they
  differ); verify compares only what haul set. A queue the target held after a send of haul's
  was tried (a rerun after a lost reply or a failed restriction) counts as made by haul.

Verify compares workflows by key, statuses, initial status and transitions; a configuration by
its types (type, workflow key, resolution keys) and its scheme (per code, users by login,
groups by name, roles). A later run whose staged workflow or configuration changed carries the
change (`refresh`): a workflow haul made gets the source's steps, a queue haul made the
source's types and scheme.

What the API cannot carry: a workflow's own action ids where the service names a transition by
the status it leads to, and workflow screens and conditions (no reply shows them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config.mapping_files import read_groups_csv
from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, Order, Phase, RecordFailure, Ref
from haul.pipelines.tracker.organisation.configured import (
    config_items,
    plan_configs,
    plan_workflows,
    ref_id,
    workflow_ids,
    workflow_steps,
)
from haul.pipelines.tracker.organisation.objects import ORG, Snapshots
from haul.pipelines.tracker.target import TrackerTarget
from haul.pipelines.tracker.transform import ALL_STAFF_ID, Transform, is_all_staff
from haul.state.store import StagedRecord, StagingStore

Record = dict[str, Any]
CODES = ("create", "write", "read", "grant")
KINDS = ("users", "groups", "roles")


# -- how a workflow and a configuration read, on either side -----------------------------------


def _key(ref: Any) -> str | None:
    return str(ref.get("key") or ref.get("id")) if isinstance(ref, dict) else ref_id(ref)


def workflow_shape(raw: Record) -> Fields:
    """A workflow as verify compares it: its statuses, initial status and transitions."""
    steps = workflow_steps(raw)
    return {
        "statuses": sorted(str(_key(step.get("status"))) for step in steps),
        "initial": _key((raw.get("initialAction") or {}).get("target")),
        "transitions": sorted(
            f"{_key(step.get('status'))} -> {_key(action.get('target'))}"
            for step in steps
            for action in step.get("actions") or []
        ),
    }


def workflow_body(raw: Record, key: str) -> Record:
    """What makes the workflow in the target: statuses by key, under the source's key."""
    start = raw.get("initialAction") or {}

    def action(found: Record) -> Record:
        return {
            "id": found.get("id"),
            "name": found.get("name") or found.get("id"),
            "target": {"key": _key(found.get("target"))},
        }

    return {
        "id": key,
        "name": raw.get("name") or key,
        "initialAction": action(start),
        "steps": [
            {
                "status": {"key": _key(step.get("status"))},
                "actions": [action(a) for a in step.get("actions") or [] if isinstance(a, dict)],
            }
            for step in workflow_steps(raw)
        ],
    }


def types_shape(items: list[Record], workflow_of: Callable[[str], str]) -> list[str]:
    """A configuration's types as verify compares them: ``type: workflow [resolutions]``."""
    return sorted(
        f"{_key(item.get('issueType'))}: {workflow_of(str(ref_id(item.get('workflow'))))}"
        f" [{', '.join(sorted(str(_key(r)) for r in item.get('resolutions') or []))}]"
        for item in items
    )


def types_body(items: list[Record], workflow_of: Callable[[str], str]) -> list[Record]:
    """The target's `issueTypesConfig`: types and resolutions by key, workflows mapped."""
    return [
        {
            "issueType": _key(item.get("issueType")),
            "workflow": workflow_of(str(ref_id(item.get("workflow")))),
            "resolutions": [_key(r) for r in item.get("resolutions") or []],
        }
        for item in items
    ]


@dataclass(frozen=True)
class Holders:
    """Source holders -> target holders (see the module docstring)."""

    login_of: Callable[[Record], str | None]  # a source user ref -> a target login, or None
    logins: Mapping[str, str]  # target uid -> login (how a target scheme names its users)
    groups: Mapping[str, str]  # target group name -> id
    group_file: Mapping[str, str] = field(default_factory=dict)  # source group -> target group

    def group(self, ref: Record) -> str | None:
        """A source group's target name: the groups file's (a name, or `dir:<id>`), else its
        own name (the group of every person: the target's, by id: `all_staff`); one the target
        does not list maps to none."""
        name, gid = str(ref.get("display") or ref.get("name") or ""), str(ref.get("id") or "")
        if is_all_staff(gid, name, self.group_file):  # by its id: its name is the language's
            return next((n for n, i in self.groups.items() if i == ALL_STAFF_ID), None)
        target = (self.group_file.get(name) or self.group_file.get(gid) or name).removeprefix(
            "dir:"
        )
        if target in self.groups:
            return target
        return next((n for n, i in self.groups.items() if i == target), None)


def _entry(scheme: Record | None, code: str) -> Record:
    found = (scheme or {}).get(code)
    return found if isinstance(found, dict) else {}


def _refs(entry: Record, kind: str) -> list[Record]:
    return [ref for ref in entry.get(kind) or [] if isinstance(ref, dict)]


def mapped_scheme(scheme: Record, holders: Holders) -> tuple[dict[str, list[str]], list[str]]:
    """The source scheme as target names, per code (``user:login``, ``group:name``,
    ``role:name``), and the holders left out because they map to no one."""
    names: dict[str, list[str]] = {}
    unmapped: list[str] = []
    for code in CODES:
        entry, held = _entry(scheme, code), []
        for ref in _refs(entry, "users"):
            login = holders.login_of(ref)
            if login:
                held.append(f"user:{login}")
            else:
                unmapped.append(f"user {_label(ref)}")
        for ref in _refs(entry, "groups"):
            group = holders.group(ref)
            if group:
                held.append(f"group:{group}")
            else:
                unmapped.append(f"group {_label(ref)}")
        held += [f"role:{ref_id(ref)}" for ref in _refs(entry, "roles")]
        names[code] = sorted(set(held))
    return names, sorted(set(unmapped))


def target_scheme(scheme: Record, holders: Holders) -> dict[str, list[str]]:
    """A target scheme as the same names."""
    group_names = {gid: name for name, gid in holders.groups.items()}
    names = {}
    for code in CODES:
        entry = _entry(scheme, code)
        held = [f"user:{holders.logins.get(str(ref.get('id')), _label(ref))}"
                for ref in _refs(entry, "users")]  # fmt: skip
        held += [
            f"group:{group_names.get(str(ref.get('id')), _label(ref))}"
            for ref in _refs(entry, "groups")
        ]
        held += [f"role:{ref_id(ref)}" for ref in _refs(entry, "roles")]
        names[code] = sorted(set(held))
    return names


def scheme_body(names: dict[str, list[str]], holders: Holders) -> Record:
    """The PATCH that makes each code's holders exactly `names` (lists replace)."""
    body = {}
    for code, held in names.items():
        kinds: dict[str, list[Any]] = {kind: [] for kind in KINDS}
        for name in held:
            kind, _, value = name.partition(":")
            if kind == "user":
                kinds["users"].append(value)
            elif kind == "group":
                kinds["groups"].append(holders.groups[value])
            else:
                kinds["roles"].append(value)
        body[code] = kinds
    return body


def _label(ref: Record) -> str:
    return str(ref.get("display") or ref.get("name") or ref.get("id"))


# -- the load ---------------------------------------------------------------------------------


@dataclass
class QueueConfiguration:
    """The workflows' and the queue configurations' specs for one target org."""

    client: TrackerClient
    store: StagingStore
    transform: Transform
    holders: Holders
    create_missing: bool = True
    left_out: Counter[str] = field(default_factory=Counter)

    def specs(self) -> list[EntitySpec]:
        workflows = Snapshots(self._workflow_print())
        send_workflow = self.send_workflow if self.create_missing else self._refuse_workflow
        return [
            EntitySpec("workflow", "workflow", plan_workflows, workflows.keeping(send_workflow),
                       workflows.find, refresh=self.refresh_workflow,
                       order=Order(Phase.QUEUES_AND_CATEGORIES, find_first=True), fingerprint=self._workflow_print()),
            EntitySpec("queue_config", "queue_config", plan_configs, self.send_config,
                       self.find_config, requires=self._config_needs, refresh=self.refresh_config,
                       order=Order(Phase.CONFIGURATION), fingerprint=self._config_print()),
        ]  # fmt: skip

    def not_carried(self) -> dict[str, int]:
        return dict(sorted(self.left_out.items()))

    def _owned(self, entity: str, source_id: str) -> bool:
        """Whether haul made the target's object (or tried to, before it was found there)."""
        row = self.store.ledger.get(entity, source_id)
        return row is not None and (not row.found or row.attempts > 0)

    def _workflow_of(self, source_id: str) -> str:
        return self.store.ledger.target_id("workflow", source_id) or source_id

    # -- workflows ------------------------------------------------------------------------

    def _workflow_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            try:
                found = await self.client.list_workflows()
            except NotFoundError:
                return []
            return [{"id": str(w["id"]), "key": str(w["id"]), **workflow_shape(w)} for w in found]

        return Fingerprint(
            lambda record: {"key": record.source_id, **workflow_shape(record.raw)},
            lambda record, parent: ORG,
            listing,
            ("key",),
        )

    async def send_workflow(self, record: StagedRecord, parent: str | None) -> str:
        body = workflow_body(record.raw, record.source_id)
        return str((await self.client.create_workflow(body))["id"])

    async def _refuse_workflow(self, record: StagedRecord, parent: str | None) -> str:
        raise RecordFailure(
            f"the target has no workflow {record.source_id} and [mapping] create_missing is"
            " false: create it in the target, or allow haul to"
        )

    async def refresh_workflow(self, record: StagedRecord, target_id: str) -> None:
        """A workflow haul made gets the source's steps again; one the target had is its own."""
        if self._owned("workflow", record.source_id):
            body = workflow_body(record.raw, target_id)
            await self.client.update_workflow(
                target_id, {k: body[k] for k in ("name", "steps", "initialAction")}
            )

    # -- queue configurations -------------------------------------------------------------

    def _config_needs(self, record: StagedRecord) -> list[Ref]:
        return [Ref("workflow", workflow) for workflow in workflow_ids(record.raw)]

    def _expected_config(self, record: StagedRecord) -> Fields:
        queue = self.transform.queues.queue(record.source_id)
        if not self._owned("queue", record.source_id):
            return {"queue": queue}  # the target's own queue: haul set nothing to compare
        items = config_items(record.raw)
        expected: Fields = {"queue": queue, "types": types_shape(items, self._workflow_of)}
        expected["workflows"] = self._workflow_shapes(record.raw)
        if record.raw.get("permissions") is not None:
            expected["permissions"] = mapped_scheme(record.raw["permissions"], self.holders)[0]
        return expected

    def _config_print(self) -> Fingerprint:
        async def listing(queue: str) -> list[Fields]:
            found = await self.client.get_queue(queue)
            items = [i for i in found.get("issueTypesConfig") or [] if isinstance(i, dict)]
            read: Fields = {"id": queue, "queue": queue, "types": types_shape(items, str)}
            read["workflows"] = {
                str(w["id"]): workflow_shape(w)
                for w in await self.client.list_queue_workflows(queue)
            }
            try:
                read["permissions"] = target_scheme(
                    await self.client.get_queue_scheme(queue), self.holders
                )
            except NotFoundError:
                read["permissions"] = None
            return [read]

        return Fingerprint(
            self._expected_config,
            lambda record, parent: self.transform.queues.queue(record.source_id),
            listing,
            ("queue",),
        )

    def _workflow_shapes(self, raw: Record) -> dict[str, Fields]:
        """The workflows the queue's types follow, as their staged records read (so a workflow
        changed in the target by hand is named with each queue that follows it)."""
        shapes = {}
        for workflow in workflow_ids(raw):
            record = self.store.get_record("workflow", workflow)
            if record is not None:
                shapes[self._workflow_of(workflow)] = workflow_shape(record.raw)
        return shapes

    async def find_config(
        self, record: StagedRecord, parent: str | None, unclaimed: Callable[[str], bool]
    ) -> str | None:
        """A configuration is set, not made: found when the target's queue reads as haul would
        set it (after an interrupted send), else it is set again."""
        printed = self._config_print()
        queue = printed.where(record, parent)
        if queue is None:
            return None
        try:
            read = await printed.read_back(record, parent, queue, printed.listing)
        except NotFoundError:
            return None
        return queue if read == printed.expected(record) else None

    async def send_config(self, record: StagedRecord, parent: str | None) -> str:
        queue = parent or self.transform.queues.queue(record.source_id)
        if self._owned("queue", record.source_id):
            await self._set_types(record, queue)
            await self._set_scheme(record, queue)
        else:
            await self._add_types(record, queue)
            self.left_out[
                "queue permissions: a queue the target already had keeps its own"
                f" ({queue}; haul check compares them)"
            ] += 1
        return queue

    async def refresh_config(self, record: StagedRecord, target_id: str) -> None:
        await self.send_config(record, target_id)

    async def restrict_new_queue(self, source_key: str, target_key: str) -> None:
        """A queue haul just made takes the source's (mapped) scheme before anything else."""
        record = self.store.get_record("queue_config", source_key)
        if record is not None:
            await self._set_scheme(record, target_key)

    async def _set_types(self, record: StagedRecord, queue: str) -> None:
        items = config_items(record.raw)
        if items:
            body = {"issueTypesConfig": types_body(items, self._workflow_of)}
            await self.client.update_queue(queue, body)

    async def _add_types(self, record: StagedRecord, queue: str) -> None:
        """The types the target's own queue lacks, added beside its own."""
        have = [i for i in (await self.client.get_queue(queue)).get("issueTypesConfig") or []
                if isinstance(i, dict)]  # fmt: skip
        kinds = {_key(item.get("issueType")) for item in have}
        missing = [i for i in config_items(record.raw) if _key(i.get("issueType")) not in kinds]
        if missing:
            body = types_body(have, str) + types_body(missing, self._workflow_of)
            await self.client.update_queue(queue, {"issueTypesConfig": body})

    async def _set_scheme(self, record: StagedRecord, queue: str) -> None:
        scheme = record.raw.get("permissions")
        if not isinstance(scheme, dict):
            return  # the source serves no scheme: the target's stays as it is
        names, unmapped = mapped_scheme(scheme, self.holders)
        for holder in unmapped:
            self.left_out[
                f"queue permissions: {holder} maps to no one in the target (left out of"
                f" {queue}: access narrowed)"
            ] += 1
        await self.client.update_queue_scheme(queue, scheme_body(names, self.holders))


async def target_groups(client: TrackerClient) -> dict[str, str]:
    """Target group name -> id; none where the service lists no groups."""
    try:
        return {str(group.get("name")): str(group["id"]) for group in await client.list_groups()}
    except NotFoundError:
        return {}


async def queue_configuration(target: TrackerTarget) -> QueueConfiguration:
    """The queues' configuration load against one target org (its groups read once)."""
    groups_file = target.config.mapping.groups_file
    holders = Holders(
        login_of=target.transform.users.holder,
        logins={uid: login for login, uid in target.uids.items()},
        groups=await target_groups(target.client),
        group_file=read_groups_csv(groups_file) if groups_file else {},
    )
    return QueueConfiguration(target.client, target.store, target.transform, holders,
                              target.config.mapping.create_missing)  # fmt: skip
