"""Boards, their columns and sprints; and which boards a migration carries.

A board is found by name in the org, a column by name in its board, a sprint by name (and
dates and status) in its board; each made when missing, a board's columns in the board's order
and every sprint of its (past, active and future ones: people plan in them). The API archives
no sprint: an archived one is made unarchived, counted among what was not carried.

Which boards go: a board goes with its queue.

A board is carried when its queue (`filter.queue`) is migrated (a queue of `scope.queues`,
or one the staged issues are in), or when a staged issue is in one of its sprints; its columns
and sprints go with it (a shard manifest's first part, which stages no issue, carries the
boards of `scope.queues` so that every shard finds them). Every other staged board (a config that moves the wiki and the planning entities but
no queue stages them all) is left out whole, never sent: its queue is not made in the target,
nor the statuses its columns name, and the service would refuse them (a raw 422). Each board,
column and sprint left out is named with why (`left_out`), for `haul check`, `haul plan`, the
run's "not carried" (status, the report) and verify.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any

from haul.pipelines.config import Config
from haul.pipelines.findings import Finding
from haul.pipelines.services import LeftOut
from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, Planned, RecordFailure, Ref
from haul.pipelines.tracker.organisation.objects import OrgObjects, in_org, under_parent
from haul.pipelines.tracker.transform import STRUCTURE_REFS
from haul.state.store import StagedRecord, StagingStore

NOT_MIGRATED = "its queue is not migrated (not in scope.queues)"
BOARD_LEFT_OUT = "its board is not carried (its queue is not migrated)"


def used_ids(store: StagingStore, entity: str) -> set[str]:
    """The ids of `entity` the staged issues point to (their lists read by SQLite)."""
    fields = [field for field, named in STRUCTURE_REFS.items() if named == entity]
    return {
        str(ref["id"])
        for field in fields
        for _, _, refs in store.iter_lists("issue", field)
        for ref in refs
        if isinstance(ref, dict)
    }


def board_of(sprint: StagedRecord) -> str:
    """The board a sprint is on."""
    return str((sprint.raw.get("board") or {}).get("id"))


def queue_of(board: StagedRecord) -> str:
    """A board's queue ("" for none)."""
    return str((board.raw.get("filter") or {}).get("queue") or "")


def carried_boards(store: StagingStore, scope: Collection[str] = ()) -> set[str]:
    """The boards of the queues of `scope` (`scope.queues`) and of those the staged issues are
    in, and the boards of the staged issues' sprints."""
    sprints = used_ids(store, "sprint")
    wanted = {board_of(record) for record in store.iter_records("sprint")
              if record.source_id in sprints}  # fmt: skip
    queues = set(scope) | store.distinct_values("issue", "queue", "key")
    for record in store.iter_records("board"):
        if queue_of(record) in queues:
            wanted.add(record.source_id)
    return wanted


def left_out(store: StagingStore, scope: Collection[str] = ()) -> list[LeftOut]:
    """Every staged board the migration does not carry, then its columns and sprints."""
    carried = carried_boards(store, scope)
    queues = {
        record.source_id: f"{record.raw.get('name')!r}, queue {queue_of(record) or 'none'}"
        for record in store.iter_records("board")
        if record.source_id not in carried
    }
    found = [LeftOut("board", board, NOT_MIGRATED, named) for board, named in queues.items()]
    found += [
        LeftOut("board_column", record.source_id, BOARD_LEFT_OUT, f"board {record.parent}")
        for record in store.iter_records("board_column")
        if record.parent in queues
    ]
    found += [
        LeftOut("sprint", record.source_id, BOARD_LEFT_OUT, f"board {board_of(record)}")
        for record in store.iter_records("sprint")
        if board_of(record) in queues
    ]
    return found


SHOWN = 10  # boards named in a finding; the rest are counted


async def board_findings(
    config: Config, client: Any, store: StagingStore | None, side: str, target: Any
) -> list[Finding]:
    """`haul check` on the target: a warning naming the staged boards the scope cannot carry
    (with how many columns and sprints go with them), once boards are staged."""
    if side != "target" or store is None or not store.count_records().get("board"):
        return []
    left = left_out(store, config.scope.queues)
    if not left:
        return [Finding("ok", "every staged board goes with a migrated queue")]
    boards = [record for record in left if record.entity == "board"]
    more = len(left) - len(boards)
    named = ", ".join(f"{record.source_id} ({record.detail})" for record in boards[:SHOWN])
    named += f" and {len(boards) - SHOWN} more" if len(boards) > SHOWN else ""
    return [
        Finding(
            "warning",
            f"{len(boards)} board(s), with their {more} column(s) and sprint(s), are not carried:"
            f" the queue of each is not migrated (not in scope.queues): {named}",
            "add their queues to scope.queues to carry them; else haul plan and the run's report"
            " count them as not carried",
        )
    ]


def board_plans(scope: Collection[str]) -> dict[str, Callable[[StagingStore], Iterator[Planned]]]:
    """The plans of the boards carried (a board goes with its queue, `scope` being
    `scope.queues`), their columns in the board's order, and every sprint of theirs, each
    under its board."""

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


def _status_keys(column: dict[str, Any]) -> list[str]:
    return sorted(str(s.get("key")) for s in column.get("statuses") or [] if isinstance(s, dict))


def _sprint_fields(sprint: dict[str, Any]) -> Fields:
    return {
        "name": sprint.get("name"),
        "startDate": sprint.get("startDate"),
        "endDate": sprint.get("endDate"),
        "status": sprint.get("status") or "draft",
    }


class Boards:
    """Sends boards, their columns and sprints into one target org."""

    def __init__(self, objects: OrgObjects) -> None:
        self.objects = objects

    def specs(self) -> list[EntitySpec]:
        objects, plans = self.objects, board_plans(self.objects.queues)
        return [
            objects.spec("board", plans["board"], self._board_print(), self.send_board),
            objects.spec("board_column", plans["board_column"], self._column_print(),
                         self.send_column),
            objects.spec("sprint", plans["sprint"], self._sprint_print(), self.send_sprint),
        ]  # fmt: skip

    def _board_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            found = await self.objects.client.list_boards()
            return [{"id": str(b["id"]), "name": b.get("name")} for b in found]

        return Fingerprint(
            lambda record: {"name": record.raw.get("name")}, in_org, listing, ("name",)
        )

    async def send_board(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body: dict[str, Any] = {"name": raw["name"], "useRanking": bool(raw.get("useRanking"))}
        queue = (raw.get("filter") or {}).get("queue")
        if queue:
            body["defaultQueue"] = self.objects.transform.queues.queue(str(queue))
        return str((await self.objects.client.create_board(body))["id"])

    def _column_print(self) -> Fingerprint:
        async def listing(board: str) -> list[Fields]:
            return [
                {"id": str(c["id"]), "name": c.get("name"), "statuses": _status_keys(c)}
                for c in await self.objects.client.list_board_columns(board)
            ]

        return Fingerprint(
            lambda record: {"name": record.raw.get("name"), "statuses": _status_keys(record.raw)},
            under_parent,
            listing,
            ("name",),
        )

    async def send_column(self, record: StagedRecord, board: str | None) -> str:
        if board is None:
            raise RecordFailure(f"the board of column {record.source_id} is not loaded")
        body = {"name": record.raw["name"], "statuses": _status_keys(record.raw)}
        return str((await self.objects.client.create_board_column(board, body))["id"])

    def _sprint_print(self) -> Fingerprint:
        async def listing(board: str) -> list[Fields]:
            found = await self.objects.client.list_board_sprints(board)
            return [{"id": str(s["id"]), **_sprint_fields(s)} for s in found]

        return Fingerprint(
            lambda record: _sprint_fields(record.raw), under_parent, listing, ("name",)
        )

    async def send_sprint(self, record: StagedRecord, board: str | None) -> str:
        if board is None:
            raise RecordFailure(f"the board of sprint {record.source_id} is not loaded")
        body = {"board": board, **_sprint_fields(record.raw)}
        if record.raw.get("archived"):
            self.objects.kept["sprint archived: the API archives no sprint (made unarchived)"] += 1
        return str((await self.objects.client.create_sprint(body))["id"])


def specs(objects: OrgObjects) -> list[EntitySpec]:
    """The boards', their columns' and sprints' specs."""
    return Boards(objects).specs()
