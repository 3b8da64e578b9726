"""The staging store: one SQLite file (WAL) holding staged records, checkpoints, drain
marks, the load ledger and the run history, with attachment bytes in a folder beside it.

Used from one thread (the event loop's). Every write method commits at once, or joins
the caller's ``transaction()`` when one is open, so a page of records and the checkpoint
that follows it commit together::

    with store.transaction():
        store.upsert_records("issue", rows)
        store.set_checkpoint("issues", {"scroll_id": next_id})
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import sqlite_utils
import structlog

from haul.state.blobs import BlobStore, blob_root
from haul.state.budgets import Budgets
from haul.state.clock import Clock, utc_now
from haul.state.conflicts import Conflicts
from haul.state.errors import store_errors
from haul.state.hashing import canonical_json, parse_json, text_hash
from haul.state.ledger import Ledger
from haul.state.private import create_private_file, make_private_folder, narrow_if_present
from haul.state.problems import Problems
from haul.state.reads import PAGE_SIZE, fetch_one, iter_keyset
from haul.state.runs import RunHandle, latest_run, recent_runs, recorded_run
from haul.state.schema import check_readable, migrate
from haul.state.targets import Targets
from haul.state.transactions import atomic, joined
from haul.state.written import Written

log = structlog.get_logger(__name__)

_RECORD_COLUMNS = "entity, source_id, parent, updated_at, content_hash, blob, raw, staged_at"

# A staged record needs a drain unless a mark holds its current updated_at.
_UNDRAINED = (
    "NOT EXISTS (SELECT 1 FROM drained AS d WHERE d.entity = records.entity"
    " AND d.source_id = records.source_id AND d.updated_at IS records.updated_at)"
)
# Well under SQLite's bound on parameters per statement (32766 since 3.32).
_KEYS_PER_QUERY = 500
_JSON_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# A re-staged row keeps its known blob only if its raw JSON is unchanged: the bytes belong
# to that exact metadata. staged_at moves only when something changed.
_UPSERT_RECORD = """
INSERT INTO records (entity, source_id, parent, updated_at, content_hash, blob, raw, staged_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (entity, source_id) DO UPDATE SET
    parent = excluded.parent,
    updated_at = excluded.updated_at,
    content_hash = excluded.content_hash,
    blob = CASE
        WHEN excluded.blob IS NOT NULL THEN excluded.blob
        WHEN excluded.content_hash = records.content_hash THEN records.blob
    END,
    raw = excluded.raw,
    staged_at = excluded.staged_at
WHERE records.parent IS NOT excluded.parent
    OR records.updated_at IS NOT excluded.updated_at
    OR records.content_hash IS NOT excluded.content_hash
    OR (excluded.blob IS NOT NULL AND records.blob IS NOT excluded.blob)
"""


class StagingStore:
    """One staging database and its blob folder. Create it with `StagingStore.open`."""

    def __init__(self, path: Path, db: sqlite_utils.Database, clock: Clock) -> None:
        self.path = path
        self.db = db
        self.blobs = BlobStore(blob_root(path))
        self.ledger = Ledger(db, clock)
        self.problems = Problems(db, clock)
        self.written = Written(db, clock)  # three-way sync's bases: the engine writes them
        self.conflicts = Conflicts(db, clock)  # what a sync left open, what a person decided
        self.targets = Targets(db, clock)  # the org each service loaded: writers claim it
        self.budgets = Budgets(db, clock)  # the rates each service's budgets found, kept
        self._lock_path = path.with_name(path.name + ".lock")
        self._clock = clock
        self._answers: dict[tuple[str, ...], set[str]] | None = None  # see `records_held`

    @classmethod
    def open_readonly(cls, path: str | Path, *, busy_timeout_ms: int = 10_000) -> StagingStore:
        """Open an existing store for reading only (exports, `haul status`): nothing is
        created, migrated or written. NotAStoreError for a file haul never wrote,
        SchemaTooNewError for a newer one.

        A store in WAL mode is read beside its `-shm` file, which SQLite creates if it is
        missing: in a folder this process may not write (a read-only copy), it cannot. When
        no `-wal` file is there either, every commit is in the main file, so it is read as
        an immutable file instead (no `-shm` needed); with a `-wal` file, the error stands.
        """
        path = Path(path)
        with store_errors(path):
            try:
                return cls(path, _read_only_db(path, busy_timeout_ms), utc_now)
            except sqlite3.OperationalError:
                if path.with_name(path.name + "-wal").exists():
                    raise
                immutable = _read_only_db(path, busy_timeout_ms, immutable=True)
                return cls(path, immutable, utc_now)

    @classmethod
    def open(
        cls, path: str | Path, *, clock: Clock = utc_now, busy_timeout_ms: int = 10_000
    ) -> StagingStore:
        """Open (creating folders and file as needed) the store at `path`, in WAL mode,
        migrated to the current schema."""
        path = Path(path)
        with store_errors(path):
            _make_private(path)
            db = sqlite_utils.Database(path, execute_plugins=False)
            try:
                db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
                db.enable_wal()
                # WAL + NORMAL survives a killed process (not a power cut); commits stay cheap.
                db.execute("PRAGMA synchronous = NORMAL")
                migrate(db, path=path)
            except BaseException:
                db.close()
                raise
        return cls(path, db, clock)

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read as of one instant: every query inside sees the store as it was when the first
        one ran, whatever a concurrent extract commits meanwhile (WAL keeps that view)."""
        self.db.execute("BEGIN DEFERRED")
        try:
            yield
        finally:
            self.db.execute("ROLLBACK")  # nothing was written: ending the read is all

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic unit: everything written inside commits together or not at all.

        Nesting is safe: an inner block is a savepoint, undone alone if it raises.
        """
        with atomic(self.db):
            yield

    @contextmanager
    def records_held(self) -> Iterator[None]:
        """Inside, `distinct_values` asked again answers from its first answer: planning asks
        the same of every staged issue a dozen times (the statuses, the queues each dictionary's
        plan and each queue configuration's look up), and each asking had SQLite parse every
        issue's JSON. A record written, replaced or deleted inside forgets every answer."""
        self._answers = {}
        try:
            yield
        finally:
            self._answers = None

    def _records_changed(self) -> None:
        if self._answers:
            self._answers.clear()

    # -- staged records -------------------------------------------------------------

    def upsert_records(self, entity: str, rows: Iterable[dict[str, Any]]) -> int:
        """Stage rows of `entity`, inserting or replacing by (entity, source_id); return how
        many rows were given. Repeating an upsert is harmless.

        Each row: {"source_id": str, "raw": dict, and optionally "parent": str | None,
        "updated_at": str | None, "blob": str | None (sha256 of the attachment bytes)}.
        The raw JSON is kept whole; content_hash is the sha256 of its canonical JSON.
        A row given without a blob keeps the stored one if its raw JSON did not change.
        """
        now = self._clock()
        given = 0

        def values() -> Iterator[tuple[Any, ...]]:
            nonlocal given
            for row in rows:
                given += 1
                yield _record_values(entity, row, now)

        self._records_changed()
        with joined(self.db):
            self.db.conn.executemany(_UPSERT_RECORD, values())
        return given

    def replace_children(self, parent: str, entity: str, rows: Iterable[dict[str, Any]]) -> int:
        """Make the records of `entity` under `parent` exactly `rows`: upsert them and
        delete the ones not given. Return how many rows were given.

        A row's "parent" may be omitted; if given it must equal `parent`.
        """
        if not parent:
            raise ValueError("replace_children needs a non-empty parent")
        kept: set[str] = set()

        def under_parent() -> Iterator[dict[str, Any]]:
            for row in rows:
                if row.get("parent", parent) != parent:
                    raise ValueError(
                        f"{entity} {row['source_id']!r} has parent {row['parent']!r}, "
                        f"not {parent!r}"
                    )
                kept.add(str(row["source_id"]))
                yield {**row, "parent": parent}

        with joined(self.db):
            given = self.upsert_records(entity, under_parent())
            present = self.db.execute(
                "SELECT source_id FROM records WHERE entity = ? AND sort_parent = ?",
                [entity, parent],
            ).fetchall()
            vanished = [(entity, source_id) for (source_id,) in present if source_id not in kept]
            self.db.conn.executemany(
                "DELETE FROM records WHERE entity = ? AND source_id = ?", vanished
            )
        return given

    def delete_record(self, entity: str, source_id: str) -> int:
        """Unstage one record (gone from the source, or staged again under its new key);
        return 1 if it was staged, else 0. Its drained mark and ledger row stay."""
        self._records_changed()
        with joined(self.db):
            return self.db.execute(
                "DELETE FROM records WHERE entity = ? AND source_id = ?", [entity, source_id]
            ).rowcount

    def delete_under(
        self, parent: str, *, entities: Iterable[str] | None = None, keep: Iterable[str] = ()
    ) -> int:
        """Unstage the records under `parent`: those of `entities` if given, else of every
        entity but those in `keep`; return how many went."""
        where, params = ["parent = ?"], [parent]
        if entities is not None:
            # with sort_parent (equal to parent wherever parent is set) the index finds them
            names = list(entities)
            where += [f"entity IN ({', '.join('?' * len(names))})", "sort_parent = ?"]
            params += [*names, parent]
        if kept := list(keep):
            where.append(f"entity NOT IN ({', '.join('?' * len(kept))})")
            params += kept
        self._records_changed()
        with joined(self.db):
            return self.db.execute(
                f"DELETE FROM records WHERE {' AND '.join(where)}", params
            ).rowcount

    def get_record(self, entity: str, source_id: str) -> StagedRecord | None:
        """The staged record, or None."""
        found = fetch_one(
            self.db,
            f"SELECT {_RECORD_COLUMNS} FROM records WHERE entity = ? AND source_id = ?",
            [entity, source_id],
        )
        return _record_dict(found) if found else None

    def iter_records(
        self,
        entity: str,
        *,
        parent: str | None = None,
        staged_from: str | None = None,
        staged_after: str | None = None,
        page_size: int = PAGE_SIZE,
    ) -> Iterator[StagedRecord]:
        """Yield the records of `entity` (only those under `parent`, if given), in
        (parent, source_id) order, streamed `page_size` rows at a time.

        `staged_from` / `staged_after` keep only the records whose last change was staged at
        or after / strictly after that instant (an ISO-8601 string in the store's own form,
        as `staged_at` and `newest_staged_at` give it).
        """
        where, params = _record_filter(entity, parent, staged_from, staged_after)
        rows = iter_keyset(
            self.db,
            f"SELECT {_RECORD_COLUMNS}, sort_parent FROM records",
            where=where,
            params=params,
            keys=("sort_parent", "source_id"),
            page_size=page_size,
        )
        for row in rows:
            yield _record_dict(row)

    def iter_lists(self, entity: str, field: str) -> Iterator[tuple[str | None, str, list[Any]]]:
        """(parent, source_id, the list) of each `entity` record whose raw holds a non-empty
        list under the top-level key `field`, in (parent, source_id) order.

        SQLite's JSON functions pick these out, so the other records are never read into
        Python: a plan that needs one list of many large records (a comment's attachments)
        decodes only those lists.
        """
        if not _JSON_KEY.fullmatch(field):
            raise ValueError(f"not a plain JSON key: {field!r}")
        path = f"'$.{field}'"
        rows = iter_keyset(
            self.db,
            f"SELECT sort_parent, source_id, parent, json_extract(raw, {path}) AS listed "
            "FROM records",
            where=["entity = ?", f"json_array_length(raw, {path}) > 0"],
            params=[entity],
            keys=("sort_parent", "source_id"),
        )
        for row in rows:
            yield row["parent"], row["source_id"], parse_json(row["listed"])

    def count_changed(
        self,
        entity: str,
        *,
        parent: str | None = None,
        staged_from: str | None = None,
        staged_after: str | None = None,
    ) -> int:
        """How many records `iter_records` would yield with the same filters."""
        where, params = _record_filter(entity, parent, staged_from, staged_after)
        row = fetch_one(
            self.db, f"SELECT count(*) AS n FROM records WHERE {' AND '.join(where)}", params
        )
        return int(row["n"]) if row else 0

    def newest_staged_at(self) -> str | None:
        """When the most recently changed record was staged (None for an empty store)."""
        row = fetch_one(self.db, "SELECT max(staged_at) AS newest FROM records")
        return row["newest"] if row else None

    def distinct_values(self, entity: str, *path: str) -> set[str]:
        """The distinct values at `path` (plain JSON keys, e.g. "status", "id") in the raw of
        `entity`'s records, as text; records without one are passed over. SQLite's JSON
        functions read them, so the records are never decoded in Python."""
        if not path or not all(_JSON_KEY.fullmatch(step) for step in path):
            raise ValueError(f"not a path of plain JSON keys: {path!r}")
        held = (entity, *path)
        if self._answers is not None and held in self._answers:
            return set(self._answers[held])
        json_path = "$." + ".".join(path)
        rows = self.db.query(
            "SELECT DISTINCT CAST(json_extract(raw, ?) AS TEXT) AS value FROM records"
            " WHERE entity = ? AND json_extract(raw, ?) IS NOT NULL",
            [json_path, entity, json_path],
        )
        values = {row["value"] for row in rows}
        if self._answers is not None:
            self._answers[held] = set(values)
        return values

    def source_ids(self, entity: str) -> set[str]:
        """The source ids of the staged records of `entity` (their raw is not read)."""
        rows = self.db.query("SELECT source_id FROM records WHERE entity = ?", [entity])
        return {row["source_id"] for row in rows}

    def count_records(self) -> dict[str, int]:
        """entity -> number of staged records."""
        rows = self.db.query("SELECT entity, count(*) AS n FROM records GROUP BY entity")
        return {row["entity"]: row["n"] for row in rows}

    # -- checkpoints and drain marks ---------------------------------------------------

    def set_checkpoint(self, name: str, value: dict[str, Any]) -> None:
        """Save the named checkpoint (a JSON-able dict), replacing any earlier value."""
        with joined(self.db):
            self.db.execute(
                "INSERT INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET"
                " value = excluded.value, updated_at = excluded.updated_at",
                [name, canonical_json(value), self._clock()],
            )

    def get_checkpoint(self, name: str) -> dict[str, Any] | None:
        """The named checkpoint's value, or None if it was never set."""
        row = fetch_one(self.db, "SELECT value FROM checkpoints WHERE name = ?", [name])
        return parse_json(row["value"]) if row else None

    def mark_drained(self, issue_key: str, updated_at: str, *, entity: str = "issue") -> None:
        """Record that the sub-records (comments, worklogs, ...) of this staged record are
        staged as of its `updated_at`."""
        with joined(self.db):
            self.db.execute(
                "INSERT INTO drained (entity, source_id, updated_at, drained_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (entity, source_id) DO UPDATE SET"
                " updated_at = excluded.updated_at, drained_at = excluded.drained_at",
                [entity, issue_key, updated_at, self._clock()],
            )

    def forget_drained(self, entity: str = "issue", *, source_id: str | None = None) -> int:
        """Drop the drained marks of `entity` (only that record's, given `source_id`), so the
        next extract drains those records again; return how many there were."""
        where, params = "entity = ?", [entity]
        if source_id is not None:
            where, params = f"{where} AND source_id = ?", [entity, source_id]
        with joined(self.db):
            return self.db.execute(f"DELETE FROM drained WHERE {where}", params).rowcount

    def needs_drain(
        self, entity: str = "issue", *, keys: Iterable[str] | None = None
    ) -> Iterator[str]:
        """Yield, in source_id order, the staged records of `entity` whose updated_at
        differs from their drained mark, or that have none.

        Without `keys`, every staged record is checked, a page at a time, so the caller may
        drain and mark each one while iterating. With `keys`, only those source ids are
        checked (unknown ones are skipped), one primary-key lookup per chunk of keys: the
        cost follows the keys given, not the size of the store.
        """
        if keys is not None:
            yield from self._needing_drain_among(entity, keys)
            return
        rows = iter_keyset(
            self.db,
            "SELECT source_id FROM records",
            where=["entity = ?", _UNDRAINED],
            params=[entity],
            keys=("source_id",),
        )
        for row in rows:
            yield row["source_id"]

    def drained_version(self, issue_key: str, *, entity: str = "issue") -> str | None:
        """The updated_at this record's sub-records were drained as of, or None if never."""
        row = fetch_one(
            self.db,
            "SELECT updated_at FROM drained WHERE entity = ? AND source_id = ?",
            [entity, issue_key],
        )
        return row["updated_at"] if row else None

    def _needing_drain_among(self, entity: str, keys: Iterable[str]) -> Iterator[str]:
        wanted = sorted(set(keys))
        for start in range(0, len(wanted), _KEYS_PER_QUERY):
            chunk = wanted[start : start + _KEYS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            rows = self.db.query(
                f"SELECT source_id FROM records WHERE entity = ? AND source_id IN ({marks})"
                f" AND {_UNDRAINED} ORDER BY source_id",
                [entity, *chunk],
            )
            # Read the chunk to the end before yielding: see state.reads on open statements.
            yield from [row["source_id"] for row in rows]

    # -- runs -----------------------------------------------------------------------------

    @contextmanager
    def run(self, command: str) -> Iterator[RunHandle]:
        """Hold the store's run lock and record this run; see state.runs.recorded_run.

        Raises RunLockedError if another run (in any process, this one included) holds it.
        A killed run's unfinished blob files (a download cut by SIGKILL) are deleted first:
        with the lock held, no writer can own them.
        """
        with recorded_run(self.db, self._lock_path, command, self._clock) as handle:
            if removed := self.blobs.remove_leftovers():
                log.info("blob_leftovers_removed", files=removed)
            yield handle

    def recent_runs(self, limit: int = 10) -> list[dict[str, Any]]:
        """The latest runs, newest first, as dicts (counts and took_over_from parsed)."""
        return recent_runs(self.db, limit)

    def latest_run(self, *commands: str) -> dict[str, Any] | None:
        """The newest run of any of `commands` (e.g. "extract", "run"), or None."""
        return latest_run(self.db, commands)


def _make_private(path: Path) -> None:
    """The database private to the user before SQLite opens it (its WAL and shared memory
    take the database's mode); files an older haul made wider are narrowed."""
    make_private_folder(path.parent)
    create_private_file(path)
    for suffix in ("-wal", "-shm"):
        narrow_if_present(path.with_name(path.name + suffix))


def _record_filter(
    entity: str, parent: str | None, staged_from: str | None, staged_after: str | None
) -> tuple[list[str], list[Any]]:
    where, params = ["entity = ?"], [entity]
    for clause, value in (
        ("sort_parent = ?", parent),
        ("staged_at >= ?", staged_from),
        ("staged_at > ?", staged_after),
    ):
        if value is not None:
            where.append(clause)
            params.append(value)
    return where, params


def _record_values(entity: str, row: dict[str, Any], now: str) -> tuple[Any, ...]:
    text = canonical_json(row["raw"])  # serialised once: the hash is of this text
    return (
        entity,
        row["source_id"],
        row.get("parent"),
        row.get("updated_at"),
        text_hash(text),
        row.get("blob"),
        text,
        now,
    )


@dataclass(frozen=True)
class StagedRecord:
    """One staged record: its identity, its parent's id, and the source's JSON kept whole.

    `blob` is the sha256 of an attachment's bytes in the blob store; `staged_at` moves only
    when the record changed.
    """

    entity: str
    source_id: str
    parent: str | None
    updated_at: str | None
    content_hash: str
    blob: str | None
    raw: dict[str, Any]
    staged_at: str


def _record_dict(row: dict[str, Any]) -> StagedRecord:
    """The typed record of a records row, raw parsed."""
    return StagedRecord(
        entity=row["entity"],
        source_id=row["source_id"],
        parent=row["parent"],
        updated_at=row["updated_at"],
        content_hash=row["content_hash"],
        blob=row["blob"],
        raw=parse_json(row["raw"]),
        staged_at=row["staged_at"],
    )


def _read_only_db(
    path: Path, busy_timeout_ms: int, *, immutable: bool = False
) -> sqlite_utils.Database:
    """The database at `path` opened read-only (see `StagingStore.open_readonly`), checked."""
    options = "mode=ro&immutable=1" if immutable else "mode=ro"
    db = sqlite_utils.Database(
        sqlite3.connect(f"{path.resolve().as_uri()}?{options}", uri=True), execute_plugins=False
    )
    try:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        check_readable(db, path)
    except BaseException:
        db.close()
        raise
    return db
