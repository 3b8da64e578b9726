"""Reading a store for an export: read-only, as of one instant, filtered by change time."""

import sqlite3
from pathlib import Path

import pytest

from haul.state import StagingStore
from haul.state.errors import NotAStoreError, SchemaTooNewError

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


class Ticking:
    """A clock the test moves: each stage of records gets its own instant."""

    def __init__(self) -> None:
        self.now = "2024-05-01T10:00:00.000+00:00"

    def __call__(self) -> str:
        return self.now


def test_records_filtered_by_when_their_last_change_was_staged(db_path: Path) -> None:
    """staged_from keeps changes at or after an instant, staged_after strictly after; an
    unchanged record re-staged keeps its staged_at."""
    clock = Ticking()
    with StagingStore.open(db_path, clock=clock) as store:
        store.upsert_records("issue", [{"source_id": f"A-{n}", "raw": {"n": n}} for n in (1, 2)])
        clock.now = "2024-05-02T10:00:00.000+00:00"
        store.upsert_records("issue", [{"source_id": "A-1", "raw": {"n": 1}}])  # unchanged
        store.upsert_records("issue", [{"source_id": "A-2", "raw": {"n": 22}}])  # changed
        watermark = store.newest_staged_at()
    with StagingStore.open_readonly(db_path) as store:
        changed = store.iter_records("issue", staged_from="2024-05-02T00:00:00.000+00:00")
        assert [record.source_id for record in changed] == ["A-2"]
        assert list(store.iter_records("issue", staged_after=watermark)) == []
        assert store.count_changed("issue", staged_from="2024-05-01T10:00:00.000+00:00") == 2
        assert store.count_changed("issue", staged_after="2024-05-01T10:00:00.000+00:00") == 1


def test_a_snapshot_does_not_see_what_is_committed_after_it_began(db_path: Path) -> None:
    """Inside snapshot(), reads see the store as of the first one, whatever commits meanwhile."""
    with StagingStore.open(db_path) as writer:
        writer.upsert_records("issue", [{"source_id": "A-1", "raw": {}}])
        with StagingStore.open_readonly(db_path) as reader, reader.snapshot():
            assert reader.count_records() == {"issue": 1}
            writer.upsert_records("issue", [{"source_id": "A-2", "raw": {}}])
            assert reader.count_records() == {"issue": 1}
        with StagingStore.open_readonly(db_path) as reader:
            assert reader.count_records() == {"issue": 2}


def test_a_readonly_store_refuses_writes_and_makes_nothing(db_path: Path) -> None:
    """open_readonly writes nothing: no schema step, no run, a write fails."""
    with StagingStore.open(db_path) as store, store.run("extract"):
        pass
    with StagingStore.open_readonly(db_path) as store:
        assert store.latest_run("extract", "run")["outcome"] == "ok"
        assert store.latest_run("load") is None
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.upsert_records("issue", [{"source_id": "A-1", "raw": {}}])


def test_a_file_haul_did_not_write_or_a_newer_one_is_refused(tmp_path: Path) -> None:
    """A SQLite file without haul's schema is not a store; one from a newer haul is refused."""
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(NotAStoreError, match="not a haul staging store"):
        StagingStore.open_readonly(other)
    newer = tmp_path / "newer.db"
    StagingStore.open(newer).close()
    connection = sqlite3.connect(newer)
    connection.execute("PRAGMA user_version = 999")
    connection.close()
    with pytest.raises(SchemaTooNewError, match="newer haul"):
        StagingStore.open_readonly(newer)
