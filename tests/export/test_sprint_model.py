"""The sprint model (pipelines/tracker/flow/sprints.py): an issue's part in a sprint from
hand-built sprint field histories and status intervals, and on a real export, sprint_summary
as sprint_issue_history counted."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from haul.pipelines.tracker.flow.model import Interval, StatusInfo, changes_of
from haul.pipelines.tracker.flow.sprints import Sprint, in_sprint, memberships
from tests.helpers.export_fixtures import only_folder, stage_sandbox

OPEN = StatusInfo("open", "Open", "new")
WORK = StatusInfo("inProgress", "In progress", "inProgress")
DONE = StatusInfo("resolved", "Resolved", "done")
NOW = datetime(2024, 3, 30, tzinfo=UTC)


def day(number: int) -> datetime:
    return datetime(2024, 3, number, tzinfo=UTC)


SPRINT = Sprint("7", "Sprint 7", "1", "released", day(4), day(18))
LATER = Sprint("8", "Sprint 8", "1", "in_progress", day(18), datetime(2024, 4, 1, tzinfo=UTC))


def intervals(*steps: tuple[datetime, StatusInfo]) -> list[Interval]:
    return [
        Interval(n, status, at, steps[n + 1][0] if n + 1 < len(steps) else None, 0, 0)
        for n, (at, status) in enumerate(steps)
    ]


def sprint_change(when: str, before: list[str] | None, after: list[str] | None) -> dict[str, Any]:
    def refs(ids: list[str] | None) -> list[dict[str, str]] | None:
        return None if ids is None else [{"id": i, "display": f"Sprint {i}"} for i in ids]

    return {
        "id": when,
        "updatedAt": f"2024-03-{when}T00:00:00.000+0000",
        "fields": [{"field": {"id": "sprint"}, "from": refs(before), "to": refs(after)}],
    }


ISSUE = {"key": "TEST-1", "createdAt": "2024-03-01T00:00:00.000+0000", "sprint": None}


@pytest.mark.fast
def test_committed_and_completed_in_the_sprint() -> None:
    """In the sprint before it started, resolved during it: committed and completed."""
    part = in_sprint(SPRINT, [(day(2), None)], intervals((day(1), OPEN), (day(5), WORK),
                     (day(10), DONE)), NOW)  # fmt: skip
    assert part is not None
    assert (part.committed, part.added, part.removed) == (True, False, False)
    assert part.completed_at == day(10) and not part.carried_over


@pytest.mark.fast
def test_added_mid_sprint_and_carried_over_unfinished() -> None:
    """Came in on the 8th, still open at the end: added and carried over, not completed."""
    part = in_sprint(SPRINT, [(day(8), None)], intervals((day(1), OPEN), (day(9), WORK)), NOW)
    assert part is not None
    assert (part.committed, part.added, part.completed_at, part.carried_over) == (
        False, True, None, True,
    )  # fmt: skip


@pytest.mark.fast
def test_removed_during_the_sprint_is_neither_completed_nor_carried_over() -> None:
    """Taken out on the 10th and resolved on the 12th (in no sprint): removed only."""
    part = in_sprint(SPRINT, [(day(2), day(10))], intervals((day(1), OPEN), (day(12), DONE)), NOW)
    assert part is not None
    assert part.removed and part.removed_at == day(10)
    assert part.completed_at is None and not part.carried_over


@pytest.mark.fast
def test_a_sprint_not_over_carries_nothing_over() -> None:
    part = in_sprint(LATER, [(day(20), None)], intervals((day(1), OPEN), (day(21), WORK)), NOW)
    assert part is not None and part.added and not part.carried_over and not part.removed


@pytest.mark.fast
def test_memberships_follow_the_sprint_field_history() -> None:
    """Put in sprint 7 on the 2nd, carried into 8 beside it on the 18th, out of 7 on the
    20th: 7 from the 2nd to the 20th, 8 from the 18th on; the issue's own value alone when
    the changelog never changed it."""
    entries = [
        sprint_change("02", None, ["7"]),
        sprint_change("18", ["7"], ["7", "8"]),
        sprint_change("20", ["7", "8"], ["8"]),
    ]
    changes = changes_of(entries, lambda uid: None)
    spans = memberships({**ISSUE, "sprint": [{"id": "8"}]}, changes, lambda uid: None)
    assert spans == {"7": [(day(2), day(20))], "8": [(day(18), None)]}
    still = memberships({**ISSUE, "sprint": [{"id": "8"}]}, [], lambda uid: None)
    assert still == {"8": [(day(1), None)]}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        staged = stage_sandbox(sandbox, tmp_path_factory.mktemp("sprints"))
        out = staged.directory / "out"
        done = staged.haul("export", "--config", staged.config, "--out", out)
        assert done.returncode == 0, done.stdout + done.stderr
        yield only_folder(out) / "haul.duckdb"


def test_the_summary_counts_the_issue_history_of_every_sprint(exported: Path) -> None:
    """Each sprint's committed, added, removed, completed and spillover are its rows of
    sprint_issue_history counted; every staged sprint has a summary row; an issue in a
    sprint lists it on the issue now or had it in its history."""
    with duckdb.connect(str(exported), read_only=True) as db:
        summary = db.execute(
            "SELECT sprint_id, committed, added, removed, completed, spillover FROM sprint_summary "
            "ORDER BY sprint_id"
        ).fetchall()
        counted = db.execute(
            "SELECT s.id, count(h.issue_key) FILTER (h.committed), count(h.issue_key) FILTER (h.added), "
            "count(h.issue_key) FILTER (h.removed), count(h.issue_key) FILTER (h.completed), "
            "count(h.issue_key) FILTER (h.carried_over) "
            "FROM sprints s LEFT JOIN sprint_issue_history h ON h.sprint_id = s.id "
            "GROUP BY s.id ORDER BY s.id"
        ).fetchall()
        rows = db.execute("SELECT count(*) FROM sprint_issue_history").fetchone()[0]  # type: ignore[index]
        listed = db.execute(
            "SELECT count(*) FROM sprint_issue_history h JOIN issues i ON i.key = h.issue_key "
            "WHERE i.sprints LIKE '%' || h.sprint_name || '%'"
        ).fetchone()[0]  # type: ignore[index]
    assert summary == counted
    assert rows > 0 and listed == rows  # no sprint changes seeded: each is the issue's own
    assert sum(row[1] + row[2] for row in summary) == rows
