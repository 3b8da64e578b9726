"""The union of a sharded run's stores holds the parts' attachment bytes, not only their
records: linked where the filesystem allows, else copied, all-or-nothing like a download."""

import errno
import os
from pathlib import Path

import pytest

from haul.state import StagingStore
from haul.state.union import gather, gather_blobs

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def stage_files(path: Path, files: dict[str, bytes]) -> dict[str, str]:
    """A part's store at `path` with one attachment record per file (its bytes downloaded);
    source id -> sha256."""
    named = {}
    with StagingStore.open(path) as part:
        for source_id, data in files.items():
            with part.blobs.writer() as writer:
                writer.write(data)
            part.upsert_records(
                "attachment",
                [{"source_id": source_id, "raw": {"id": source_id}, "blob": writer.sha256}],
            )
            named[source_id] = writer.sha256
    return named


def gathered(union_path: Path, part: Path) -> dict[str, int]:
    with StagingStore.open(union_path) as union:
        outcomes = gather_blobs(union, part)
        gather(union, part, f"shards.gathered.{part.parent.name}", {}, name=part.parent.name)
    return outcomes


def test_the_union_links_every_part_file_and_reads_them_back(tmp_path: Path) -> None:
    """Two parts' files become the union's: hard links (one inode, no bytes copied), whole;
    gathering again finds them held."""
    one = stage_files(tmp_path / "1" / "haul.db", {"a1": b"first file", "a2": b"second"})
    two = stage_files(tmp_path / "2" / "haul.db", {"b1": b"a third file"})
    union_path = tmp_path / "last" / "haul.db"
    assert gathered(union_path, tmp_path / "1" / "haul.db") == {"linked": 2}
    assert gathered(union_path, tmp_path / "2" / "haul.db") == {"linked": 1}
    assert gathered(union_path, tmp_path / "1" / "haul.db") == {"held": 2}
    with (
        StagingStore.open(union_path) as union,
        StagingStore.open(tmp_path / "1" / "haul.db") as part,
    ):
        for source_id, sha256 in {**one, **two}.items():
            record = union.get_record("attachment", source_id)
            assert record is not None and record.blob == sha256
            assert union.blobs.intact(sha256)
        assert union.blobs.path(one["a1"]).samefile(part.blobs.path(one["a1"]))
        assert not list(union.blobs.root.glob(".incoming-*"))


def test_files_are_copied_where_they_cannot_be_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another filesystem (EXDEV: each worker's own disk, a shared volume): a private copy."""
    named = stage_files(tmp_path / "1" / "haul.db", {"a1": b"first file"})

    def cross_device(source: object, to: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    union_path = tmp_path / "last" / "haul.db"
    assert gathered(union_path, tmp_path / "1" / "haul.db") == {"copied": 1}
    with StagingStore.open(union_path) as union:
        stored = union.blobs.path(named["a1"])
        assert union.blobs.intact(named["a1"])
        assert stored.stat().st_mode & 0o777 == 0o600
        assert stored.stat().st_nlink == 1


def test_a_file_the_part_never_downloaded_is_counted_missing(tmp_path: Path) -> None:
    """A record whose bytes its part lacks (deleted, or a power cut): counted, never invented;
    the load then fails that record, naming haul extract (`specs.staged_bytes`)."""
    part_path = tmp_path / "1" / "haul.db"
    named = stage_files(part_path, {"a1": b"first file", "a2": b"second"})
    with StagingStore.open(part_path) as part:
        part.blobs.discard(named["a2"])
    union_path = tmp_path / "last" / "haul.db"
    assert gathered(union_path, part_path) == {"linked": 1, "missing": 1}
    with StagingStore.open(union_path) as union:
        assert not union.blobs.exists(named["a2"])
