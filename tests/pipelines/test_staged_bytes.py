"""What the load sends of a staged file: the bytes the extract downloaded, or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from haul.pipelines.specs import RecordFailure, staged_bytes
from haul.state.store import StagedRecord, StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def stage(store: StagingStore, content: bytes | None) -> StagedRecord:
    """A wiki page, drained, with one attachment whose bytes are `content` (None: not downloaded)."""
    blob = None
    if content is not None:
        with store.blobs.writer() as writer:
            writer.write(content)
        blob = writer.sha256
    store.upsert_records("wiki_page", [{"source_id": "7", "raw": {}, "updated_at": "t1"}])
    store.mark_drained("7", "t1", entity="wiki_page")
    store.mark_drained("7", "t1", entity="issue")  # another service's record of the same id
    store.replace_children("7", "wiki_attachment", [{"source_id": "7/a", "raw": {}, "blob": blob}])
    record = store.get_record("wiki_attachment", "7/a")
    assert record is not None
    return record


@pytest.fixture(params=[1024 * 1024, 0], ids=["hashed inline", "hashed in a thread"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[StagingStore]:
    monkeypatch.setattr("haul.pipelines.downloads.HASH_INLINE_LIMIT", request.param)
    with StagingStore.open(tmp_path / "haul.db") as opened:
        yield opened


async def test_intact_bytes_are_sent(store: StagingStore) -> None:
    record = stage(store, b"the whole file")
    path = await staged_bytes(store, record, drained="wiki_page")
    assert path.read_bytes() == b"the whole file"
    assert store.drained_version("7", entity="wiki_page") == "t1"


async def test_damaged_bytes_fail_the_record_and_its_parent_drains_again(
    store: StagingStore,
) -> None:
    record = stage(store, b"the whole file")
    assert record.blob is not None
    store.blobs.path(record.blob).write_bytes(b"the whole")
    with pytest.raises(RecordFailure, match=r"damaged.*haul extract"):
        await staged_bytes(store, record, drained="wiki_page")
    assert not store.blobs.exists(record.blob)
    assert store.drained_version("7", entity="wiki_page") is None
    assert store.drained_version("7", entity="issue") == "t1"
    assert list(store.needs_drain("wiki_page")) == ["7"]


async def test_missing_bytes_fail_the_record_and_its_parent_drains_again(
    store: StagingStore,
) -> None:
    record = stage(store, None)
    with pytest.raises(RecordFailure, match=r"no staged bytes.*haul extract"):
        await staged_bytes(store, record, drained="wiki_page")
    assert store.drained_version("7", entity="wiki_page") is None
