"""The chart kit's ticks: a dated axis ticked on week, month or year starts, never crowded;
a log axis of days ticked in words a person reads (a week, a month, a year)."""

from __future__ import annotations

from datetime import date

import pytest

from haul.pipelines.report.charts import MOST_MARKS, date_marks, log_days, log_marks

pytestmark = pytest.mark.fast


def labels(first: str, last: str) -> list[str]:
    span = date.fromisoformat(first).toordinal(), date.fromisoformat(last).toordinal()
    return [label for _, label in date_marks(*span)]


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        ("2022-01-03", "2026-12-03", ["2023", "2024", "2025", "2026"]),
        ("2024-01-03", "2024-12-03", ["Apr 2024", "Jul 2024", "Oct 2024"]),
        ("2024-03-10", "2024-06-20", ["Apr 2024", "May 2024", "Jun 2024"]),
        ("2024-01-03", "2024-02-13", ["Jan 8", "Jan 22", "Feb 5"]),
    ],
)
def test_a_dated_axis_is_ticked_on_the_starts_of_weeks_months_or_years(
    first: str, last: str, expected: list[str]
) -> None:
    assert labels(first, last) == expected


def test_a_dated_axis_never_carries_more_than_its_most_ticks() -> None:
    start = date(2020, 1, 1).toordinal()
    for days in range(1, 4000, 37):
        marks = date_marks(start, start + days)
        assert len(marks) <= MOST_MARKS, days
        assert all(start <= x <= start + days for x, _ in marks)


def test_a_log_axis_of_days_reads_in_weeks_months_and_years() -> None:
    """From 1754 days (the oldest issue of an aging chart) down to a day, at most five ticks,
    each inside the axis, in order."""
    marks = log_marks(1754)
    assert [label for _, label in marks] == ["1 d", "1 wk", "1 mo", "6 mo", "2 yr"]
    assert [y for y, _ in marks] == sorted(y for y, _ in marks)
    assert marks[-1][0] <= log_days(1754)
    assert log_days(0) == 0
