"""What the organisation layer plans of the queues' configuration: the workflows their issue
types follow, one configuration record per planned queue, and the dictionary values those
allow (made in the target whether or not a staged issue uses them). The load is
`configuration`'s; this module plans only, so the dictionaries' plans can ask it too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haul.pipelines.specs import Planned, Ref
from haul.pipelines.streams import not_staged
from haul.state.store import StagedRecord, StagingStore

Record = dict[str, Any]


def planned_queues(store: StagingStore) -> set[str]:
    """The source queues the load makes or finds: those the staged issues are in; in a store
    whose extract lists no issues (the first part of a shard manifest: its shards list them,
    and find what it made), every scoped queue, each of which has its configuration staged."""
    if "issue" in not_staged(store):
        return {record.source_id for record in store.iter_records("queue_config")}
    used = store.distinct_values("issue", "queue", "key")
    return {record.source_id for record in store.iter_records("queue") if record.source_id in used}


def _configs(store: StagingStore) -> Iterator[StagedRecord]:
    planned = planned_queues(store)
    for record in store.iter_records("queue_config"):
        if record.source_id in planned:
            yield record


def ref_id(value: Any) -> str | None:
    """A reference's id (else key), or a bare id as a string; None when there is none."""
    if isinstance(value, dict):
        found = value.get("id") or value.get("key")
        return str(found) if found is not None else None
    return str(value) if value not in (None, "") else None


def config_items(raw: Record) -> list[Record]:
    """A staged queue configuration's items (issue type, workflow, resolutions)."""
    return [item for item in raw.get("issueTypesConfig") or [] if isinstance(item, dict)]


def workflow_ids(raw: Record) -> list[str]:
    """The workflows a staged queue configuration names, in order, once each."""
    found: list[str] = []
    for item in config_items(raw):
        workflow = ref_id(item.get("workflow"))
        if workflow and workflow not in found:
            found.append(workflow)
    return found


def plan_workflows(store: StagingStore) -> Iterator[Planned]:
    """The workflows the planned queues' configurations name."""
    wanted = {workflow for record in _configs(store) for workflow in workflow_ids(record.raw)}
    for record in store.iter_records("workflow"):
        if record.source_id in wanted:
            yield Planned(record, None, record.source_id)


def plan_configs(store: StagingStore) -> Iterator[Planned]:
    """One configuration per planned queue, under its queue."""
    for record in _configs(store):
        yield Planned(record, Ref("queue", record.source_id))


def workflow_steps(raw: Record) -> list[Record]:
    """A staged workflow's steps (a status each, with the actions leaving it)."""
    return [step for step in raw.get("steps") or [] if isinstance(step, dict)]


def configured_values(store: StagingStore, entity: str) -> set[str]:
    """The source ids of the dictionary values the planned queues' configurations allow, and
    the statuses their workflows name: made in the target whether or not an issue uses them."""
    ids: set[str | None] = set()
    if entity == "status":
        wanted = {w for record in _configs(store) for w in workflow_ids(record.raw)}
        for record in store.iter_records("workflow"):
            if record.source_id in wanted:
                ids.add(ref_id((record.raw.get("initialAction") or {}).get("target")))
                for step in workflow_steps(record.raw):
                    ids.add(ref_id(step.get("status")))
                    ids |= {ref_id(a.get("target")) for a in step.get("actions") or []}
    for record in _configs(store):
        for item in config_items(record.raw):
            if entity == "issuetype":
                ids.add(ref_id(item.get("issueType")))
            elif entity == "resolution":
                ids |= {ref_id(r) for r in item.get("resolutions") or []}
    return {found for found in ids if found}
