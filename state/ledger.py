"""The load ledger: one row per record to load, so non-idempotent POSTs happen exactly once.

Statuses and the moves between them::

    pending --begin--> in_flight --done--> done
       ^                  |  |  |
       +-----release------+  |  +--fail--> failed --retry_failed--> pending
       |                     |
       +------wake------- waiting <--wait--+

``done`` and ``fail`` also accept a pending row (a record resolved or rejected without a
POST). A row ``waiting`` needs a record the target does not hold yet and that a later run may
bring in (a link whose other end is in a queue not migrated yet): neither loaded nor failed,
it is woken back to pending by the run that brings that record in (``wait`` also accepts a
pending row); ``begin`` accepts any row that is not done. A row ``done`` because the target already
held its record (not sent by this store: a rerun with a lost store) is marked ``found``.
Every move is one committed transaction, or joins the caller's
``StagingStore.transaction()`` when one is open.

Besides the moves, a row follows its record when it changes identity: ``rename`` and
``rename_under`` re-key the rows of a record the source renamed (and of those keyed under
it), keeping their status; ``retarget`` gives a done row the new id its record has in the
target; the ``forget`` family drops the rows of records deleted in the target on purpose.
The entities are always the caller's: the ledger names none.

A done row also records whether ``haul undo`` took its record back (``undo``), with the same
two steps as a load: ``undo_begin`` (``in_flight``: its DELETE may be sent) committed before
the request, ``undone`` (``deleted``, ``gone`` when the target answered 404, ``with_parent``
when it went with the record it lives in, and the page's recovery token if any) after. The row
stays done: what was loaded, and is missing now, is what ``haul verify`` reports.

Errors::

    LedgerError
    ├── LedgerRowNotFound      no row for (entity, source_id): plan it first
    └── LedgerTransitionError  the row's status forbids the move (a bug in the caller)
"""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.reads import fetch_one, iter_keyset
from haul.state.transactions import joined

STATUSES = ("pending", "in_flight", "done", "failed", "waiting")
# the payload hash of a done row to write again: no staged record hashes to it
_RESEND = "resend"
_COLUMNS = (
    "entity, source_id, parent_entity, parent, sort_key, status, target_id, payload_hash,"
    " staged_hash, error, attempts, updated_at, found, undo, recovery_token"
)
# a done row whose record changed at the source, and is still in the target (not undone)
_CHANGED = ["entity = ?", "status = 'done'", "staged_hash IS NOT payload_hash", "undo IS NULL"]
# what an undone row's `undo` says: how its record left the target
UNDONE = ("deleted", "gone", "with_parent")
# a plan's first rows are each looked up, the rest counted by the table's count before and
# after them: a count reads every row, and a load settles a row or two after each send
FEW_ROWS = 256
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
    the record staged now: a done row whose two differ changed at the source since. `found`:
    done because the target already held it (not made by a write of this store).
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
    found: int = 0  # done, and the target held it before this store sent it
    undo: str | None = None  # haul undo: None, "in_flight", or one of UNDONE
    recovery_token: str | None = None  # what the target answered the deletion with, if any

    @property
    def undone(self) -> bool:
        """Taken back from the target by haul undo (the row stays done)."""
        return self.undo in UNDONE

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
        new, before = 0, None

        def values() -> Iterator[tuple[Any, ...]]:
            nonlocal new, before
            for number, row in enumerate(rows):
                if number < FEW_ROWS:  # looked up as it goes in: what it follows is in
                    new += not self._holds(row["entity"], row["source_id"])
                elif number == FEW_ROWS:  # many: the rest counted as the table grows
                    before = self._row_count()
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
            self._db.conn.executemany(_PLAN, values())
            return new + (self._row_count() - before if before is not None else 0)

    def _holds(self, entity: str, source_id: str) -> bool:
        found = self._db.execute(
            "SELECT 1 FROM ledger WHERE entity = ? AND source_id = ?", [entity, source_id]
        )
        return found.fetchone() is not None

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

    def done(self, entity: str, source_id: str, target_id: str, *, found: bool = False) -> None:
        """Record that the target holds the record, under `target_id`; `found` when it held
        it before this store sent it (what loads under it may be there too)."""
        self._move(
            entity,
            source_id,
            "done",
            ("pending", "in_flight"),
            "status = 'done', target_id = ?, error = NULL, payload_hash = staged_hash, found = ?",
            [target_id, int(found)],
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

    def wait(self, entity: str, source_id: str, reason: str) -> None:
        """Record that this record waits for another one a later run brings in (`reason`
        names it): not loaded, not failed."""
        self._move(
            entity,
            source_id,
            "wait",
            ("pending", "in_flight"),
            "status = 'waiting', error = ?",
            [reason],
        )

    def wake(self, entity: str, source_id: str) -> None:
        """Put a waiting row back to pending: what it waits for may be there now."""
        self._move(entity, source_id, "wake", ("waiting",), "status = 'pending'")

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

    def resend(self, entity: str, source_id: str) -> None:
        """Mark a done row changed, so the next load brings it up to date (refreshes it): what
        it was written with is now in the target (a file it shows, loaded by a retry)."""
        self._move(entity, source_id, "resend", ("done",), f"payload_hash = '{_RESEND}'")

    def retarget(self, entity: str, source_id: str, target_id: str) -> None:
        """A done row's record lives under another id in the target now (it was moved there)."""
        self._move(entity, source_id, "retarget", ("done",), "target_id = ?", [target_id])

    def undo_begin(self, entity: str, source_id: str) -> None:
        """Mark a loaded row's record as being taken back, before its DELETE is sent (kept
        through a crash: the next undo sends it again, and a 404 then settles it)."""
        self._undo_move(entity, source_id, "begin undoing", "in_flight", None)

    def undone(
        self, entity: str, source_id: str, how: str, recovery_token: str | None = None
    ) -> None:
        """Record that the row's record left the target (`how`: one of UNDONE)."""
        if how not in UNDONE:
            raise ValueError(f"unknown undo outcome {how!r}; one of {UNDONE}")
        self._undo_move(entity, source_id, "record undone", how, recovery_token)

    def undo_called_off(self, entity: str, source_id: str) -> None:
        """The row's record stays in the target after all (a person changed it since haul
        wrote it): an undo begun on it is called off, the row loaded as before."""
        self._undo_move(entity, source_id, "call off undoing", None, None)

    def _undo_move(
        self, entity: str, source_id: str, verb: str, undo: str | None, token: str | None
    ) -> None:
        # updated_at stays: it dates the row's last load move, the order undo goes back in
        cursor = self._db.execute(
            "UPDATE ledger SET undo = ?, recovery_token = coalesce(?, recovery_token)"
            " WHERE entity = ? AND source_id = ? AND status = 'done'"
            " AND (undo IS NULL OR undo = 'in_flight')",
            [undo, token, entity, source_id],
        )
        if cursor.rowcount == 0:
            raise self._refusal(entity, source_id, verb)

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

    def any_found(self, entities: Iterable[str]) -> bool:
        """Whether a done row of one of `entities` was found in the target, not sent."""
        names = list(entities)
        if not names:
            return False
        hit = fetch_one(
            self._db,
            f"SELECT 1 AS hit FROM ledger WHERE found = 1 AND entity IN ({_marks(names)})",
            names,
        )
        return hit is not None

    def iter_changed(self, entity: str) -> Iterator[LedgerRow]:
        """Done rows of `entity` whose staged record changed since they were loaded (and
        that haul undo did not take back: no record to bring up to date)."""
        rows = iter_keyset(
            self._db,
            f"SELECT {_COLUMNS} FROM ledger",
            where=_CHANGED,
            params=[entity],
            keys=_keys(entity),
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
            keys=_keys(entity),
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

    def undo_counts(self) -> dict[str, dict[str, int]]:
        """entity -> undo outcome (one of UNDONE, or ``in_flight``) -> number of done rows
        `haul undo` took back or began to (entities with none are absent)."""
        result: dict[str, dict[str, int]] = {}
        for row in self._db.query(
            "SELECT entity, undo, count(*) AS n FROM ledger WHERE status = 'done'"
            " AND undo IS NOT NULL GROUP BY entity, undo"
        ):
            result.setdefault(row["entity"], {})[row["undo"]] = row["n"]
        return result

    # A record whose identity changed (renamed at the source, deleted in the target) takes its
    # rows along. These keep updated_at: it dates a row's last load move (report throughput).

    def rename(self, entities: Iterable[str], old: str, new: str) -> int:
        """Key the rows of `entities` keyed `old` as `new` instead (their record was renamed at
        the source: the same record, already loaded); return how many rows were renamed."""
        names = list(entities)
        with joined(self._db):
            return self._db.execute(
                f"UPDATE ledger SET source_id = ? WHERE entity IN ({_marks(names)})"
                " AND source_id = ?",
                [new, *names, old],
            ).rowcount

    def rename_under(
        self,
        entities: Iterable[str],
        old: str,
        new: str,
        *,
        direct_only: bool = False,
        parents: bool = False,
        resend: Iterable[str] = (),
    ) -> int:
        """Key the rows of `entities` keyed under `old` ("old/...") under `new` ("new/...");
        return how many rows were renamed.

        `direct_only`: only the rows one level below ("old/x", not "old/x/y"). `parents`: a
        renamed row's parent follows too, when it is `old` or keyed under it. `resend`: the
        done rows of these entities are marked changed, so the next load writes them again
        (what the target holds of them names the old key).
        """
        names, resent = list(entities), list(resend)
        under, under_params = _keyed_under(old, direct_only=direct_only)
        start = len(old) + 2  # the first character after "old/"
        sets, params = ["source_id = ? || substr(source_id, ?)"], [f"{new}/", start]
        if parents:
            sets.append(
                "parent = CASE WHEN parent = ? THEN ? WHEN substr(parent, 1, ?) = ?"
                " THEN ? || substr(parent, ?) ELSE parent END"
            )
            params += [old, new, start - 1, f"{old}/", f"{new}/", start]
        if resent:
            sets.append(
                f"payload_hash = CASE WHEN entity IN ({_marks(resent)}) AND status = 'done'"
                f" THEN '{_RESEND}' ELSE payload_hash END"
            )
            params += resent
        with joined(self._db):
            return self._db.execute(
                f"UPDATE ledger SET {', '.join(sets)}"
                f" WHERE entity IN ({_marks(names)}) AND {under}",
                [*params, *names, *under_params],
            ).rowcount

    def forget(self, entities: Iterable[str], source_id: str) -> int:
        """Drop the rows of `entities` keyed `source_id`: the target no longer holds the record
        (deleted there on purpose), and the counts hold what it holds; return how many went."""
        names = list(entities)
        return self._forget(f"entity IN ({_marks(names)}) AND source_id = ?", [*names, source_id])

    def forget_children(self, entities: Iterable[str], parent: str) -> int:
        """Drop the rows of `entities` that load under `parent` (of whatever entity), as
        `forget` does; return how many went."""
        names = list(entities)
        return self._forget(f"entity IN ({_marks(names)}) AND parent = ?", [*names, parent])

    def forget_under(self, entities: Iterable[str], key: str, *, direct_only: bool = False) -> int:
        """Drop the rows of `entities` keyed under `key` ("key/...", or only "key/x" with
        `direct_only`), as `forget` does; return how many went."""
        names = list(entities)
        under, params = _keyed_under(key, direct_only=direct_only)
        return self._forget(f"entity IN ({_marks(names)}) AND {under}", [*names, *params])

    def _forget(self, where: str, params: Sequence[object]) -> int:
        with joined(self._db):
            return self._db.execute(f"DELETE FROM ledger WHERE {where}", params).rowcount

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


def _keys(entity: str | None) -> tuple[str, ...]:
    """The keyset of a walk over the ledger: with the entity fixed, the source id alone. The
    same order, but each page then starts where the last ended: SQLite takes a row value that
    repeats a column fixed by equality, `(entity, source_id) > (?, ?)`, as no bound at all on
    `source_id`, and read every earlier row of the entity again, page after page (50 s to list
    the 450 000 comment rows of the 100 000-issue org, 0.14 s keyed by source id)."""
    return ("entity", "source_id") if entity is None else ("source_id",)


def _marks(values: list[str]) -> str:
    return ", ".join("?" * len(values))


def _keyed_under(key: str, *, direct_only: bool) -> tuple[str, list[str | int]]:
    """A WHERE clause for the source ids under `key` ("key/...", with `direct_only` one level
    down only) and its parameters. substr, not LIKE: a key may hold % or _, and LIKE ignores
    case."""
    prefix = f"{key}/"
    clause = "substr(source_id, 1, ?) = ?"
    params: list[str | int] = [len(prefix), prefix]
    if direct_only:
        clause += " AND instr(substr(source_id, ?), '/') = 0"
        params.append(len(prefix) + 1)
    return f"({clause})", params


def _filters(**equal_to: str | None) -> tuple[list[str], list[str]]:
    """WHERE clauses and parameters for the filters that were given (None means any)."""
    given = {column: value for column, value in equal_to.items() if value is not None}
    if "status" in given and given["status"] not in STATUSES:
        raise ValueError(f"unknown ledger status {given['status']!r}; one of {STATUSES}")
    return [f"{column} = ?" for column in given], list(given.values())
