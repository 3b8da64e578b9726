"""Opening the store: folders, WAL, versioned migrations applied once and atomically."""

import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from haul.state import SchemaTooNewError, StagingStore
from haul.state.schema import STEPS, Step, migrate, schema_version

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

TABLES = {"records", "checkpoints", "drained", "ledger", "runs"}


def test_open_creates_folders_wal_and_full_schema(db_path: Path) -> None:
    """A fresh path gets its parent folders, WAL journal and every migration step."""
    with StagingStore.open(db_path) as store:
        assert db_path.is_file()
        assert store.path == db_path
        assert store.db.journal_mode == "wal"
        assert schema_version(store.db) == len(STEPS)
        assert set(store.db.table_names()) >= TABLES


def test_reopen_keeps_data_and_version(db_path: Path) -> None:
    """Re-opening applies nothing again and keeps what was stored."""
    with StagingStore.open(db_path) as store:
        store.upsert_records("issue", [{"source_id": "A-1", "raw": {"k": 1}}])
        store.set_checkpoint("issues", {"page": 3})
    with StagingStore.open(db_path) as store:
        assert schema_version(store.db) == len(STEPS)
        assert store.count_records() == {"issue": 1}
        assert store.get_checkpoint("issues") == {"page": 3}


def test_opening_a_current_store_takes_no_write_lock(db_path: Path) -> None:
    """`haul status` opens the store while a load writes to it: with the schema current, the
    open only reads, so it neither waits for the load's write lock nor holds one that would
    make the load's next write fail at once (a read transaction cannot wait to upgrade)."""
    with StagingStore.open(db_path):
        pass
    writer = sqlite3.connect(db_path, timeout=0)
    writer.execute("BEGIN IMMEDIATE")  # a load in the middle of a write
    try:
        with StagingStore.open(db_path, busy_timeout_ms=0) as store:
            assert schema_version(store.db) == len(STEPS)
    finally:
        writer.rollback()
        writer.close()


def test_open_finishes_a_partly_migrated_store(db_path: Path) -> None:
    """A store left at an older version is brought up to date step by step."""
    db_path.parent.mkdir(parents=True)
    db = sqlite_utils.Database(db_path)
    assert migrate(db, STEPS[:1]) == 1
    db.close()
    with StagingStore.open(db_path) as store:
        assert schema_version(store.db) == len(STEPS)
        assert set(store.db.table_names()) >= TABLES


def test_a_failing_step_leaves_neither_its_work_nor_its_version(tmp_path: Path) -> None:
    """A step and its version bump commit together: a failure mid-step undoes both."""
    db = sqlite_utils.Database(tmp_path / "m.db")
    broken = Step("broken", ("CREATE TABLE half_done (x)", "INSERT INTO missing VALUES (1)"))
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, (*STEPS[:1], broken))
    assert schema_version(db) == 1
    assert "half_done" not in db.table_names()
    db.close()


def test_a_store_from_a_newer_haul_is_refused(db_path: Path) -> None:
    """Opening a store whose schema is ahead of this code fails clearly, changing nothing."""
    db_path.parent.mkdir(parents=True)
    db = sqlite_utils.Database(db_path)
    db.execute(f"PRAGMA user_version = {len(STEPS) + 1}")
    db.close()
    with pytest.raises(SchemaTooNewError, match="newer"):
        StagingStore.open(db_path)


def test_the_waiting_step_keeps_every_ledger_row_and_index(db_path: Path) -> None:
    """A store from before `waiting` existed keeps its ledger rows, whole, and its indexes,
    and takes a waiting row afterwards."""
    db_path.parent.mkdir(parents=True)
    db = sqlite_utils.Database(db_path)
    waiting = "a ledger row may wait for a record a later run brings in"
    before = next(index for index, step in enumerate(STEPS) if step.name == waiting)
    migrate(db, STEPS[:before])
    db.execute(
        "INSERT INTO ledger (entity, source_id, parent, status, target_id, payload_hash, error,"
        " attempts, updated_at, parent_entity, sort_key, staged_hash, found) VALUES"
        " ('link', 'A-1/9', 'A-1', 'failed', NULL, 'h', 'no', 2, 't', 'issue', 's', 'h2', 1)"
    )
    db.conn.commit()
    db.close()
    with StagingStore.open(db_path) as store:
        row = store.ledger.get("link", "A-1/9")
        assert row is not None
        assert (row.status, row.error, row.attempts, row.parent_entity, row.sort_key) == (
            "failed",
            "no",
            2,
            "issue",
            "s",
        )
        assert (row.staged_hash, row.found) == ("h2", 1)
        indexes = {index.name for index in store.db["ledger"].indexes}
        assert {"ledger_by_status", "ledger_children", "ledger_by_target"} <= indexes
        store.ledger.retry_failed()
        store.ledger.wait("link", "A-1/9", "waits for issue B-1")
        assert store.ledger.counts() == {"link": {"waiting": 1}}
