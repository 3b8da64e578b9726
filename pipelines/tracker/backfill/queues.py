"""The queue a tracker back-fill writes into: found in the target, or made before its issues.

A rule's `queue` need not be a queue of the source (the answers come from forms), so the
organisation layer, which makes the source's queues, does not make it. One ledger row per
queue, keyed by the survey of the first rule that names it (its record is that survey), loads
in the queues' phase, before any issue: reused when the target has the key, else created
(`[mapping] create_missing`; false fails the row and `haul check` names the rule first). A
queue the organisation layer makes for the staged issues is left to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.forms.staged import rules
from haul.pipelines.specs import (
    EntitySpec,
    Fields,
    Fingerprint,
    Order,
    Phase,
    Planned,
    RecordFailure,
)
from haul.pipelines.tracker.target import default_user
from haul.pipelines.tracker.transform import QueueMap
from haul.state.store import StagedRecord, StagingStore

PREFERRED = {"issuetype": "task", "priority": "normal"}  # a new queue's defaults, when there


def queue_rules(config: Config) -> dict[str, str]:
    """Survey id -> the queue it writes into, the first rule per queue only."""
    first: dict[str, str] = {}
    for _, rule in rules(config, "tracker"):
        first.setdefault(str(rule.queue), rule.survey)
    return {survey: queue for queue, survey in first.items()}


def plan_queues(config: Config) -> PlanFn:
    """A row per back-fill queue the organisation layer does not load for the issues."""
    wanted = queue_rules(config)
    mapped = QueueMap(dict(config.mapping.queues))

    def plan(store: StagingStore) -> Iterator[Planned]:
        made = {mapped.queue(key) for key in store.distinct_values("issue", "queue", "key")}
        for survey, queue in wanted.items():
            record = store.get_record("survey", survey)
            if record is not None and queue not in made:
                yield Planned(record, None, queue)

    return plan


def queue_spec(
    client: TrackerClient,
    store: StagingStore,
    config: Config,
    dictionaries: dict[str, dict[str, Any]],
) -> EntitySpec:
    """Find the back-fill's queue by key, else create it (led by the default user)."""
    queues = queue_rules(config)

    def expected(record: StagedRecord) -> Fields:
        return {"key": queues.get(record.source_id)}

    async def listing(container: str) -> list[Fields]:
        return [{"id": str(q["key"]), "key": q["key"]} async for q in client.iter_queues()]

    async def send(record: StagedRecord, parent: str | None) -> str:
        key = queues[record.source_id]
        if not config.mapping.create_missing:
            raise RecordFailure(
                f"the target has no queue {key} (a back-fill's) and [mapping] create_missing "
                "is false: create it in the target, or allow haul to"
            )
        body = {
            "key": key,
            "name": key,
            "lead": default_user(store, config),
            "defaultType": {"key": _default(dictionaries, "issuetype")},
            "defaultPriority": {"key": _default(dictionaries, "priority")},
        }
        return str((await client.create_queue(body))["key"])

    printed = Fingerprint(expected, lambda record, parent: "org", listing, ("key",))
    return EntitySpec("backfill_queue", "survey", plan_queues(config), send, printed.find,
                      order=Order(Phase.QUEUES_AND_CATEGORIES, find_first=True), fingerprint=printed)  # fmt: skip


def _default(dictionaries: dict[str, dict[str, Any]], kind: str) -> str | None:
    """The target's usual key of `kind` for a new queue, else its first one."""
    keys = sorted(dictionaries.get(kind, {}))
    return PREFERRED[kind] if PREFERRED[kind] in keys else next(iter(keys), None)
