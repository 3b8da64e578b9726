"""Failed records sorted into causes: roots grouped by reason, the records failed for another
counted under their root's cause, the commonest first."""

from __future__ import annotations

import pytest

from haul.pipelines.commands.failures import sort_failures

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_children_wait_under_their_roots_cause_and_keys_do_not_split_a_cause() -> None:
    """12 key conflicts are one cause of 12; their comments and a comment's attachment wait
    under it, however deep; a lone 422 is a cause of its own, listed after."""
    failed = [("issue", f"DEV-{n}", f"tracker POST /issues/_import -> 409: key DEV-{n} exists")
              for n in range(1, 13)]  # fmt: skip
    failed += [("comment", f"DEV-{n}/{n}", f"issue DEV-{n} was not loaded") for n in range(1, 13)]
    failed += [("attachment", "DEV-1/1/a", "comment DEV-1/1 was not loaded")]
    failed += [("worklog", "DEV-40/7", "tracker POST /worklog -> 422: duration: bad")]

    found = sort_failures(failed)

    first, second = found.causes
    assert (first.entity, first.count, dict(first.waiting)) == (
        "issue",
        12,
        {"comment": 12, "attachment": 1},
    )
    assert first.reason.endswith("key DEV-1 exists")
    assert first.line().endswith("; 13 record(s) waiting under them")
    assert (second.entity, second.count, second.total) == ("worklog", 1, 1)
    assert found.records == len(failed)
    assert (
        found.rank("issue", "DEV-3")
        < found.rank("comment", "DEV-3/3")
        < found.rank("worklog", "DEV-40/7")
    )


def test_extract_problems_are_causes_of_their_own() -> None:
    """A record the extract could not stage is a cause, marked as the extract's."""
    found = sort_failures([], [("attachment", "DEV-1/9", "expected 10 bytes, got 4")])
    assert [cause.line() for cause in found.causes] == [
        "1 attachment (extract): expected 10 bytes, got 4"
    ]


def test_a_change_the_load_could_not_carry_is_the_loads_cause() -> None:
    """A loaded record whose change at the source its refresh could not carry is kept as a
    problem under `<entity>:change`, and reads as the load's, not the extract's."""
    why = "changed at the source, not carried to the target: bob maps to no target holder"
    found = sort_failures([], [("entity_access:change", "42", why)])
    assert [(cause.stage, cause.line()) for cause in found.causes] == [
        ("load", f"1 entity_access:change: {why}")
    ]
