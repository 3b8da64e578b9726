"""The conflicts a sync left open and a person's decisions: a decision lives only while its
conflict holds the values it was made against, and a CSV decided against older values is
named, not kept."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from haul.pipelines.commands.resolve import ResolveError, decide_from, take, write_csv
from haul.pipelines.commands.resolve import open_conflicts as listed
from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_decision_outlives_a_run_only_while_the_sides_hold_what_it_was_made_against(
    store: StagingStore,
) -> None:
    """Recorded again with the same values, the decision stays; with a side moved, or the
    field no longer in conflict, it goes; a settled record keeps nothing."""
    store.conflicts.record("issue", "DEV-1", {"summary": ("ours", "theirs"), "tags": (["a"], None)})
    store.conflicts.decide("issue", "DEV-1", "summary", "source", ("ours", "theirs"))
    store.conflicts.decide("issue", "DEV-1", "tags", "target", (["a"], None))

    store.conflicts.record("issue", "DEV-1", {"summary": ("ours", "theirs"), "tags": (["b"], None)})

    assert {c.field: c.decision for c in store.conflicts.iter_open()} == {
        "summary": "source",
        "tags": None,
    }
    store.conflicts.record("issue", "DEV-1", {"tags": (["b"], None)})
    assert store.conflicts.decisions("issue", "DEV-1") == {}
    store.conflicts.clear("issue", "DEV-1")
    assert list(store.conflicts.iter_open()) == []


def test_a_csv_decided_against_older_values_is_named_and_the_rest_kept(
    store: StagingStore,
) -> None:
    """The CSV written, a run sees DEV-2's source move, then the person's CSV comes back:
    DEV-1's decision is kept, DEV-2's is named as made against values that moved."""
    store.conflicts.record("issue", "DEV-1", {"summary": ("one", "uno")})
    store.conflicts.record("issue", "DEV-2", {"summary": ("two", "dos")})
    out = io.StringIO()
    write_csv(out, listed(store))
    store.conflicts.record("issue", "DEV-2", {"summary": ("two, again", "dos")})
    written = out.getvalue().splitlines()
    lines = [written[0], *(line + "source" for line in written[1:])]  # the empty column filled

    result = decide_from(store, lines, Path("decided.csv"))

    assert [(found.conflict.source_id, side) for found, side in result.decided] == [
        ("DEV-1", "source")
    ]
    (stale,) = result.stale
    assert stale.startswith("line 3: issue DEV-2 summary: decided against source 'two'")
    assert "now source 'two, again'" in stale


@pytest.mark.parametrize(
    ("row", "error"),
    [
        ('issue,DEV-1,,summary,"""one""","""uno""",both', "line 2: decision 'both'"),
        (
            "issue,DEV-9,,summary,null,null,target",
            "line 2: issue DEV-9 summary is no open conflict",
        ),
        ("issue,DEV-1,,summary,one,uno,source", "line 2: the source value 'one' is not the JSON"),
    ],
)
def test_a_bad_line_is_refused_naming_it_and_nothing_is_decided(
    store: StagingStore, row: str, error: str
) -> None:
    store.conflicts.record("issue", "DEV-1", {"summary": ("one", "uno")})
    header = "entity,source_id,target_id,field,source,target,decision"

    with pytest.raises(ResolveError, match=error):
        decide_from(store, [header, row], Path("decided.csv"))

    assert store.conflicts.decisions("issue", "DEV-1") == {}


def test_taking_a_side_of_no_open_conflict_is_refused_naming_what_is_open(
    store: StagingStore,
) -> None:
    """An issue with no open conflict, or a field of it not in conflict: a ResolveError (exit
    2) that says which fields are."""
    store.conflicts.record("issue", "DEV-1", {"summary": ("one", "uno")})

    with pytest.raises(ResolveError, match="issue DEV-9 has no open conflict"):
        take(store, "source", "issue", "DEV-9", "summary")
    with pytest.raises(ResolveError, match="no conflict in 'tags', only in: summary"):
        take(store, "target", "issue", "DEV-1", "tags")
    take(store, "target", "issue", "DEV-1", "summary")

    assert [c.decision for c in store.conflicts.iter_open()] == ["target"]
