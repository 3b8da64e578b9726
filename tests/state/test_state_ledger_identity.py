"""The ledger follows a record whose identity changed: renamed at the source (rename,
rename_under), moved in the target (retarget), deleted in the target (the forget family)."""

from dataclasses import replace
from pathlib import Path

import pytest

from haul.state import LedgerRowNotFound, LedgerTransitionError, StagingStore
from haul.state.ledger import Ledger

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def plan(ledger: Ledger, entity: str, source_id: str, parent: str | None = None) -> None:
    ledger.plan([{"entity": entity, "source_id": source_id, "parent": parent, "payload_hash": "h"}])


def keys(ledger: Ledger) -> set[tuple[str, str, str | None]]:
    return {(row.entity, row.source_id, row.parent) for row in ledger.iter_rows()}


@pytest.fixture
def ledger(store: StagingStore) -> Ledger:
    return store.ledger


def test_rename_rekeys_only_the_given_entities_and_keeps_their_state(ledger: Ledger) -> None:
    """The renamed rows keep their status, target id, hashes and updated_at; rows of other
    entities under the same key stay as they are."""
    plan(ledger, "issue", "A-1")
    plan(ledger, "access", "A-1")
    plan(ledger, "other", "A-1")
    ledger.done("issue", "A-1", "T-9")
    before = ledger.get("issue", "A-1")
    assert ledger.rename(["issue", "access"], "A-1", "B-7") == 2
    after = ledger.get("issue", "B-7")
    assert ledger.get("issue", "A-1") is None
    assert after == replace(before, source_id="B-7")
    assert ledger.get("access", "B-7") is not None
    assert ledger.get("other", "A-1") is not None
    assert ledger.rename(["issue"], "nothing", "B-8") == 0


def test_rename_under_rekeys_every_level_and_the_parents_that_follow(ledger: Ledger) -> None:
    """Rows keyed "old/..." at any depth become "new/..."; with parents, a parent that is
    `old` or keyed under it follows; a key that only starts like `old` is left alone."""
    plan(ledger, "comment", "A-1/10", parent="A-1")
    plan(ledger, "file", "A-1/10/5", parent="A-1/10")
    plan(ledger, "comment", "A-11/3", parent="A-11")  # A-1 is a prefix of A-11, not a parent
    plan(ledger, "link", "A-1/2", parent="elsewhere")
    plan(ledger, "worklog", "A-1/4", parent="A-1")  # an entity not asked for
    renamed = ledger.rename_under(["comment", "file", "link"], "A-1", "B-7", parents=True)
    assert renamed == 3
    assert keys(ledger) == {
        ("comment", "B-7/10", "B-7"),
        ("file", "B-7/10/5", "B-7/10"),
        ("comment", "A-11/3", "A-11"),
        ("link", "B-7/2", "elsewhere"),
        ("worklog", "A-1/4", "A-1"),
    }


def test_rename_under_direct_only_leaves_deeper_keys_and_parents(ledger: Ledger) -> None:
    """direct_only renames "old/x" but not "old/x/y" (a page below renames its own); without
    parents, the parent column is left for the next plan."""
    plan(ledger, "comment", "docs/5", parent="docs")
    plan(ledger, "comment", "docs/sub/6", parent="docs/sub")
    assert ledger.rename_under(["comment"], "docs", "guide", direct_only=True) == 1
    assert keys(ledger) == {("comment", "guide/5", "docs"), ("comment", "docs/sub/6", "docs/sub")}


def test_rename_under_resend_marks_done_rows_of_those_entities_changed(ledger: Ledger) -> None:
    """A done row of an entity in `resend` is changed after the rename (written again); a
    pending one and a done one of another entity are not."""
    for entity, source_id in (("comment", "p/1"), ("comment", "p/2"), ("file", "p/3")):
        plan(ledger, entity, source_id)
    ledger.done("comment", "p/1", "t1")
    ledger.done("file", "p/3", "t3")
    ledger.rename_under(["comment", "file"], "p", "q", resend=["comment"])
    assert ledger.get("comment", "q/1").changed
    assert ledger.get("comment", "q/1").status == "done"
    assert ledger.get("comment", "q/2").payload_hash == "h"
    assert not ledger.get("file", "q/3").changed
    assert [row.source_id for row in ledger.iter_changed("comment")] == ["q/1"]


def test_rename_under_takes_wildcards_and_case_literally(ledger: Ledger) -> None:
    """A key holding % or _ matches only itself, and case counts (no LIKE)."""
    plan(ledger, "comment", "a_b/1")
    plan(ledger, "comment", "axb/2")
    plan(ledger, "comment", "A_B/3")
    assert ledger.rename_under(["comment"], "a_b", "c%d") == 1
    assert {row.source_id for row in ledger.iter_rows()} == {"c%d/1", "axb/2", "A_B/3"}


def test_retarget_gives_a_done_row_its_new_target_id(ledger: Ledger) -> None:
    """A done row takes the new target id and stays done; any other row is refused."""
    plan(ledger, "issue", "A-1")
    plan(ledger, "issue", "A-2")
    ledger.done("issue", "A-1", "OLD-1")
    ledger.retarget("issue", "A-1", "NEW-4")
    row = ledger.get("issue", "A-1")
    assert (row.status, row.target_id) == ("done", "NEW-4")
    with pytest.raises(LedgerTransitionError, match="pending"):
        ledger.retarget("issue", "A-2", "NEW-5")
    with pytest.raises(LedgerRowNotFound):
        ledger.retarget("issue", "A-3", "NEW-6")


def test_forget_drops_the_rows_of_the_given_entities_only(ledger: Ledger) -> None:
    """forget removes the record's rows of the entities named, whatever their status."""
    plan(ledger, "page", "docs")
    plan(ledger, "access", "docs")
    plan(ledger, "grid_rows", "docs")
    ledger.done("page", "docs", "17")
    assert ledger.forget(["page", "access"], "docs") == 2
    assert keys(ledger) == {("grid_rows", "docs", None)}
    assert ledger.forget(["page"], "docs") == 0


def test_forget_children_drops_the_rows_loading_under_a_parent(ledger: Ledger) -> None:
    """Rows of the entities named whose parent is the given one go; a grandchild, a child
    of another entity and a parent's namesake elsewhere stay."""
    plan(ledger, "file", "9", parent="docs")
    plan(ledger, "grid", "g1", parent="docs")
    plan(ledger, "page", "docs/sub", parent="docs")
    plan(ledger, "file", "8", parent="docs/sub")
    assert ledger.forget_children(["file", "grid"], "docs") == 2
    assert keys(ledger) == {("page", "docs/sub", "docs"), ("file", "8", "docs/sub")}


def test_forget_under_drops_rows_keyed_under_a_key(ledger: Ledger) -> None:
    """forget_under removes "key/..." rows (only "key/x" with direct_only), not "key2/..."."""
    for source_id in ("docs/1", "docs/sub/2", "docs2/3"):
        plan(ledger, "comment", source_id)
    assert ledger.forget_under(["comment"], "docs", direct_only=True) == 1
    assert {row.source_id for row in ledger.iter_rows()} == {"docs/sub/2", "docs2/3"}
    assert ledger.forget_under(["comment"], "docs") == 1
    assert {row.source_id for row in ledger.iter_rows()} == {"docs2/3"}


def test_renames_and_forgets_inside_a_failed_transaction_are_undone(store: StagingStore) -> None:
    """Each joins the caller's transaction: an error there undoes them with the rest."""
    ledger = store.ledger
    plan(ledger, "issue", "A-1")
    plan(ledger, "comment", "A-1/1", parent="A-1")
    with pytest.raises(RuntimeError), store.transaction():
        ledger.rename(["issue"], "A-1", "B-1")
        ledger.rename_under(["comment"], "A-1", "B-1", parents=True)
        ledger.forget(["issue"], "B-1")
        raise RuntimeError("crash")
    assert keys(ledger) == {("issue", "A-1", None), ("comment", "A-1/1", "A-1")}


def test_a_rename_is_committed_at_once(store: StagingStore, db_path: Path) -> None:
    """Outside a transaction, a rename is visible to another connection when it returns."""
    plan(store.ledger, "issue", "A-1")
    store.ledger.rename(["issue"], "A-1", "B-1")
    with StagingStore.open(db_path) as other:
        assert other.ledger.get("issue", "B-1") is not None
