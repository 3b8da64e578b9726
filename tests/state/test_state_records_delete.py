"""Unstaging records: one by its key (delete_record), or those under a parent (delete_under)."""

import pytest

from haul.state import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def stage(store: StagingStore, entity: str, source_id: str, parent: str | None = None) -> None:
    store.upsert_records(entity, [{"source_id": source_id, "parent": parent, "raw": {}}])


def staged(store: StagingStore) -> set[tuple[str, str]]:
    return {
        (entity, record.source_id)
        for entity in store.count_records()
        for record in store.iter_records(entity)
    }


def test_delete_record_unstages_one_record(store: StagingStore) -> None:
    """Only that (entity, source_id) goes; a namesake of another entity stays; 0 when absent."""
    stage(store, "issue", "A-1")
    stage(store, "deleted", "A-1")
    assert store.delete_record("issue", "A-1") == 1
    assert staged(store) == {("deleted", "A-1")}
    assert store.delete_record("issue", "A-1") == 0


def test_delete_record_keeps_the_drained_mark(store: StagingStore) -> None:
    """The drained mark is the caller's to forget: unstaging leaves it."""
    stage(store, "issue", "A-1")
    store.mark_drained("A-1", "t1")
    store.delete_record("issue", "A-1")
    assert store.drained_version("A-1") == "t1"


def test_delete_under_unstages_every_record_under_the_parent(store: StagingStore) -> None:
    """Without entities, every record whose parent is the one given goes, not its own record
    and not the records of a parent that only starts the same way."""
    stage(store, "issue", "A-1")
    stage(store, "comment", "A-1/1", parent="A-1")
    stage(store, "worklog", "A-1/2", parent="A-1")
    stage(store, "comment", "A-11/3", parent="A-11")
    assert store.delete_under("A-1") == 2
    assert staged(store) == {("issue", "A-1"), ("comment", "A-11/3")}


def test_delete_under_keeps_to_the_entities_given(store: StagingStore) -> None:
    """With entities, only theirs go; with keep, all but theirs go."""
    stage(store, "file", "1", parent="docs")
    stage(store, "grid", "2", parent="docs")
    stage(store, "deleted", "file:9", parent="docs")
    assert store.delete_under("docs", entities=["file", "absent"]) == 1
    assert staged(store) == {("grid", "2"), ("deleted", "file:9")}
    assert store.delete_under("docs", keep=["deleted"]) == 1
    assert staged(store) == {("deleted", "file:9")}


def test_unstaging_inside_a_failed_transaction_is_undone(store: StagingStore) -> None:
    """Both join the caller's transaction: an error there undoes them with the rest."""
    stage(store, "issue", "A-1")
    stage(store, "comment", "A-1/1", parent="A-1")
    with pytest.raises(RuntimeError), store.transaction():
        store.delete_record("issue", "A-1")
        store.delete_under("A-1")
        raise RuntimeError("crash")
    assert staged(store) == {("issue", "A-1"), ("comment", "A-1/1")}
