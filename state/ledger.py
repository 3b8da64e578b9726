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

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.reads import fetch_one, iter_keyset

STATUSES = ("pending", "in_flight", "done", "failed")
_COLUMNS = "entity, source_id, parent, status, target_id, payload_hash, error, attempts, updated_at"


class LedgerError(Exception):
    """Root of the ledger's errors."""


class LedgerRowNotFound(LedgerError):
    """The ledger has no row for this record."""


class LedgerTransitionError(LedgerError):
    """The row's current status does not allow the requested move."""


@dataclass(frozen=True)
class LedgerRow:
    """One record's load state. `error` is the last failure (kept after a retry)."""

    entity: str
    source_id: str
    parent: str | None
    status: str
    target_id: str | None
    payload_hash: str | None
    error: str | None
    attempts: int
    updated_at: str


class Ledger:
    """The ledger table of one store; see the module docstring for the moves."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    def plan(self, rows: Iterable[dict]) -> int:
        """Add records to load: absent ones as pending; a present row that is not done takes
        the new payload_hash; done rows are left alone. Return how many rows were inserted.

        Each row: {"entity", "source_id", "parent": str | None, "payload_hash": str}.
        """
        now = self._clock()
        inserted = 0
        with self._db.atomic():
            for row in rows:
                key = (row["entity"], row["source_id"])
                cursor = self._db.execute(
                    "INSERT INTO ledger (entity, source_id, parent, payload_hash, updated_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (entity, source_id) DO NOTHING",
                    [*key, row.get("parent"), row["payload_hash"], now],
                )
                if cursor.rowcount:
                    inserted += 1
                    continue
                self._db.execute(
                    "UPDATE ledger SET payload_hash = ?, updated_at = ? WHERE entity = ?"
                    " AND source_id = ? AND status != 'done' AND payload_hash IS NOT ?",
                    [row["payload_hash"], now, *key, row["payload_hash"]],
                )
        return inserted

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
            "status = 'done', target_id = ?, error = NULL",
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
        self._move(entity, source_id, "refresh", ("done",), "payload_hash = ?", [payload_hash])

    def retry_failed(self, entity: str | None = None) -> int:
        """Move failed rows (of `entity`, or all) back to pending; return how many moved."""
        where, params = _filters(status="failed", entity=entity)
        with self._db.atomic():
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
        with self._db.atomic():
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
