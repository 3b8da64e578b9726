"""Extract problems: records an extract could not stage whole, kept until a later one does.

A download that stays short of its listed size, a record that arrives without its identity:
the extract records the problem here (one row per record, the last error kept) and goes on;
`haul failures` lists them, the run ends with exit status 3, and the next extract tries the
record again and clears its row once it is staged whole. The load keeps one kind here too,
under `<entity>:change`: a loaded record whose change at the source could not be carried to
the target (`pipelines.engine`); the next load tries again and clears it.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.reads import iter_keyset
from haul.state.transactions import joined


@dataclass(frozen=True)
class Problem:
    """One record the extract could not stage whole, and why (the latest error)."""

    entity: str
    source_id: str
    parent: str | None
    error: str
    first_seen: str
    last_seen: str


class Problems:
    """The problems table of one store."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    def record(self, entity: str, source_id: str, error: str, parent: str | None = None) -> None:
        """Keep (or update) the problem of this record."""
        now = self._clock()
        with joined(self._db):
            self._db.execute(
                "INSERT INTO problems (entity, source_id, parent, error, first_seen, last_seen)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (entity, source_id) DO UPDATE SET"
                " parent = excluded.parent, error = excluded.error, last_seen = excluded.last_seen",
                [entity, source_id, parent, error, now, now],
            )

    def clear(self, entity: str, source_id: str) -> None:
        """The record is staged whole now: forget its problem."""
        with joined(self._db):
            self._db.execute(
                "DELETE FROM problems WHERE entity = ? AND source_id = ?", [entity, source_id]
            )

    def clear_under(self, parent: str, entity: str, keep: set[str]) -> None:
        """Forget the problems of `entity` under `parent` but those of the `keep` ids."""
        with joined(self._db):
            rows = self._db.execute(
                "SELECT source_id FROM problems WHERE parent = ? AND entity = ?", [parent, entity]
            ).fetchall()
            self._db.conn.executemany(
                "DELETE FROM problems WHERE entity = ? AND source_id = ?",
                [(entity, source_id) for (source_id,) in rows if source_id not in keep],
            )

    def get(self, entity: str, source_id: str) -> Problem | None:
        """The problem of this record, if it has one."""
        rows = list(
            self._db.query(
                "SELECT * FROM problems WHERE entity = ? AND source_id = ?", [entity, source_id]
            )
        )
        return Problem(**rows[0]) if rows else None

    def __iter__(self) -> Iterator[Problem]:
        for row in iter_keyset(self._db, "SELECT * FROM problems", keys=("entity", "source_id")):
            yield Problem(**row)

    def count(self) -> int:
        """How many records have a problem."""
        return int(self._db.execute("SELECT count(*) FROM problems").fetchone()[0])
