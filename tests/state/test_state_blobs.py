"""Content-addressed blobs: streamed in, named by sha256, all-or-nothing."""

import hashlib
import itertools
import os
import tracemalloc
from pathlib import Path

import pytest

from haul.state import BlobStore, StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

CHUNK = 64 * 1024


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_store_keeps_blobs_beside_the_database(store: StagingStore) -> None:
    """haul.db's blobs live in haul.db.blobs/."""
    with store.blobs.writer() as writer:
        writer.write(b"bytes")
    assert store.blobs.path(writer.sha256).is_relative_to(store.path.with_name("haul.db.blobs"))


def test_blob_is_named_by_sha256_and_reads_back(tmp_path: Path) -> None:
    """The finished blob is stored under its sha256, one folder level down."""
    blobs = BlobStore(tmp_path / "blobs")
    with blobs.writer() as writer:
        writer.write(b"hello ")
        writer.write(b"world")
    digest = hashlib.sha256(b"hello world").hexdigest()
    assert (writer.sha256, writer.size) == (digest, 11)
    assert blobs.path(digest) == tmp_path / "blobs" / digest[:2] / digest
    assert blobs.exists(digest)
    with blobs.open(digest) as stored:
        assert stored.read() == b"hello world"
    assert files_under(tmp_path / "blobs") == [blobs.path(digest)]


def test_a_blob_an_earlier_store_kept_two_levels_down_is_found_there(tmp_path: Path) -> None:
    """A store written before keeps its blobs at ``ab/cd/abcd...``: each is found, checked,
    read and adopted by another store there; writing the same bytes again places them one
    level down, where they are found from then on, and a discard takes both. New blobs of a
    thousand names make at most 256 folders."""
    blobs = BlobStore(tmp_path / "blobs")
    digest = hashlib.sha256(b"kept before").hexdigest()
    earlier = tmp_path / "blobs" / digest[:2] / digest[2:4] / digest
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"kept before")
    assert blobs.exists(digest) and blobs.intact(digest) and blobs.path(digest) == earlier
    with blobs.open(digest) as stored:
        assert stored.read() == b"kept before"
    other = BlobStore(tmp_path / "other")
    assert other.adopt(blobs, digest) in ("linked", "copied")
    assert other.path(digest) == tmp_path / "other" / digest[:2] / digest
    with blobs.writer() as writer:
        writer.write(b"kept before")
    assert blobs.path(digest) == tmp_path / "blobs" / digest[:2] / digest
    blobs.discard(digest)  # both copies
    assert not blobs.exists(digest) and not earlier.exists()
    for n in range(1000):
        with blobs.writer() as writer:
            writer.write(str(n).encode())
    folders = [path for path in (tmp_path / "blobs").rglob("*") if path.is_dir()]
    assert len(folders) <= 256 + 1  # the first level, and the earlier store's one below it


def test_writer_streams_to_disk_without_holding_the_bytes(tmp_path: Path) -> None:
    """20 MB written in chunks reach the temp file as they come; memory stays flat."""
    blobs = BlobStore(tmp_path / "blobs")
    expected = hashlib.sha256()
    tracemalloc.start()
    try:
        with blobs.writer() as writer:
            for n in range(20 * 1024 * 1024 // CHUNK):
                chunk = os.urandom(CHUNK)
                expected.update(chunk)
                writer.write(chunk)
                if n == 160:
                    (temp,) = files_under(tmp_path / "blobs")
                    assert temp.stat().st_size >= 160 * CHUNK
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024
    assert writer.sha256 == expected.hexdigest()
    assert blobs.path(writer.sha256).stat().st_size == 20 * 1024 * 1024


def test_failure_removes_the_temp_file(tmp_path: Path) -> None:
    """An exception inside the writer leaves no file behind and no sha256."""
    blobs = BlobStore(tmp_path / "blobs")
    with pytest.raises(ConnectionError), blobs.writer() as writer:
        writer.write(b"partial download")
        assert len(files_under(tmp_path / "blobs")) == 1
        raise ConnectionError("connection reset mid-body")
    assert files_under(tmp_path / "blobs") == []
    with pytest.raises(ValueError, match="not finished"):
        _ = writer.sha256


def test_same_bytes_twice_make_one_file(tmp_path: Path) -> None:
    """Writing identical content again keeps a single stored copy and no temp file."""
    blobs = BlobStore(tmp_path / "blobs")
    digests = []
    for _ in range(2):
        with blobs.writer() as writer:
            writer.write(b"same")
        digests.append(writer.sha256)
    assert digests[0] == digests[1]
    assert files_under(tmp_path / "blobs") == [blobs.path(digests[0])]


def test_unknown_and_malformed_names(tmp_path: Path) -> None:
    """A missing blob does not exist; a name that is not a sha256 is refused."""
    blobs = BlobStore(tmp_path / "blobs")
    missing = "0" * 64
    assert not blobs.exists(missing)
    with pytest.raises(FileNotFoundError):
        blobs.open(missing)
    with pytest.raises(ValueError):
        blobs.path("../../etc/passwd")


def test_a_temp_file_left_by_a_killed_process_is_neither_reused_nor_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Temp names are this process's pid and a counter, created exclusively: a leftover of
    the same name (an earlier process that had the same pid) is stepped over, not written."""
    monkeypatch.setattr("haul.state.blobs._TEMP_NUMBERS", itertools.count())
    blobs = BlobStore(tmp_path / "blobs")
    (tmp_path / "blobs").mkdir()
    stale = tmp_path / "blobs" / f".incoming-{os.getpid()}-0.part"
    stale.write_bytes(b"half of an old download")
    with blobs.writer() as writer:
        writer.write(b"new")
    assert stale.read_bytes() == b"half of an old download"
    assert blobs.path(writer.sha256).read_bytes() == b"new"
    assert files_under(tmp_path / "blobs") == sorted([stale, blobs.path(writer.sha256)])


def test_intact_rehashes_the_stored_bytes(tmp_path: Path) -> None:
    """A blob is intact while its bytes hash to its name: not when cut short or changed (what
    a power cut can leave, since blob files are not fsynced), nor when missing; discard
    deletes it."""
    blobs = BlobStore(tmp_path / "blobs")
    with blobs.writer() as writer:
        writer.write(b"the whole attachment")
    digest = writer.sha256
    assert blobs.intact(digest)
    blobs.path(digest).write_bytes(b"the whole")
    assert blobs.exists(digest) and not blobs.intact(digest)
    blobs.path(digest).write_bytes(b"")
    assert not blobs.intact(digest)
    blobs.discard(digest)
    assert not blobs.exists(digest) and not blobs.intact(digest)
    blobs.discard(digest)  # gone already: nothing to do
