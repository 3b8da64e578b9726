"""Versioned schema migrations for the staging store.

The version lives in ``PRAGMA user_version``. Each step runs in its own ``BEGIN IMMEDIATE``
transaction that also bumps the version, so a step is either applied and recorded or not
at all, and two processes opening a fresh store at once apply it only once.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from haul.state.errors import NotAStoreError, SchemaTooNewError


@dataclass(frozen=True)
class Step:
    """One migration: a name for humans and the statements that make it."""

    name: str
    statements: tuple[str, ...]


_LEDGER_COLUMNS = (
    "entity, source_id, parent, status, target_id, payload_hash, error, attempts, updated_at,"
    " parent_entity, sort_key, staged_hash, found, undo, recovery_token"
)

STEPS: tuple[Step, ...] = (
    Step(
        "records, checkpoints and drain marks",
        (
            # sort_parent exists because SQLite row-value ranges skip NULLs: keyset paging in
            # (parent, source_id) order needs a non-NULL column to compare against.
            """CREATE TABLE records (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                parent TEXT,
                updated_at TEXT,
                content_hash TEXT NOT NULL,
                blob TEXT,
                raw TEXT NOT NULL,
                staged_at TEXT NOT NULL,
                sort_parent TEXT GENERATED ALWAYS AS (ifnull(parent, '')) VIRTUAL,
                PRIMARY KEY (entity, source_id)
            )""",
            "CREATE INDEX records_by_parent ON records (entity, sort_parent, source_id)",
            """CREATE TABLE checkpoints (
                name TEXT PRIMARY KEY,
                value TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            """CREATE TABLE drained (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                drained_at TEXT NOT NULL,
                PRIMARY KEY (entity, source_id)
            )""",
        ),
    ),
    Step(
        "load ledger",
        (
            """CREATE TABLE ledger (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                parent TEXT,
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'in_flight', 'done', 'failed')),
                target_id TEXT,
                payload_hash TEXT,
                error TEXT,
                attempts INTEGER NOT NULL DEFAULT 0,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (entity, source_id)
            )""",
            "CREATE INDEX ledger_by_status ON ledger (status, entity, source_id)",
            "CREATE INDEX ledger_by_parent ON ledger (parent, entity, source_id)",
        ),
    ),
    Step(
        "runs",
        (
            """CREATE TABLE runs (
                id INTEGER PRIMARY KEY,
                command TEXT NOT NULL,
                pid INTEGER NOT NULL,
                host TEXT NOT NULL,
                started_at TEXT NOT NULL,
                ended_at TEXT,
                outcome TEXT CHECK (outcome IN ('ok', 'failed', 'interrupted')),
                counts TEXT,
                error TEXT,
                took_over_from TEXT
            )""",
            "CREATE INDEX runs_open ON runs (ended_at)",
        ),
    ),
    Step(
        "the ledger is the load plan: typed parents, sibling order, what was staged",
        (
            # parent_entity + parent name the node a row loads under (a wiki slug may hold
            # "/", so identity is never split out of a source id); sort_key orders siblings;
            # staged_hash is the staged record's hash, payload_hash what the target holds.
            "ALTER TABLE ledger ADD COLUMN parent_entity TEXT",
            "ALTER TABLE ledger ADD COLUMN sort_key TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE ledger ADD COLUMN staged_hash TEXT",
            "UPDATE ledger SET staged_hash = payload_hash",
            "DROP INDEX ledger_by_parent",
            "CREATE INDEX ledger_children ON ledger (parent_entity, parent, sort_key, source_id)",
            "CREATE INDEX ledger_by_target ON ledger (target_id, entity)",
        ),
    ),
    Step(
        "extract problems",
        (
            # a record the extract could not stage whole (a download cut short, a record
            # without its identity): kept until a later extract stages it
            """CREATE TABLE problems (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                parent TEXT,
                error TEXT NOT NULL,
                first_seen TEXT NOT NULL,
                last_seen TEXT NOT NULL,
                PRIMARY KEY (entity, source_id)
            )""",
        ),
    ),
    Step(
        "the ledger knows a record found in the target from one it made",
        (
            # found = 1: the target held the record before this store sent it (a rerun with a
            # lost store): what loads under it is looked for before it is made
            "ALTER TABLE ledger ADD COLUMN found INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    Step(
        "the ledger says which loaded records haul undo took back",
        (
            # undo: NULL (in the target as loaded), 'in_flight' (its DELETE may have been
            # sent), 'deleted', 'gone' (the target answered 404: deleted already) or
            # 'with_parent' (it went with the record it lives in); recovery_token: what the
            # wiki answered a page's deletion with, to bring the page back
            "ALTER TABLE ledger ADD COLUMN undo TEXT",
            "ALTER TABLE ledger ADD COLUMN recovery_token TEXT",
        ),
    ),
    Step(
        "a ledger row may wait for a record a later run brings in",
        (
            # status 'waiting': a link whose other end is in a queue not migrated yet; SQLite
            # cannot change a CHECK in place, so the table is built again, rows and indexes kept
            """CREATE TABLE ledger_next (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                parent TEXT,
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'in_flight', 'done', 'failed', 'waiting')),
                target_id TEXT,
                payload_hash TEXT,
                error TEXT,
                attempts INTEGER NOT NULL DEFAULT 0,
                updated_at TEXT NOT NULL,
                parent_entity TEXT,
                sort_key TEXT NOT NULL DEFAULT '',
                staged_hash TEXT,
                found INTEGER NOT NULL DEFAULT 0,
                undo TEXT,
                recovery_token TEXT,
                PRIMARY KEY (entity, source_id)
            )""",
            f"INSERT INTO ledger_next ({_LEDGER_COLUMNS}) SELECT {_LEDGER_COLUMNS} FROM ledger",
            "DROP TABLE ledger",
            "ALTER TABLE ledger_next RENAME TO ledger",
            "CREATE INDEX ledger_by_status ON ledger (status, entity, source_id)",
            "CREATE INDEX ledger_children ON ledger (parent_entity, parent, sort_key, source_id)",
            "CREATE INDEX ledger_by_target ON ledger (target_id, entity)",
        ),
    ),
    Step(
        "what the load wrote of each record (a three-way sync's base), what a sync overwrote",
        (
            # fields: JSON of the record's fields as last written (state/written.py)
            """CREATE TABLE written (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                fields TEXT NOT NULL,
                PRIMARY KEY (entity, source_id)
            )""",
            # one row per field a sync overwrote in the target ([sync] conflicts = "source-wins")
            """CREATE TABLE overwritten (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                field TEXT NOT NULL,
                source TEXT NOT NULL,
                target TEXT NOT NULL,
                overwritten_at TEXT NOT NULL,
                PRIMARY KEY (entity, source_id, field, source)
            )""",
        ),
    ),
    Step(
        "the target each service of the store loaded",
        (
            # one row per service, recorded at the store's first write to it (state/targets.py)
            """CREATE TABLE targets (
                service TEXT PRIMARY KEY,
                url TEXT NOT NULL,
                org_key TEXT NOT NULL,
                org TEXT NOT NULL,
                recorded_at TEXT NOT NULL
            )""",
        ),
    ),
    Step(
        "the conflicts a sync left, and what a person decided for them",
        (
            # one row per field changed on both sides that the target kept (state/conflicts.py)
            """CREATE TABLE conflicts (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                field TEXT NOT NULL,
                source TEXT NOT NULL,
                target TEXT NOT NULL,
                seen_at TEXT NOT NULL,
                PRIMARY KEY (entity, source_id, field)
            )""",
            # haul resolve's decision for one conflict, with both values it was made against
            """CREATE TABLE decisions (
                entity TEXT NOT NULL,
                source_id TEXT NOT NULL,
                field TEXT NOT NULL,
                take TEXT NOT NULL CHECK (take IN ('source', 'target')),
                source TEXT NOT NULL,
                target TEXT NOT NULL,
                decided_at TEXT NOT NULL,
                PRIMARY KEY (entity, source_id, field)
            )""",
        ),
    ),
    Step(
        "the rates each service's budgets found",
        (
            # one row per service URL, org and direction, kept between runs (state/budgets.py)
            """CREATE TABLE budgets (
                url TEXT NOT NULL,
                org TEXT NOT NULL,
                direction TEXT NOT NULL,
                found TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (url, org, direction)
            )""",
        ),
    ),
)


def schema_version(db: Database) -> int:
    """Return the number of migration steps applied to `db`."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: Database, steps: Sequence[Step] = STEPS, *, path: Path = Path("?")) -> int:
    """Apply the steps `db` lacks, one transaction each; return the resulting version.

    Raises SchemaTooNewError if `db` is ahead of `steps` (opened by an older haul). A store
    already current is only read: taking the write lock to find that out would make a running
    load's next write fail at once (a reader's transaction cannot wait to upgrade), so opening
    the store for `haul status` could stop a load.
    """
    if _known(schema_version(db), steps, path) == len(steps):
        return len(steps)
    while True:
        with _immediate_transaction(db):
            version = _known(schema_version(db), steps, path)
            if version == len(steps):
                return version
            for statement in steps[version].statements:
                db.execute(statement)
            # PRAGMA does not take parameters; the value is an int we computed.
            db.execute(f"PRAGMA user_version = {version + 1}")


def _known(version: int, steps: Sequence[Step], path: Path) -> int:
    if version > len(steps):
        raise SchemaTooNewError(
            path,
            f"{path} was written by a newer haul (store schema version {version}, this "
            f"haul knows {len(steps)}): upgrade haul, or use another [staging] path",
        )
    return version


def check_readable(db: Database, path: Path, steps: Sequence[Step] = STEPS) -> int:
    """For a reader that may not migrate: the store's version, when this haul can read it.

    NotAStoreError for a database no haul wrote (version 0), SchemaTooNewError for one written
    by a newer haul. An older store reads fine: steps only ever add.
    """
    version = schema_version(db)
    if version == 0:
        raise NotAStoreError(
            path,
            f"{path} is not a haul staging store (no haul schema in it): point [staging] path "
            "at the store haul extract writes",
        )
    if version > len(steps):
        raise SchemaTooNewError(
            path,
            f"{path} was written by a newer haul (store schema version {version}, this haul "
            f"knows {len(steps)}): upgrade haul",
        )
    return version


@contextmanager
def _immediate_transaction(db: Database) -> Iterator[None]:
    # IMMEDIATE takes the write lock before reading the version, so a concurrent opener
    # waits (busy_timeout) and then sees the step already applied.
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.rollback()
        raise
    db.execute("COMMIT")
