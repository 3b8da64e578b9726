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
