"""The staging store is its user's alone: 0600 files, 0700 folders, whatever the umask."""

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from haul.state import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most hosts have (0022): a file is readable by all unless haul says not."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_its_wal_blobs_and_folders_are_private(tmp_path: Path) -> None:
    """The folders the store makes are 0700; the database, its WAL and shared memory, the
    run lock and every blob are 0600."""
    path = tmp_path / "made" / "by" / "haul" / "haul.db"
    with StagingStore.open(path) as store, store.run("extract"):
        store.upsert_records("issue", [{"source_id": "A-1", "raw": {"summary": "restricted"}}])
        with store.blobs.writer() as writer:
            writer.write(b"restricted bytes")
        beside = sorted(path.parent.iterdir())
        modes = {p.name: mode(p) for p in beside}
        blob = store.blobs.path(writer.sha256)
        blob_folders = [blob.parent, blob.parent.parent, store.blobs.root]

    assert [mode(folder) for folder in (tmp_path / "made", *path.parents[:3])] == [0o700] * 4
    assert modes == {
        "haul.db": 0o600,
        "haul.db-shm": 0o600,
        "haul.db-wal": 0o600,
        "haul.db.blobs": 0o700,
        "haul.db.lock": 0o600,
    }
    assert mode(blob) == 0o600 and [mode(folder) for folder in blob_folders] == [0o700] * 3


def test_files_an_older_haul_made_readable_are_narrowed_on_open(tmp_path: Path) -> None:
    """A store, WAL and shared memory left 0644 are 0600 once the store is opened again; the
    folder the user chose for it keeps its mode."""
    path = tmp_path / "haul.db"
    StagingStore.open(path).close()
    for name in ("haul.db", "haul.db-wal", "haul.db-shm"):
        (tmp_path / name).touch()
        (tmp_path / name).chmod(0o644)
    tmp_path.chmod(0o755)

    with StagingStore.open(path):
        modes = {name: mode(tmp_path / name) for name in ("haul.db", "haul.db-wal", "haul.db-shm")}

    assert modes == {"haul.db": 0o600, "haul.db-wal": 0o600, "haul.db-shm": 0o600}
    assert mode(tmp_path) == 0o755
