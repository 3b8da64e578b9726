"""The load ledger: one row per record to load, so non-idempotent POSTs happen exactly once.

Statuses and the moves between them::

    pending --begin--> in_flight --done--> done
       ^                  |  |
       +-----release------+  +--fail--> failed --retry_failed--> pending

``done`` and ``fail`` also accept a pending row (a record resolved or rejected without a
POST); ``begin`` accepts any row that is not done. Every move is one committed
transaction, or joins the caller's ``StagingStore.transaction()`` when one is open.

Errors::

    LedgerError
    ├── LedgerRowNotFound      no row for (entity, source_id): plan it first
    └── LedgerTransitionError  the row's status forbids the move (a bug in the caller)
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.reads import fetch_one, iter_keyset
from haul.state.transactions import joined

STATUSES = ("pending", "in_flight", "done", "failed")
_COLUMNS = (
    "entity, source_id, parent_entity, parent, sort_key, status, target_id, payload_hash,"
    " staged_hash, error, attempts, updated_at"
)
# A planned row takes its parent, order and staged hash from the staged data every time; what
# the target holds (payload_hash) follows the staged hash only until the row is done.
_PLAN = """
INSERT INTO ledger (entity, source_id, parent_entity, parent, sort_key, payload_hash, staged_hash,
                    updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (entity, source_id) DO UPDATE SET
    parent_entity = excluded.parent_entity,
    parent = excluded.parent,
    sort_key = excluded.sort_key,
    staged_hash = excluded.staged_hash,
    payload_hash = CASE WHEN ledger.status = 'done' THEN ledger.payload_hash
                        ELSE excluded.payload_hash END,
    updated_at = excluded.updated_at
WHERE ledger.parent_entity IS NOT excluded.parent_entity
    OR ledger.parent IS NOT excluded.parent
    OR ledger.sort_key IS NOT excluded.sort_key
    OR ledger.staged_hash IS NOT excluded.staged_hash
"""


class LedgerError(Exception):
    """Root of the ledger's errors."""


class LedgerRowNotFound(LedgerError):
    """The ledger has no row for this record."""


class LedgerTransitionError(LedgerError):
    """The row's current status does not allow the requested move."""


@dataclass(frozen=True)
class LedgerRow:
    """One record's load state. `error` is the last failure (kept after a retry).

    The row loads under (`parent_entity`, `parent`), after its siblings of lower `sort_key`.
    `payload_hash` is the hash of what the target holds once done; `staged_hash` that of
    the record staged now: a done row whose two differ changed at the source since.
    """

    entity: str
    source_id: str
    parent_entity: str | None
    parent: str | None
    sort_key: str
    status: str
    target_id: str | None
    payload_hash: str | None
    staged_hash: str | None
    error: str | None
    attempts: int
    updated_at: str

    @property
    def changed(self) -> bool:
        """Done, and the staged record changed since it was loaded."""
        return self.status == "done" and self.staged_hash != self.payload_hash


class Ledger:
    """The ledger table of one store; see the module docstring for the moves."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    def plan(self, rows: Iterable[dict[str, Any]]) -> int:
        """Add records to load, or bring their plan up to date; return how many rows are new.

        Each row: {"entity", "source_id", "payload_hash", and optionally "parent_entity",
        "parent", "sort_key"}. Absent rows start pending; a present row takes the new parent,
        order and staged hash, and, unless it is done, the new payload_hash.
        """
        now = self._clock()

        def values() -> Iterator[tuple[Any, ...]]:
            for row in rows:
                yield (
                    row["entity"],
                    row["source_id"],
                    row.get("parent_entity"),
                    row.get("parent"),
                    row.get("sort_key") or "",
                    row["payload_hash"],
                    row["payload_hash"],
                    now,
                )

        with joined(self._db):
            before = self._row_count()
            self._db.conn.executemany(_PLAN, values())
            return self._row_count() - before

    def _row_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM ledger").fetchone()[0])

    def begin(self, entity: str, source_id: str) -> None:
        """Mark the row in_flight and count an attempt, before its POST is sent."""
        self._move(
            entity,
            source_id,
            "begin",
            ("pending", "in_flight", "failed"),
            "status = 'in_flight', attempts = attempts + 1",
        )

    def done(self, entity: str, source_id: str, target_id: str) -> None:
        """Record that the target holds the record, under `target_id`."""
        self._move(
            entity,
            source_id,
            "done",
            ("pending", "in_flight"),
            "status = 'done', target_id = ?, error = NULL, payload_hash = staged_hash",
            [target_id],
        )

    def fail(self, entity: str, source_id: str, error: str) -> None:
        """Record that loading this record failed for good (until retry_failed)."""
        self._move(
            entity,
            source_id,
            "fail",
            ("pending", "in_flight"),
            "status = 'failed', error = ?",
            [error],
        )

    def release(self, entity: str, source_id: str) -> None:
        """Put an in_flight row back to pending: the target said it is not there."""
        self._move(entity, source_id, "release", ("in_flight", "pending"), "status = 'pending'")

    def refreshed(self, entity: str, source_id: str, payload_hash: str) -> None:
        """A done row whose record changed at the source was brought up to date in the target."""
        self._move(
            entity,
            source_id,
            "refresh",
            ("done",),
            "payload_hash = ?, staged_hash = ?",
            [payload_hash, payload_hash],
        )

    def children(self, parent_entity: str, parent: str) -> list[LedgerRow]:
        """The rows that load under this node, in (sort_key, source_id) order."""
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM ledger WHERE parent_entity = ? AND parent = ?"
            " ORDER BY sort_key, source_id",
            [parent_entity, parent],
        )
        return [LedgerRow(**row) for row in rows]

    def parent_entities(self) -> set[str]:
        """The entities that some row loads under."""
        rows = self._db.execute("SELECT DISTINCT parent_entity FROM ledger").fetchall()
        return {entity for (entity,) in rows if entity}

    def is_claimed(self, entities: Iterable[str], target_id: str) -> bool:
        """Whether a done row of one of `entities` already holds this target id."""
        names = list(entities)
        found = fetch_one(
            self._db,
            f"SELECT 1 AS hit FROM ledger WHERE target_id = ? AND status = 'done'"
            f" AND entity IN ({', '.join('?' * len(names))})",
            [target_id, *names],
        )
        return found is not None

    def iter_changed(self, entity: str) -> Iterator[LedgerRow]:
        """Done rows of `entity` whose staged record changed since they were loaded."""
        rows = iter_keyset(
            self._db,
            f"SELECT {_COLUMNS} FROM ledger",
            where=["entity = ?", "status = 'done'", "staged_hash IS NOT payload_hash"],
            params=[entity],
            keys=("entity", "source_id"),
        )
        for row in rows:
            yield LedgerRow(**row)

    def retry_failed(self, entity: str | None = None) -> int:
        """Move failed rows (of `entity`, or all) back to pending; return how many moved."""
        where, params = _filters(status="failed", entity=entity)
        with joined(self._db):
            cursor = self._db.execute(
                f"UPDATE ledger SET status = 'pending', updated_at = ? WHERE {' AND '.join(where)}",
                [self._clock(), *params],
            )
        return cursor.rowcount

    def get(self, entity: str, source_id: str) -> LedgerRow | None:
        """The row for this record, or None if it was never planned."""
        found = fetch_one(
            self._db,
            f"SELECT {_COLUMNS} FROM ledger WHERE entity = ? AND source_id = ?",
            [entity, source_id],
        )
        return LedgerRow(**found) if found else None

    def target_id(self, entity: str, source_id: str) -> str | None:
        """The target's id for this record once it is done, else None."""
        row = self.get(entity, source_id)
        return row.target_id if row else None

    def iter_rows(
        self, *, status: str | None = None, entity: str | None = None, parent: str | None = None
    ) -> Iterator[LedgerRow]:
        """Yield the rows matching every filter given, in (entity, source_id) order.

        Streams in pages, so the caller may move rows (begin, done, ...) while iterating.
        """
        where, params = _filters(status=status, entity=entity, parent=parent)
        rows = iter_keyset(
            self._db,
            f"SELECT {_COLUMNS} FROM ledger",
            where=where,
            params=params,
            keys=("entity", "source_id"),
        )
        for row in rows:
            yield LedgerRow(**row)

    def counts(self) -> dict[str, dict[str, int]]:
        """entity -> status -> number of rows (statuses with no rows are absent)."""
        result: dict[str, dict[str, int]] = {}
        for row in self._db.query(
            "SELECT entity, status, count(*) AS n FROM ledger GROUP BY entity, status"
        ):
            result.setdefault(row["entity"], {})[row["status"]] = row["n"]
        return result

    def _move(
        self,
        entity: str,
        source_id: str,
        verb: str,
        allowed_from: tuple[str, ...],
        assignments: str,
        params: Iterable[object] = (),
    ) -> None:
        marks = ", ".join("?" * len(allowed_from))
        # one statement, committed on its own (or part of the caller's transaction): no
        # explicit BEGIN/COMMIT around it (py-spy put 8% of the load's samples in those)
        cursor = self._db.execute(
            f"UPDATE ledger SET {assignments}, updated_at = ?"
            f" WHERE entity = ? AND source_id = ? AND status IN ({marks})",
            [*params, self._clock(), entity, source_id, *allowed_from],
        )
        if cursor.rowcount == 0:
            raise self._refusal(entity, source_id, verb)

    def _refusal(self, entity: str, source_id: str, verb: str) -> LedgerError:
        row = self.get(entity, source_id)
        if row is None:
            return LedgerRowNotFound(f"no ledger row for {entity} {source_id!r}: plan it first")
        return LedgerTransitionError(f"cannot {verb} {entity} {source_id!r}: it is {row.status}")


def _filters(**equal_to: str | None) -> tuple[list[str], list[str]]:
    """WHERE clauses and parameters for the filters that were given (None means any)."""
    given = {column: value for column, value in equal_to.items() if value is not None}
    if "status" in given and given["status"] not in STATUSES:
        raise ValueError(f"unknown ledger status {given['status']!r}; one of {STATUSES}")
    return [f"{column} = ?" for column in given], list(given.values())
