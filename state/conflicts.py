"""The conflicts a three-way sync left open, and what a person decided for each.

A field changed on both sides, that the target kept (`[sync] conflicts = "keep-target"`), is
one `conflicts` row per record and field with both values; the load engine replaces a record's
rows each time its refresh leaves conflicts, and clears them once the refresh carries the
record whole, in the same transaction as the record's base (`state.written`).

`haul resolve` keeps a person's decision for one conflict in `decisions`: which side to take,
and both values it was made against. The next load's refresh applies a decision only while
both sides still hold those values; one made against values that moved since is dropped when
the refresh records the record's conflicts again (naming it), so a decision is never applied
to values nobody saw. Values are kept as JSON, compared as stored (`as_stored`)::

    record(entity, id, {field: (source, target)})   a refresh left these open
    clear(entity, id)                               the record is settled: rows and decisions go
    decide(entity, id, field, take, (source, target))
    decisions(entity, id) -> {field: Decision}      what the next refresh reads
    iter_open() -> Conflict, with its decision if any
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.reads import iter_keyset
from haul.state.transactions import joined

Take = Literal["source", "target"]
Both = tuple[Any, Any]  # (the source's value, the target's)


@dataclass(frozen=True)
class Decision:
    """Take one side of a conflict, decided while the sides held `source` and `target`."""

    take: Take
    source: Any
    target: Any

    def made_against(self, both: Both) -> bool:
        """Whether the sides still hold the values the decision was made against."""
        return (self.source, self.target) == (as_stored(both[0]), as_stored(both[1]))


@dataclass(frozen=True)
class Conflict:
    """One field changed on both sides that the target kept, and its decision, if any."""

    entity: str
    source_id: str
    field: str
    source: Any
    target: Any
    decision: Take | None = None


class Conflicts:
    """The conflicts and decisions tables of one store."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    def record(self, entity: str, source_id: str, conflicts: Mapping[str, Both]) -> None:
        """The record's open conflicts now; a decision stays only while its field is still in
        conflict with the values it was made against (an applied or stale one goes)."""
        kept = self.decisions(entity, source_id)
        with joined(self._db):
            self._forget(entity, source_id)
            now = self._clock()
            for name, (ours, theirs) in conflicts.items():
                self._db.execute(
                    "INSERT INTO conflicts (entity, source_id, field, source, target, seen_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [entity, source_id, name, _dumps(ours), _dumps(theirs), now],
                )
                decision = kept.get(name)
                if decision is not None and decision.made_against((ours, theirs)):
                    self.decide(entity, source_id, name, decision.take, (ours, theirs))

    def clear(self, entity: str, source_id: str) -> None:
        """The record holds no conflict now: forget its rows and its decisions."""
        with joined(self._db):
            self._forget(entity, source_id)

    def decide(self, entity: str, source_id: str, field: str, take: Take, against: Both) -> None:
        """Keep the decision to take `take`'s value, made while the sides held `against`."""
        with joined(self._db):
            self._db.execute(
                "INSERT INTO decisions (entity, source_id, field, take, source, target,"
                " decided_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (entity, source_id, field)"
                " DO UPDATE SET take = excluded.take, source = excluded.source,"
                " target = excluded.target, decided_at = excluded.decided_at",
                [entity, source_id, field, take, _dumps(against[0]), _dumps(against[1]),
                 self._clock()],
            )  # fmt: skip

    def decisions(self, entity: str, source_id: str) -> dict[str, Decision]:
        """The record's decisions, by field (none in a store older than `haul resolve`)."""
        if not self._kept():
            return {}
        rows = self._db.query(
            "SELECT field, take, source, target FROM decisions WHERE entity = ? AND source_id = ?",
            [entity, source_id],
        )
        return {
            row["field"]: Decision(
                row["take"], json.loads(row["source"]), json.loads(row["target"])
            )
            for row in list(rows)
        }

    def iter_open(self) -> Iterator[Conflict]:
        """Every open conflict, by record and field, with the decision made for it."""
        if not self._kept():
            return
        select = (
            "SELECT * FROM (SELECT c.entity, c.source_id, c.field, c.source, c.target, d.take"
            " FROM conflicts c LEFT JOIN decisions d USING (entity, source_id, field))"
        )
        for row in iter_keyset(self._db, select, keys=("entity", "source_id", "field")):
            yield Conflict(
                row["entity"],
                row["source_id"],
                row["field"],
                json.loads(row["source"]),
                json.loads(row["target"]),
                row["take"],
            )

    def _forget(self, entity: str, source_id: str) -> None:
        for table in ("conflicts", "decisions"):
            self._db.execute(
                f"DELETE FROM {table} WHERE entity = ? AND source_id = ?", [entity, source_id]
            )

    def _kept(self) -> bool:
        """Whether the store has the tables (a read-only store may predate them)."""
        return self._db["decisions"].exists()


def as_stored(value: Any) -> Any:
    """A value as the tables keep it and give it back (JSON's types)."""
    return json.loads(_dumps(value))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
