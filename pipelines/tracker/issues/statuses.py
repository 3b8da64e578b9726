"""A status change at the source, carried through the target's own workflow.

The import sets an issue's status once; a later change cannot be written (an edit refuses
`status`), only walked: the target issue is moved along the shortest path of transitions its
queue's workflow allows, one execute at a time, each checked against the transitions the
previous step's reply lists. A step into a `done` status carries the source's resolution.

Each status an issue takes at the source is one staged record under it (`issue_status`, named
by its status start time, so going back to an earlier status is a new record again) and one
ledger row, planned only once the issue was loaded and changed since: the import carried the
status before. A status the target's workflow has no path to fails its record with that
reason; a status record a later one replaced before it loaded has nothing left to do
(`superseded`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Planned, RecordFailure, Ref, Settled
from haul.pipelines.sync.preview import Change
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad
from haul.pipelines.tracker.transform import Transform
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

SUPERSEDED = "superseded"
CARRIED = "carried by the import"
DONE_TYPES = ("done", "cancelled")


def status_row(key: str, issue: dict[str, Any]) -> dict[str, Any] | None:
    """The staged record of the status an issue holds now (None without one)."""
    if not isinstance(issue.get("status"), dict):
        return None
    since = issue.get("statusStartTime") or issue.get("createdAt") or ""
    return {
        "source_id": f"{key}/status@{since}",
        "parent": key,
        "updated_at": since or None,
        "raw": {
            "status": issue["status"],
            "resolution": issue.get("resolution"),
            "statusStartTime": since,
        },
    }


def plan_statuses(store: StagingStore) -> Iterator[Planned | Settled]:
    """The status of each issue loaded before and changed since (the issue's own plan runs
    first, so its row already knows). The status of a loaded issue that did not change is
    the one its import (or an earlier sync) carried: settled at once, so that only a later
    status is ever sent. A pending row whose status was replaced at the source before it
    loaded is settled as superseded (the newer row carries the status)."""
    ledger = store.ledger
    for state in ("pending", "in_flight"):
        for row in ledger.iter_rows(status=state, entity="issue_status"):
            if store.get_record("issue_status", row.source_id) is None:
                yield Settled(Ref(row.entity, row.source_id), SUPERSEDED)
    for record in store.iter_records("issue_status"):
        issue = ledger.get("issue", record.parent or "")
        if issue is None or issue.status != "done":
            continue
        if issue.changed:
            yield Planned(record, Ref("issue", record.parent or ""))
        elif ledger.get("issue_status", record.source_id) is None:
            yield carried(record)


def carried(record: StagedRecord) -> Settled:
    """The target issue holds this status already (its import set it): nothing to send."""
    planned = Planned(record, Ref("issue", record.parent or ""))
    return Settled(Ref("issue_status", record.source_id), CARRIED, planned)


def carried_by_import(store: StagingStore, issue_key: str) -> tuple[Settled, ...]:
    """The status staged with an issue just imported, in the target with it."""
    return tuple(
        carried(record)
        for record in store.iter_records("issue_status", parent=issue_key)
        if store.ledger.get("issue_status", record.source_id) is None
    )


Graph = dict[str, list[tuple[str, str]]]  # status key -> [(transition id, next status key)]


def shortest_path(graph: Graph, start: str, goal: str) -> list[tuple[str, str]] | None:
    """The fewest (transition, status) steps from `start` to `goal`; None when none leads."""
    came: dict[str, tuple[str, str, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        status = queue.popleft()
        if status == goal:
            steps = []
            while (back := came[status]) is not None:
                previous, transition, status_now = back
                steps.append((transition, status_now))
                status = previous
            return steps[::-1]
        for transition, following in graph.get(status, []):
            if following not in came:
                came[following] = (status, transition, following)
                queue.append(following)
    return None


def workflow_graph(workflows: list[dict[str, Any]], issue_type: str | None) -> Graph:
    """The transitions of the queue's workflow for `issue_type` (any, when it names none)."""
    graph: Graph = {}
    for workflow in workflows:
        types = {ref.get("key") for ref in workflow.get("issueTypes") or []}
        if issue_type and types and issue_type not in types:
            continue
        for transition in workflow.get("transitions") or []:
            following = str((transition.get("to") or {}).get("key"))
            for source in transition.get("from") or []:
                graph.setdefault(str(source.get("key")), []).append(
                    (str(transition["id"]), following)
                )
    return graph


@dataclass
class StatusSync:
    """Sends and finds `issue_status` records in one target org."""

    client: TrackerClient
    transform: Transform
    target_key: Callable[[str], str]  # a source issue key -> its target key
    done_statuses: set[str]  # target status keys of type done or cancelled
    steps: int = 0  # transitions executed
    _graphs: dict[tuple[str, str | None], Graph | None] = field(default_factory=dict)

    def wanted(self, record: StagedRecord) -> str:
        """The status key the target issue should hold."""
        return self.transform.dictionaries.key_of("status", record.raw["status"])

    async def find(
        self, record: StagedRecord, parent: str | None, unclaimed: Callable[[str], bool]
    ) -> str | None:
        """Done when the target issue holds the status already."""
        key = self.target_key(record.parent or "")
        try:
            issue = await self.client.get_issue(key)
        except NotFoundError:
            return None
        if (issue.get("status") or {}).get("key") == self.wanted(record):
            return f"{issue['key']}/status/{self.wanted(record)}"
        return None

    async def send(self, record: StagedRecord, parent: str | None) -> str:
        """Walk the target issue to the wanted status, step by step."""
        key = self.target_key(record.parent or "")
        issue = await self.client.get_issue(key)
        current, wanted = (issue.get("status") or {}).get("key"), self.wanted(record)
        key = str(issue["key"])
        if current == wanted:
            return f"{key}/status/{wanted}"
        queue = str((issue.get("queue") or {}).get("key") or key.rsplit("-", 1)[0])
        issue_type = (issue.get("type") or {}).get("key")
        path = await self._path(key, queue, issue_type, str(current), wanted)
        for transition, status in path:
            following = await self.client.execute_transition(
                key, transition, self._fields(record, status)
            )
            self.steps += 1
            ahead = path[path.index((transition, status)) + 1 :]
            if ahead and ahead[0][0] not in {str(t.get("id")) for t in following}:
                raise RecordFailure(
                    f"issue {key}: after {transition} the target no longer offers {ahead[0][0]}"
                )
        return f"{key}/status/{wanted}"

    def _fields(self, record: StagedRecord, status: str) -> dict[str, Any]:
        """What a step into a done status asks for: the source's resolution."""
        resolution = record.raw.get("resolution")
        if status not in self.done_statuses or not isinstance(resolution, dict):
            return {}
        return {"resolution": self.transform.dictionaries.key_of("resolution", resolution)}

    async def _path(
        self, key: str, queue: str, issue_type: str | None, current: str, wanted: str
    ) -> list[tuple[str, str]]:
        graph = await self._graph(queue, issue_type)
        if graph is None:  # the target does not describe its workflow: one listed step only
            listed = await self.client.list_transitions(key)
            graph = {current: [(str(t["id"]), str((t.get("to") or {}).get("key"))) for t in listed]}
        path = shortest_path(graph, current, wanted)
        if path is None:
            raise RecordFailure(
                f"the target's workflow of queue {queue} has no path from status {current}"
                f" to {wanted}: add a transition there (or move the issue by hand), then run"
                " haul load --retry-failed"
            )
        return path

    async def _graph(self, queue: str, issue_type: str | None) -> Graph | None:
        if (queue, issue_type) not in self._graphs:
            try:
                workflows = await self.client.list_queue_workflows(queue)
            except NotFoundError:
                self._graphs[(queue, issue_type)] = None
            else:
                self._graphs[(queue, issue_type)] = workflow_graph(workflows, issue_type)
        return self._graphs[(queue, issue_type)]


def done_statuses(store: StagingStore) -> set[str]:
    """The target's status keys of type done or cancelled (a step into one carries the
    resolution)."""
    return {
        str(row.raw.get("key"))
        for row in store.iter_records("target.status")
        if row.raw.get("type") in DONE_TYPES
    }


def status_spec(load: TreeLoad) -> EntitySpec:
    """Each status change carried through the target's workflow, counted as a transition."""
    statuses = StatusSync(load.client, load.transform, load.keys.key, done_statuses(load.store))

    async def send(record: StagedRecord, parent: str | None) -> str:
        steps = statuses.steps
        done = await statuses.send(record, parent)
        if statuses.steps > steps:
            load.changes[("issue", "transitioned")] += 1
        return done

    return EntitySpec("issue_status", "issue_status", plan_statuses, send, statuses.find)


class StatusPreview(KindPreview):
    """`haul plan`'s preview of a status row: a transition to its status."""

    def pending(self, row: LedgerRow, record: StagedRecord) -> Change | None:
        if row.entity != "issue_status":
            return None
        detail = f"to {(record.raw.get('status') or {}).get('key')}"
        return Change(row.entity, row.source_id, row.target_id or "", "transition", (), detail)


# a status changed at the source after the load
ISSUE_STATUS = Kind(
    Entity("issue_status", optional=True),
    plan_statuses,
    status_spec,
    preview=lambda load: StatusPreview(),
)
