"""Extract problems: one row per record the extract could not stage whole, until it is."""

from __future__ import annotations

import pytest

from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_problem_is_kept_with_its_latest_error(store: StagingStore) -> None:
    """Recording twice keeps one row, the newer error, and when it was first seen."""
    store.problems.record("attachment", "A-1/7", "expected 10 bytes, got 4", parent="A-1")
    first = store.problems.get("attachment", "A-1/7")
    store.problems.record("attachment", "A-1/7", "expected 10 bytes, got 6", parent="A-1")
    again = store.problems.get("attachment", "A-1/7")
    assert first is not None and again is not None
    assert again.error == "expected 10 bytes, got 6"
    assert again.first_seen == first.first_seen
    assert store.problems.count() == 1


def test_clear_under_forgets_all_but_the_ones_kept(store: StagingStore) -> None:
    """A parent drained again keeps only the problems it still has."""
    for source_id in ("A-1/1", "A-1/2", "A-1/3"):
        store.problems.record("attachment", source_id, "short", parent="A-1")
    store.problems.record("attachment", "A-2/1", "short", parent="A-2")
    store.problems.clear_under("A-1", "attachment", keep={"A-1/2"})
    assert sorted(p.source_id for p in store.problems) == ["A-1/2", "A-2/1"]


def test_problems_survive_a_reopen(store: StagingStore) -> None:
    """They are rows of the staging file, not memory."""
    store.problems.record("issue", "TEST:id=9", "no key")
    path = store.path
    store.close()
    with StagingStore.open(path) as reopened:
        assert [p.entity for p in reopened.problems] == ["issue"]
