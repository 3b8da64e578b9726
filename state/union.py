"""The union of staging stores: a sharded migration's last part gathers every part's store.

Each part of a manifest stages and loads its own share into its own store; the last part
copies them all into its store, so that the load engine sees every record and every ledger
row at once (a link staged in one shard finds its other end, loaded by another, in the
union's ledger) and verify and the report read one store. Attachment bytes join the union's
blob folder too (`gather_blobs`: hard links where the filesystem allows, else copies), so an
export, a retried load or `haul check` of the union finds every file its records name.

A part run again may have dropped records it held (deleted at the source; with `[sync]
deletions = "mirror"` deleted in the target too, and its ledger row forgotten): the union drops
them as well, else verify over the union looks for what the part deleted on purpose. What each
part held when it was last gathered is kept beside the union (`<store>.gathered`, its keys
only), so only what came from that part is dropped, never a row the union made itself, nor
one another part still held when it was gathered.

A row the union already holds is replaced by a part's, except a part's `waiting` row: that
one waits for the union itself, which may have made it (or be making it) since. Waiting rows
were planned by a part that saw only its share: `plan_waiting_again` has the union plan them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from haul.state.blobs import BlobStore, blob_root
from haul.state.private import create_private_file
from haul.state.store import StagingStore

# table -> its columns, copied whole (the ledger apart: see `_LEDGER`)
_TABLES = {
    "records": "entity, source_id, parent, updated_at, content_hash, blob, raw, staged_at",
    "drained": "entity, source_id, updated_at, drained_at",
    "problems": "entity, source_id, parent, error, first_seen, last_seen",
    "written": "entity, source_id, fields",
}
_LEDGER = (
    "entity, source_id, parent, status, target_id, payload_hash, error, attempts, updated_at,"
    " parent_entity, sort_key, staged_hash, found, undo, recovery_token"
)


# the tables whose rows a part run again may drop, keyed (entity, source_id) in both
_DROPPABLE = ("records", "ledger")


def gather(
    union: StagingStore, part: Path, mark: str, value: dict[str, Any], *, name: str
) -> dict[str, int]:
    """Copy the store at `part` (the part `name`) into `union`, and set the checkpoint `mark`
    to `value`, in one transaction (a gather killed half way left nothing); the rows copied
    per table, and per table the rows dropped ("records_dropped"): those the part held when
    it was last gathered and holds no longer."""
    copied: dict[str, int] = {}
    db = union.db
    held = union.path.with_name(union.path.name + ".gathered")
    create_private_file(held)
    db.conn.execute("ATTACH DATABASE ? AS part", [str(part)])
    db.conn.execute("ATTACH DATABASE ? AS held", [str(held)])
    try:
        db.conn.execute(
            "CREATE TABLE IF NOT EXISTS held.keys (part TEXT NOT NULL, tbl TEXT NOT NULL,"
            " entity TEXT NOT NULL, source_id TEXT NOT NULL,"
            " PRIMARY KEY (part, tbl, entity, source_id)) WITHOUT ROWID"
        )
        with union.transaction():
            union.set_checkpoint(mark, value)
            for table in _DROPPABLE:
                copied[f"{table}_dropped"] = _drop_dropped(db.conn, table, name)
            for table, columns in _TABLES.items():
                copied[table] = db.conn.execute(
                    f"INSERT OR REPLACE INTO main.{table} ({columns}) "
                    f"SELECT {columns} FROM part.{table}"
                ).rowcount
            copied["ledger"] = db.conn.execute(
                f"INSERT INTO main.ledger ({_LEDGER}) SELECT {_LEDGER} FROM part.ledger WHERE true "
                "ON CONFLICT (entity, source_id) DO UPDATE SET "
                + ", ".join(f"{c.strip()} = excluded.{c.strip()}" for c in _LEDGER.split(","))
                + " WHERE excluded.status != 'waiting'"
            ).rowcount
            for table in _DROPPABLE:
                _remember_held(db.conn, table, name)
    finally:
        db.conn.execute("DETACH DATABASE part")
        db.conn.execute("DETACH DATABASE held")
    return copied


def _drop_dropped(conn: Any, table: str, name: str) -> int:
    """Delete from the union's `table` the rows part `name` held when last gathered, holds no
    longer, and no other part held when it was gathered; how many."""
    return int(
        conn.execute(
            f"DELETE FROM main.{table} WHERE (entity, source_id) IN ("
            "SELECT h.entity, h.source_id FROM held.keys AS h WHERE h.part = ? AND h.tbl = ?"
            f" AND NOT EXISTS (SELECT 1 FROM part.{table} AS now"
            "  WHERE now.entity = h.entity AND now.source_id = h.source_id)"
            " AND NOT EXISTS (SELECT 1 FROM held.keys AS other WHERE other.tbl = h.tbl"
            "  AND other.entity = h.entity AND other.source_id = h.source_id"
            "  AND other.part != h.part))",
            [name, table],
        ).rowcount
    )


def _remember_held(conn: Any, table: str, name: str) -> None:
    """Keep the keys of part `name`'s `table` as gathered now (for its next gather)."""
    conn.execute("DELETE FROM held.keys WHERE part = ? AND tbl = ?", [name, table])
    conn.execute(
        "INSERT INTO held.keys (part, tbl, entity, source_id)"
        f" SELECT ?, ?, entity, source_id FROM part.{table}",
        [name, table],
    )


def gather_blobs(union: StagingStore, part: Path) -> dict[str, int]:
    """Make every blob the store at `part` names one of `union`'s; how many per outcome
    ("held", "linked", "copied", "missing": see `BlobStore.adopt`). Run before `gather`: its
    checkpoint then says the files are there too (a gather killed between the two links
    them again, finding those it already made)."""
    outcomes: dict[str, int] = {}
    part_blobs = BlobStore(blob_root(part))
    for sha256 in _named_blobs(part):
        how = union.blobs.adopt(part_blobs, sha256)
        outcomes[how] = outcomes.get(how, 0) + 1
    return outcomes


def _named_blobs(part: Path) -> list[str]:
    """The sha256 of every blob a record of the store at `part` names."""
    with StagingStore.open_readonly(part) as store:
        rows = store.db.execute("SELECT DISTINCT blob FROM records WHERE blob IS NOT NULL")
        return sorted(row[0] for row in rows.fetchall())


def plan_waiting_again(union: StagingStore, planned_mark: str) -> int:
    """Forget every waiting row of `union` and the checkpoint (`planned_mark`) that says the
    ledger is planned, in one transaction, so the next load plans them again from the whole
    union; the rows forgotten. A waiting row was never sent: forgetting it loses nothing."""
    with union.transaction():
        forgotten = union.db.execute("DELETE FROM ledger WHERE status = 'waiting'").rowcount
        union.db.execute("DELETE FROM checkpoints WHERE name = ?", [planned_mark])
    return int(forgotten)


class PartsHolding:
    """Which parts staged a record of the union, as each was last gathered: `apart(record,
    others)` says whether some of `others` came from no part that staged `record` (a text of
    one shard showing a file of another). Read from `<store>.gathered`, one entity at a time."""

    def __init__(self, union: StagingStore) -> None:
        self._held = union.path.with_name(union.path.name + ".gathered")
        self._by_entity: dict[str, dict[str, set[str]]] = {}

    def parts(self, entity: str, source_id: str) -> set[str]:
        """The parts that staged the record (none: the union made or staged it itself)."""
        if entity not in self._by_entity:
            self._by_entity[entity] = self._read(entity)
        return self._by_entity[entity].get(source_id, set())

    def apart(self, record: tuple[str, str], others: Sequence[tuple[str, str]]) -> bool:
        own = self.parts(*record)
        return any(not (self.parts(*other) & own) for other in others)

    def _read(self, entity: str) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        if not self._held.exists():
            return found
        with closing(sqlite3.connect(f"file:{self._held}?mode=ro", uri=True)) as held:
            rows = held.execute(
                "SELECT source_id, part FROM keys WHERE tbl = 'records' AND entity = ?", [entity]
            )
            for source_id, part in rows:
                found.setdefault(source_id, set()).add(part)
        return found
