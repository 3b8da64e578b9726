"""The load ledger: planning, status moves, counts and retries."""

import pytest

from haul.state import LedgerRow, LedgerRowNotFound, LedgerTransitionError, StagingStore
from haul.state.ledger import Ledger

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def planned(ledger: Ledger, *keys: str, entity: str = "issue", parent: str | None = None) -> int:
    return ledger.plan(
        {"entity": entity, "source_id": k, "parent": parent, "payload_hash": f"h-{k}"} for k in keys
    )


@pytest.fixture
def ledger(store: StagingStore) -> Ledger:
    return store.ledger


def test_plan_inserts_pending_rows_once(ledger: Ledger) -> None:
    """New rows start pending with no attempts; planning again inserts nothing."""
    assert planned(ledger, "A-1", "A-2") == 2
    assert planned(ledger, "A-1", "A-2", "A-3") == 1
    row = ledger.get("issue", "A-1")
    assert isinstance(row, LedgerRow)
    assert (row.status, row.attempts, row.target_id, row.payload_hash) == (
        "pending",
        0,
        None,
        "h-A-1",
    )
    assert row.updated_at


def test_replanning_updates_the_hash_unless_done(ledger: Ledger) -> None:
    """A changed payload replaces the hash of unfinished rows; done rows keep theirs."""
    planned(ledger, "A-1", "A-2")
    ledger.done("issue", "A-2", "1002")
    ledger.plan(
        {"entity": "issue", "source_id": k, "parent": None, "payload_hash": "new"}
        for k in ("A-1", "A-2")
    )
    assert ledger.get("issue", "A-1").payload_hash == "new"
    assert ledger.get("issue", "A-2").payload_hash == "h-A-2"
    assert ledger.get("issue", "A-2").status == "done"


def test_begin_then_done_records_the_target_id(ledger: Ledger) -> None:
    """begin counts an attempt; done stores the target id."""
    planned(ledger, "A-1")
    ledger.begin("issue", "A-1")
    assert ledger.get("issue", "A-1").status == "in_flight"
    assert ledger.get("issue", "A-1").attempts == 1
    ledger.done("issue", "A-1", "5f1")
    assert ledger.get("issue", "A-1").status == "done"
    assert ledger.target_id("issue", "A-1") == "5f1"
    assert ledger.target_id("issue", "nope") is None


def test_begin_on_a_done_row_raises(ledger: Ledger) -> None:
    """Loading a done record again would duplicate it: begin refuses and changes nothing."""
    planned(ledger, "A-1")
    ledger.begin("issue", "A-1")
    ledger.done("issue", "A-1", "7")
    with pytest.raises(LedgerTransitionError, match="done"):
        ledger.begin("issue", "A-1")
    row = ledger.get("issue", "A-1")
    assert (row.status, row.attempts, row.target_id) == ("done", 1, "7")


def test_done_and_fail_refuse_finished_rows(ledger: Ledger) -> None:
    """done and fail accept pending or in_flight rows only."""
    planned(ledger, "A-1", "A-2")
    ledger.done("issue", "A-1", "1")  # pending -> done: resolved without a POST
    with pytest.raises(LedgerTransitionError):
        ledger.done("issue", "A-1", "2")
    with pytest.raises(LedgerTransitionError):
        ledger.fail("issue", "A-1", "late error")
    ledger.fail("issue", "A-2", "422 invalid")
    with pytest.raises(LedgerTransitionError):
        ledger.done("issue", "A-2", "3")
    assert ledger.target_id("issue", "A-1") == "1"


def test_unplanned_rows_are_refused(ledger: Ledger) -> None:
    """Moving a record that was never planned says so."""
    with pytest.raises(LedgerRowNotFound):
        ledger.begin("issue", "ghost")
    assert ledger.get("issue", "ghost") is None


def test_release_returns_in_flight_to_pending(ledger: Ledger) -> None:
    """After a reconcile finds nothing on the target, the row is pending again."""
    planned(ledger, "A-1", "A-2")
    ledger.begin("issue", "A-1")
    ledger.release("issue", "A-1")
    assert ledger.get("issue", "A-1").status == "pending"
    ledger.begin("issue", "A-2")
    ledger.done("issue", "A-2", "9")
    with pytest.raises(LedgerTransitionError):
        ledger.release("issue", "A-2")


def test_fail_then_retry_failed(ledger: Ledger) -> None:
    """Failed rows keep their error; retry_failed makes them pending (optionally per entity)."""
    planned(ledger, "A-1", "A-2")
    planned(ledger, "c1", entity="comment", parent="A-1")
    for entity, key in (("issue", "A-1"), ("issue", "A-2"), ("comment", "c1")):
        ledger.begin(entity, key)
        ledger.fail(entity, key, "422: bad status")
    assert ledger.get("issue", "A-1").error == "422: bad status"

    assert ledger.retry_failed("comment") == 1
    assert ledger.get("comment", "c1").status == "pending"
    assert ledger.get("issue", "A-1").status == "failed"
    assert ledger.retry_failed() == 2
    assert ledger.retry_failed() == 0
    ledger.begin("issue", "A-1")
    assert ledger.get("issue", "A-1").attempts == 2


def test_counts_by_entity_and_status(ledger: Ledger) -> None:
    """counts() groups rows by entity, then status."""
    planned(ledger, "A-1", "A-2", "A-3")
    planned(ledger, "c1", "c2", entity="comment", parent="A-1")
    ledger.begin("issue", "A-1")
    ledger.done("issue", "A-1", "1")
    ledger.begin("issue", "A-2")
    ledger.fail("comment", "c1", "boom")
    assert ledger.counts() == {
        "issue": {"done": 1, "in_flight": 1, "pending": 1},
        "comment": {"failed": 1, "pending": 1},
    }


def test_iter_rows_filters_and_tolerates_moves(ledger: Ledger) -> None:
    """iter_rows filters by status, entity and parent, and rows can move while iterating."""
    keys = [f"A-{n:04}" for n in range(1100)]
    planned(ledger, *keys)
    planned(ledger, "c1", "c2", entity="comment", parent="A-0001")
    planned(ledger, "c3", entity="comment", parent="A-0002")

    loaded = 0
    for row in ledger.iter_rows(status="pending", entity="issue"):
        ledger.begin(row.entity, row.source_id)
        ledger.done(row.entity, row.source_id, f"t-{row.source_id}")
        loaded += 1
    assert loaded == 1100
    assert [r.source_id for r in ledger.iter_rows(status="pending")] == ["c1", "c2", "c3"]
    assert [r.source_id for r in ledger.iter_rows(parent="A-0001")] == ["c1", "c2"]
    assert len(list(ledger.iter_rows(status="done"))) == 1100
    with pytest.raises(ValueError, match="status"):
        list(ledger.iter_rows(status="finished"))


def test_a_transition_inside_a_failed_transaction_is_undone(store: StagingStore) -> None:
    """Ledger moves join an open transaction and roll back with it."""
    planned(store.ledger, "A-1")
    with pytest.raises(RuntimeError), store.transaction():
        store.ledger.begin("issue", "A-1")
        raise RuntimeError("abort")
    assert store.ledger.get("issue", "A-1").status == "pending"
    assert store.ledger.get("issue", "A-1").attempts == 0


def test_a_transition_is_committed_at_once(store: StagingStore) -> None:
    """begin is durable before the POST: another connection sees it immediately."""
    planned(store.ledger, "A-1")
    store.ledger.begin("issue", "A-1")
    with StagingStore.open(store.path) as other:
        assert other.ledger.get("issue", "A-1").status == "in_flight"


def test_refreshed_takes_the_new_hash_of_a_done_row_only(ledger: Ledger) -> None:
    """Only a done row can be marked refreshed; it keeps its status and target id."""
    planned(ledger, "A-1", "A-2")
    ledger.done("issue", "A-1", "T-1")
    ledger.refreshed("issue", "A-1", "changed")
    row = ledger.get("issue", "A-1")
    assert (row.status, row.target_id, row.payload_hash) == ("done", "T-1", "changed")
    with pytest.raises(LedgerTransitionError):
        ledger.refreshed("issue", "A-2", "changed")


def test_done_tells_a_record_found_in_the_target_from_one_sent(ledger: Ledger) -> None:
    """`done(found=True)` marks a record the target already held; a plain done does not."""
    planned(ledger, "A-1", "A-2")
    ledger.done("issue", "A-1", "1001", found=True)
    ledger.done("issue", "A-2", "1002")
    assert ledger.get("issue", "A-1").found  # type: ignore[union-attr]
    assert not ledger.get("issue", "A-2").found  # type: ignore[union-attr]


def test_a_waiting_row_is_neither_done_nor_failed_until_woken(ledger: Ledger) -> None:
    """wait keeps the reason and counts as waiting; retry_failed leaves it; wake makes it
    pending again, and only a waiting row can be woken."""
    planned(ledger, "A-1", "A-2", entity="link")
    ledger.begin("link", "A-1")
    ledger.wait("link", "A-1", "waits for issue B-7")
    ledger.wait("link", "A-2", "waits for issue B-8")  # a pending row may wait without a send
    assert ledger.counts() == {"link": {"waiting": 2}}
    assert ledger.get("link", "A-1").error == "waits for issue B-7"
    assert ledger.retry_failed() == 0
    with pytest.raises(LedgerTransitionError, match="cannot begin link 'A-1': it is waiting"):
        ledger.begin("link", "A-1")
    ledger.wake("link", "A-1")
    assert ledger.get("link", "A-1").status == "pending"
    with pytest.raises(LedgerTransitionError, match="cannot wake"):
        ledger.wake("link", "A-1")


def test_planning_a_few_rows_reads_no_whole_table(ledger: Ledger, store: StagingStore) -> None:
    """A load settles a row or two after each send (a status its issue's import carried):
    planned with a count of the whole ledger before and after, the 100 000-issue org's load
    spent five sixths of its time counting a million rows: the larger the org, the slower
    each issue loaded."""
    planned(ledger, *(f"A-{n}" for n in range(50)))
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        assert planned(ledger, "A-1", "B-1") == 1
    finally:
        store.db.conn.set_trace_callback(None)
    scans = [
        (sql, step)
        for sql in statements
        if sql.lstrip().upper().startswith(("SELECT", "INSERT", "UPDATE", "DELETE", "WITH"))
        for *_, step in store.db.conn.execute(f"EXPLAIN QUERY PLAN {sql}")
        if step.startswith("SCAN")
    ]
    assert statements and scans == []


def test_walking_one_entity_reads_each_page_from_where_the_last_ended(ledger: Ledger) -> None:
    """A walk over one entity's rows (pending, or changed since loaded) is keyed by source id:
    each page's statement is bounded by the last page's key in the index, so a walk reads
    each row once, not every earlier row again for each page (quadratic on a large org)."""
    comments = [f"C-{n:05d}" for n in range(1_200)]  # three pages
    planned(ledger, *comments, entity="comment")
    planned(ledger, "A-1", "A-2")
    db = ledger._db.conn
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    try:
        pending = [row.source_id for row in ledger.iter_rows(status="pending", entity="comment")]
        every = [row.source_id for row in ledger.iter_rows(entity="comment")]
        changed = [row.source_id for row in ledger.iter_changed("comment")]
    finally:
        db.set_trace_callback(None)
    assert pending == every == comments and changed == []
    walks = [sql for sql in statements if sql.startswith("SELECT") and "LIMIT" in sql]
    assert len(walks) == 7  # three pages of each walk of the comments, one of the changed ones
    for sql in walks:
        plan = " ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "TEMP B-TREE" not in plan, plan
        if ") > (" in sql:  # a page after the first starts at the last one's key
            assert "entity=? AND source_id>?" in plan, plan
