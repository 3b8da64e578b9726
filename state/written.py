"""What the load wrote of each record: the base of a three-way sync, and what a sync overwrote.

The base is the record's fields as haul last wrote them to the target (in whatever comparable
form the service keeps them). Only the load engine keeps a base, in the same transaction as the
ledger move it belongs to (a record done, a change carried), so a base never runs ahead of or
behind the ledger. A later run compares the source, the base and the target field by field:
changed only at the source is carried, only in the target is kept, on both sides is a conflict.

``overwritten`` keeps each target value a sync replaced when the config lets the source win a
conflict; it is written before the write that replaces it (an upsert: a rerun records it once).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.reads import fetch_one, iter_keyset
from haul.state.transactions import joined


@dataclass(frozen=True)
class Overwritten:
    """One target value a sync replaced with the source's."""

    entity: str
    source_id: str
    field: str
    source: Any
    target: Any
    overwritten_at: str


class Written:
    """The written and overwritten tables of one store."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    def keep(self, entity: str, source_id: str, fields: Mapping[str, Any]) -> None:
        """Keep `fields` as what the target holds of the record, as haul wrote it."""
        with joined(self._db):
            self._db.execute(
                "INSERT INTO written (entity, source_id, fields) VALUES (?, ?, ?)"
                " ON CONFLICT (entity, source_id) DO UPDATE SET fields = excluded.fields",
                [entity, source_id, _dumps(dict(fields))],
            )

    def base(self, entity: str, source_id: str) -> dict[str, Any] | None:
        """The record's fields as haul last wrote them, None when it kept none (a store
        older than three-way sync, or a record not written yet)."""
        row = fetch_one(
            self._db,
            "SELECT fields FROM written WHERE entity = ? AND source_id = ?",
            [entity, source_id],
        )
        return None if row is None else dict(json.loads(row["fields"]))

    def overwrote(self, entity: str, source_id: str, field: str, source: Any, target: Any) -> None:
        """Record that the target's `target` value of `field` is being replaced by `source`."""
        with joined(self._db):
            self._db.execute(
                "INSERT INTO overwritten (entity, source_id, field, source, target,"
                " overwritten_at) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (entity, source_id, field, source) DO NOTHING",
                [entity, source_id, field, _dumps(source), _dumps(target), self._clock()],
            )

    def iter_overwritten(self) -> Iterator[Overwritten]:
        """Every value a sync overwrote, by record."""
        rows = iter_keyset(
            self._db,
            "SELECT * FROM overwritten",
            keys=("entity", "source_id", "field", "source"),
        )
        for row in rows:
            yield Overwritten(
                row["entity"],
                row["source_id"],
                row["field"],
                json.loads(row["source"]),
                json.loads(row["target"]),
                row["overwritten_at"],
            )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
