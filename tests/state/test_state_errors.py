"""What goes wrong with the staging file is said in words a person can act on, as StoreError."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from haul.state import StagingStore
from haul.state.errors import (
    NotAStoreError,
    SchemaTooNewError,
    StoreAccessError,
    StoreFullError,
    StoreLockedError,
    store_errors,
)
from haul.state.schema import STEPS

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_file_where_the_folder_should_be(tmp_path: Path) -> None:
    """The staging path's parent is a file: the error names the file in the way."""
    (tmp_path / "work").write_text("not a folder")
    with pytest.raises(StoreAccessError, match="a file is in the way"):
        StagingStore.open(tmp_path / "work" / "haul.db")


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    """Garbage at the staging path is named as not a staging store, and left as it was."""
    path = tmp_path / "haul.db"
    path.write_text("garbage, not a database\n" * 100)
    with pytest.raises(NotAStoreError, match="not a haul staging store"):
        StagingStore.open(path)
    assert path.read_text().startswith("garbage")


def test_a_store_from_a_newer_haul(tmp_path: Path) -> None:
    """A schema version beyond ours: upgrade haul, and the file is not touched."""
    path = tmp_path / "haul.db"
    StagingStore.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {len(STEPS) + 3}")
    with pytest.raises(SchemaTooNewError, match="written by a newer haul"):
        StagingStore.open(path)


def test_a_store_locked_by_another_sqlite_client(tmp_path: Path) -> None:
    """Another program holding an exclusive lock: named, after the busy timeout."""
    path = tmp_path / "haul.db"
    StagingStore.open(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA journal_mode = DELETE")  # leave WAL so the exclusive lock blocks
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreLockedError, match="locked by another program"):
            StagingStore.open(path, busy_timeout_ms=200)
    finally:
        other.rollback()
        other.close()


def test_a_full_disk_says_nothing_was_lost(tmp_path: Path) -> None:
    """SQLITE_FULL while staging: the message says nothing committed was lost."""
    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records("issue", [{"source_id": "A-1", "raw": {"key": "A-1"}}])
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full from here
        rows = [{"source_id": f"A-{n}", "raw": {"pad": "x" * 5000}} for n in range(50)]
        with (
            pytest.raises(StoreFullError, match="nothing committed was lost"),
            store_errors(store.path),
        ):
            store.upsert_records("issue", rows)
        assert store.get_record("issue", "A-1") is not None


NOBODY = 65534
OPEN_AS_NOBODY = """
import os, sys
from haul.state import StagingStore, StoreError  # imported first: nobody cannot read /root
os.setgid({uid}); os.setuid({uid})
try:
    StagingStore.open(sys.argv[1])
except StoreError as exc:
    print(type(exc).__name__, exc)
"""


def test_a_read_only_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A folder haul may not write: permission named, with the way out. (Root ignores
    permissions, so as root the store is opened by a child running as nobody.)"""
    top = Path(tempfile.mkdtemp(prefix="haul-ro-"))
    top.chmod(0o755)
    folder = top / "ro"
    folder.mkdir(mode=0o555)
    try:
        if os.geteuid() != 0:
            with pytest.raises(StoreAccessError):
                StagingStore.open(folder / "haul.db")
            return
        script = OPEN_AS_NOBODY.format(uid=NOBODY)
        child = subprocess.run(
            [sys.executable, "-c", script, str(folder / "haul.db")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.stdout.startswith("StoreAccessError"), child.stdout + child.stderr
        assert "point [staging] path somewhere writable" in child.stdout
    finally:
        folder.chmod(0o755)
        shutil.rmtree(top)
