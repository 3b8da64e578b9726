"""Staged records, checkpoints, transactions and drain marks."""

import hashlib
import json

import pytest

from haul.state import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def issue(key: str, updated: str = "2024-01-01T00:00:00.000+0000", **raw: object) -> dict:
    return {"source_id": key, "updated_at": updated, "raw": {"key": key, **raw}}


def test_upsert_keeps_raw_whole_and_hashes_its_canonical_json(store: StagingStore) -> None:
    """raw comes back as given; content_hash ignores key order and is sha256 of compact JSON."""
    raw = {"key": "A-1", "summary": "Ünïcode ✓", "nested": {"b": [1, 2], "a": None}}
    store.upsert_records("issue", [{"source_id": "A-1", "updated_at": "t1", "raw": raw}])
    record = store.get_record("issue", "A-1")
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert record is not None
    assert (record.entity, record.source_id, record.parent, record.updated_at, record.blob) == (
        "issue",
        "A-1",
        None,
        "t1",
        None,
    )
    assert record.content_hash == hashlib.sha256(canonical.encode()).hexdigest()
    assert record.raw == raw
    reordered = dict(reversed(list(raw.items())))
    store.upsert_records("issue", [{"source_id": "A-2", "updated_at": "t1", "raw": reordered}])
    assert store.get_record("issue", "A-2").content_hash == record.content_hash


def test_repeating_an_upsert_is_harmless(store: StagingStore) -> None:
    """The same rows twice leave the same single rows behind."""
    rows = [issue("A-1"), issue("A-2")]
    assert store.upsert_records("issue", rows) == 2
    before = list(store.iter_records("issue"))
    assert store.upsert_records("issue", rows) == 2
    assert list(store.iter_records("issue")) == before
    assert store.count_records() == {"issue": 2}


def test_upsert_updates_the_hash_when_raw_changes(store: StagingStore) -> None:
    """A changed raw replaces the stored one and its content hash."""
    store.upsert_records("issue", [issue("A-1", summary="old")])
    old_hash = store.get_record("issue", "A-1").content_hash
    store.upsert_records("issue", [issue("A-1", "t2", summary="new")])
    record = store.get_record("issue", "A-1")
    assert record.raw["summary"] == "new"
    assert record.updated_at == "t2"
    assert record.content_hash != old_hash


def test_a_blob_is_kept_only_while_the_raw_is_unchanged(store: StagingStore) -> None:
    """Re-staging metadata without a blob keeps the blob if the metadata is the same."""
    sha = "ab" * 32
    row = {"source_id": "9", "parent": "A-1", "raw": {"name": "a.png", "size": 3}}
    store.upsert_records("attachment", [{**row, "blob": sha}])
    store.upsert_records("attachment", [row])
    assert store.get_record("attachment", "9").blob == sha
    store.upsert_records("attachment", [{**row, "raw": {"name": "a.png", "size": 4}}])
    assert store.get_record("attachment", "9").blob is None


def test_get_record_of_unknown_is_none(store: StagingStore) -> None:
    """An unknown (entity, source_id) is None, and entities do not share ids."""
    store.upsert_records("issue", [issue("1")])
    assert store.get_record("issue", "2") is None
    assert store.get_record("comment", "1") is None


def test_replace_children_deletes_vanished_children_only(store: StagingStore) -> None:
    """Children missing from the new set go; other parents and entities stay."""
    store.replace_children("A-1", "comment", [{"source_id": c, "raw": {"c": c}} for c in "123"])
    store.replace_children("A-2", "comment", [{"source_id": "4", "raw": {}}])
    store.replace_children("A-1", "worklog", [{"source_id": "1", "raw": {}}])

    store.replace_children("A-1", "comment", [{"source_id": "3", "raw": {"c": "edited"}}])

    assert [r.source_id for r in store.iter_records("comment", parent="A-1")] == ["3"]
    assert store.get_record("comment", "3").raw == {"c": "edited"}
    assert [r.source_id for r in store.iter_records("comment", parent="A-2")] == ["4"]
    assert store.count_records() == {"comment": 2, "worklog": 1}


def test_replace_children_with_nothing_empties_the_parent(store: StagingStore) -> None:
    """An empty set of children deletes every child of that entity under the parent."""
    store.replace_children("A-1", "comment", [{"source_id": "1", "raw": {}}])
    assert store.replace_children("A-1", "comment", []) == 0
    assert list(store.iter_records("comment", parent="A-1")) == []


def test_replace_children_refuses_a_row_of_another_parent(store: StagingStore) -> None:
    """A row that names a different parent is a caller bug: nothing is written."""
    store.replace_children("A-1", "comment", [{"source_id": "1", "raw": {}}])
    rows = [{"source_id": "2", "raw": {}}, {"source_id": "3", "parent": "B-9", "raw": {}}]
    with pytest.raises(ValueError, match="B-9"):
        store.replace_children("A-1", "comment", rows)
    assert [r.source_id for r in store.iter_records("comment")] == ["1"]


def test_iter_records_orders_by_parent_then_id_across_pages(store: StagingStore) -> None:
    """Iteration is in (parent, source_id) order, top-level records first, past page size."""
    store.upsert_records("issue", [issue(f"T-{n:04}") for n in range(300)])
    for parent in ("P-2", "P-1"):
        rows = [{"source_id": f"{parent}/{n:04}", "raw": {}} for n in range(600)]
        store.upsert_records("issue", [{**row, "parent": parent} for row in rows])
    seen = [(r.parent, r.source_id) for r in store.iter_records("issue")]
    assert len(seen) == 1500
    assert seen == sorted(seen, key=lambda pair: (pair[0] or "", pair[1]))
    assert seen[0] == (None, "T-0000")
    under = [r.source_id for r in store.iter_records("issue", parent="P-2")]
    assert under == [f"P-2/{n:04}" for n in range(600)]


def test_iter_lists_yields_only_non_empty_lists_across_pages(store: StagingStore) -> None:
    """Records whose key is missing, null, empty or not a list are skipped; the rest come in
    (parent, source_id) order with the list as staged, past the page size."""
    files = [{"id": 1, "name": "ü.png"}, {"id": 2}]
    rows = [{"source_id": f"{n:04}", "parent": "A-1", "raw": {"files": files}} for n in range(700)]
    rows += [
        {"source_id": "none", "parent": "A-1", "raw": {"body": "x"}},
        {"source_id": "null", "parent": "A-1", "raw": {"files": None}},
        {"source_id": "empty", "parent": "A-1", "raw": {"files": []}},
        {"source_id": "object", "parent": "A-1", "raw": {"files": {"id": 3}}},
        {"source_id": "nested", "parent": "A-1", "raw": {"x": {"files": files}}},
        {"source_id": "top", "raw": {"files": [7]}},
    ]
    store.upsert_records("comment", rows)
    store.upsert_records("issue", [{"source_id": "A-1", "raw": {"files": [8]}}])
    listed = list(store.iter_lists("comment", "files"))
    assert listed[0] == (None, "top", [7])
    assert listed[1:] == [("A-1", f"{n:04}", files) for n in range(700)]
    with pytest.raises(ValueError, match="plain JSON key"):
        next(store.iter_lists("comment", "files') OR 1=1 --"))


def test_count_records_and_source_ids_per_entity(store: StagingStore) -> None:
    """count_records maps each entity to its number of records; source_ids names them."""
    store.upsert_records("issue", [issue("A-1"), issue("A-2")])
    store.upsert_records("comment", [{"source_id": "7", "parent": "A-1", "raw": {}}])
    assert store.count_records() == {"issue": 2, "comment": 1}
    assert store.source_ids("issue") == {"A-1", "A-2"}
    assert store.source_ids("comment") == {"7"}
    assert store.source_ids("worklog") == set()


def test_a_checkpoint_and_its_rows_commit_together(store: StagingStore) -> None:
    """An exception inside transaction() leaves neither the rows nor the checkpoint."""
    store.set_checkpoint("issues", {"scroll": "s1"})
    with pytest.raises(RuntimeError), store.transaction():
        store.upsert_records("issue", [issue("A-1")])
        store.set_checkpoint("issues", {"scroll": "s2"})
        store.ledger.plan([{"entity": "issue", "source_id": "A-1", "payload_hash": "h"}])
        raise RuntimeError("network died before the page was done")
    assert store.count_records() == {}
    assert store.get_checkpoint("issues") == {"scroll": "s1"}
    assert store.ledger.get("issue", "A-1") is None

    with store.transaction():
        store.upsert_records("issue", [issue("A-1")])
        store.set_checkpoint("issues", {"scroll": "s2"})
    assert store.count_records() == {"issue": 1}
    assert store.get_checkpoint("issues") == {"scroll": "s2"}


def test_nested_transaction_undoes_only_the_inner_block(store: StagingStore) -> None:
    """A failed inner block rolls back alone; the outer one still commits its own work."""
    with store.transaction():
        store.upsert_records("issue", [issue("A-1")])
        with pytest.raises(KeyError), store.transaction():
            store.upsert_records("issue", [issue("A-2")])
            store.upsert_records("issue", [{"source_id": "A-3"}])  # no raw: KeyError
    assert [r.source_id for r in store.iter_records("issue")] == ["A-1"]


def test_savepoints_nest_three_deep_and_each_undoes_only_its_own_block(
    store: StagingStore,
) -> None:
    """Every savepoint has the same name: each failed block still rolls back to its own start."""
    with store.transaction():
        store.upsert_records("issue", [issue("A-1")])
        with store.transaction():
            store.upsert_records("issue", [issue("A-2")])
            with pytest.raises(KeyError), store.transaction():
                store.upsert_records("issue", [issue("A-3")])
                with store.transaction():
                    store.upsert_records("issue", [issue("A-4")])
                store.upsert_records("issue", [{"source_id": "A-5"}])  # no raw: KeyError
            store.upsert_records("issue", [issue("A-6")])
        with pytest.raises(KeyError), store.transaction():
            store.upsert_records("issue", [issue("A-7")])
            raise KeyError("the second inner block fails as a whole")
    assert [r.source_id for r in store.iter_records("issue")] == ["A-1", "A-2", "A-6"]


def test_write_methods_join_an_open_transaction_without_a_savepoint(store: StagingStore) -> None:
    """Inside a transaction a write method adds its own statements only; alone it commits."""
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    with store.transaction():
        store.replace_children("A-1", "comment", [issue("A-1/1"), issue("A-1/2")])
        store.mark_drained("A-1", "t1")
    store.db.conn.set_trace_callback(None)
    assert not [sql for sql in statements if "SAVEPOINT" in sql.upper()]
    assert [sql for sql in statements if sql in ("BEGIN", "COMMIT")] == ["BEGIN", "COMMIT"]
    with StagingStore.open(store.path) as other:  # committed: another connection sees it
        assert other.drained_version("A-1") == "t1"
        assert len(list(other.iter_records("comment", parent="A-1"))) == 2


def test_unknown_checkpoint_is_none(store: StagingStore) -> None:
    """A checkpoint never set reads as None; a set one can be replaced."""
    assert store.get_checkpoint("nothing") is None
    store.set_checkpoint("c", {"a": 1})
    store.set_checkpoint("c", {"a": 2, "b": [1]})
    assert store.get_checkpoint("c") == {"a": 2, "b": [1]}


def test_needs_drain_follows_updated_at(store: StagingStore) -> None:
    """Undrained issues need a drain; marked ones do not, until their updated_at moves."""
    store.upsert_records("issue", [issue("A-1", "t1"), issue("A-2", "t1"), issue("A-3", "t1")])
    assert list(store.needs_drain()) == ["A-1", "A-2", "A-3"]

    store.mark_drained("A-1", "t1")
    store.mark_drained("A-2", "t1")
    assert list(store.needs_drain()) == ["A-3"]

    store.upsert_records("issue", [issue("A-2", "t2", summary="edited")])
    assert list(store.needs_drain()) == ["A-2", "A-3"]
    store.mark_drained("A-2", "t2")
    assert list(store.needs_drain()) == ["A-3"]
    assert list(store.needs_drain("page")) == []


def test_draining_while_iterating_needs_drain(store: StagingStore) -> None:
    """The caller can stage children and mark each issue while iterating, across pages."""
    store.upsert_records("issue", [issue(f"A-{n:04}", "t1") for n in range(1200)])
    drained = 0
    for key in store.needs_drain():
        with store.transaction():
            store.replace_children(key, "comment", [{"source_id": f"{key}/c", "raw": {}}])
            store.mark_drained(key, "t1")
        drained += 1
    assert drained == 1200
    assert list(store.needs_drain()) == []
    assert store.count_records() == {"issue": 1200, "comment": 1200}


def test_needs_drain_with_keys_checks_only_those_keys(store: StagingStore) -> None:
    """Only the given keys are answered, in source_id order; unknown and repeated keys are
    harmless, and a key whose mark is current is left out."""
    store.upsert_records("issue", [issue(f"A-{n}", "t1") for n in range(1, 6)])
    store.mark_drained("A-2", "t1")
    store.mark_drained("A-3", "t0")  # drained as of an older version

    asked = ["A-4", "A-3", "A-2", "A-4", "Z-9"]
    assert list(store.needs_drain("issue", keys=asked)) == ["A-3", "A-4"]
    assert list(store.needs_drain("issue", keys=[])) == []
    assert list(store.needs_drain("comment", keys=["A-4"])) == []


def test_needs_drain_with_keys_is_one_indexed_query_per_chunk(store: StagingStore) -> None:
    """1200 keys in a store of 3000 issues: three lookups by primary key, no table scan,
    and the answer is right across chunk edges."""
    store.upsert_records("issue", [issue(f"A-{n:04}", "t1") for n in range(3000)])
    for n in range(0, 3000, 2):
        store.mark_drained(f"A-{n:04}", "t1")
    asked = [f"A-{n:04}" for n in range(1000, 2200)]
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        found = list(store.needs_drain("issue", keys=asked))
    finally:
        store.db.conn.set_trace_callback(None)

    assert found == [key for key in asked if int(key[2:]) % 2 == 1]
    lookups = [sql for sql in statements if "FROM records" in sql]
    assert len(lookups) == 3
    plan = " ".join(row[3] for row in store.db.execute(f"EXPLAIN QUERY PLAN {lookups[0]}"))
    assert "SCAN records" not in plan
    assert "SEARCH records USING" in plan


def test_drained_version_is_the_updated_at_of_the_mark(store: StagingStore) -> None:
    """None before any mark; then the latest marked updated_at, per entity."""
    assert store.drained_version("A-1") is None
    store.mark_drained("A-1", "t1")
    assert store.drained_version("A-1") == "t1"
    store.mark_drained("A-1", "t2")
    assert store.drained_version("A-1") == "t2"
    assert store.drained_version("A-1", entity="page") is None


def test_a_lone_surrogate_is_replaced_and_the_record_kept(store: StagingStore) -> None:
    """An emoji cut in half by the service (legal in JSON, not in UTF-8): staged, the half
    character replaced by U+FFFD, the rest untouched, a warning logged."""
    from structlog.testing import capture_logs

    raw = json.loads('{"key": "A-9", "text": "half \\ud83d and whole \\ud83d\\ude00"}')
    with capture_logs() as logs:
        store.upsert_records("issue", [{"source_id": "A-9", "raw": raw}])
    record = store.get_record("issue", "A-9")
    assert record is not None
    assert record.raw["text"] == "half \ufffd and whole \U0001f600"
    assert [entry["event"] for entry in logs] == ["lone_surrogate_replaced"]


def test_staged_json_reads_back_as_it_was_given(store: StagingStore) -> None:
    """Big integers, NaN and text with a replaced half emoji read back equal to what json
    gives for the same stored text."""
    raw = {"id": 2**80, "ratio": float("inf"), "nested": [{"x": -0.0}], "t": "a\ud83db"}
    store.upsert_records("issue", [{"source_id": "A-1", "raw": raw}])
    record = store.get_record("issue", "A-1")
    assert record is not None
    (stored,) = store.db.execute("SELECT raw FROM records").fetchone()
    assert record.raw == json.loads(stored)
    assert record.raw["id"] == 2**80 and record.raw["t"] == "a\ufffdb"


def test_distinct_values_reads_one_json_path_without_decoding_records(
    store: StagingStore,
) -> None:
    """Each distinct value at the path, as text (numbers too); records without one are left
    out; a path that is not plain keys is refused."""
    rows = [
        {"source_id": "A-1", "raw": {"status": {"id": "35", "key": "open"}}},
        {"source_id": "A-2", "raw": {"status": {"id": 35}}},
        {"source_id": "A-3", "raw": {"status": {"id": "7"}}},
        {"source_id": "A-4", "raw": {"summary": "no status"}},
    ]
    store.upsert_records("issue", [{**row, "updated_at": "t"} for row in rows])
    assert store.distinct_values("issue", "status", "id") == {"35", "7"}
    assert store.distinct_values("issue", "status", "key") == {"open"}
    assert store.distinct_values("comment", "status", "id") == set()
    with pytest.raises(ValueError):
        store.distinct_values("issue", "status'); DROP TABLE records; --")


def test_distinct_values_asked_again_while_records_are_held_reads_once_until_one_is_written(
    store: StagingStore,
) -> None:
    """Planning asks every issue's statuses a dozen times: held, SQLite reads them once. Each
    write of a record (staged, replaced under its parent, deleted) forgets what was read."""
    store.upsert_records("issue", [{"source_id": "A-1", "raw": {"status": {"id": "1"}}}])
    reads: list[str] = []
    store.db.conn.set_trace_callback(
        lambda sql: reads.append(sql) if "json_extract" in sql else None
    )
    with store.records_held():
        assert store.distinct_values("issue", "status", "id") == {"1"}
        store.distinct_values("issue", "status", "id").add("mine")  # a copy: the caller's own
        assert store.distinct_values("issue", "status", "id") == {"1"}
        assert len(reads) == 1
        store.upsert_records("issue", [{"source_id": "A-2", "raw": {"status": {"id": "2"}}}])
        assert store.distinct_values("issue", "status", "id") == {"1", "2"}
        store.replace_children("A-1", "comment", [{"source_id": "C", "raw": {"status": {"id": 3}}}])
        assert store.distinct_values("comment", "status", "id") == {"3"}
        store.delete_under("A-1", entities=["comment"])
        assert store.distinct_values("comment", "status", "id") == set()
        store.delete_record("issue", "A-2")
        assert store.distinct_values("issue", "status", "id") == {"1"}
        assert len(reads) == 5
    assert store.distinct_values("issue", "status", "id") == {"1"}
    assert len(reads) == 6  # let go: asked anew
