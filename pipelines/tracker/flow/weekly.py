"""flow_weekly: per queue and ISO week, arrivals, throughput, open issues at the week's end,
and the cycle time's 50th, 85th and 95th percentiles, computed with pandas.

Weeks are ISO weeks (Monday to Sunday) in the `[export] timezone`, from each queue's first
arrival to the week of the as-of instant. An issue counts in its queue now:
- arrivals: issues created that week;
- throughput: issues finished that week (`cycle_times.done_at`, by `[model] cycle`);
- open at week end: issues created before the week's end (the next Monday's midnight, or
  the as-of instant in its last week) whose status just before it did not finish work;
- cycle percentiles: of the cycle seconds (by `[model] cycle`) of that week's
  throughput, linear between ranks (pandas' default); empty when none has one.

A restricted issue (see `export_columns`) counts only when the export includes restricted
content; otherwise it is left out of every figure, and counted as one row left out.

The issues stream through once, leaving per issue three numbers and a count per week it was
open, so memory grows by a few bytes an issue; pandas then groups the per-issue numbers.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from haul.pipelines.export.columns import value
from haul.pipelines.export.tables import Derived, ExportContext, Table
from haul.pipelines.tracker.export_columns import of_issue
from haul.pipelines.tracker.flow.calendar import WorkCalendar
from haul.pipelines.tracker.flow.model import Interval, cycle_time, status_intervals
from haul.pipelines.tracker.flow.tables import (
    SERVICE,
    FlowSettings,
    issue_histories,
    statuses_of,
)

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]  # no stubs installed

PERCENTILES = (0.5, 0.85, 0.95)
NO_WEEK = -1


def week_of(moment: datetime, calendar: WorkCalendar) -> date:
    """The Monday of the ISO week `moment` falls in, in the calendar's zone."""
    day = calendar.local_day(moment)
    return day - timedelta(days=day.weekday())


def open_week_ends(
    intervals: list[Interval], now: datetime, calendar: WorkCalendar
) -> Iterator[date]:
    """The Mondays of the weeks at whose end the issue was open (see the module docstring)."""
    created = intervals[0].entered_at
    entered = [interval.entered_at for interval in intervals]
    week, last = week_of(created, calendar), week_of(now, calendar)
    while week <= last:
        end = min(calendar.day_start(week + timedelta(days=7)), now)
        index = bisect.bisect_left(entered, end) - 1
        if end > created and index >= 0 and not intervals[index].status.finished:
            yield week
        week += timedelta(days=7)


class WeeklyFacts:
    """What each issue leaves behind for the weekly table: compact columns, and counts."""

    def __init__(self) -> None:
        self.queues: dict[str, int] = {}
        self.queue = array("q")
        self.arrived = array("q")  # the Monday's ordinal
        self.done = array("q")  # the Monday's ordinal, NO_WEEK when not done
        self.cycle = array("d")  # seconds, NaN when none
        self.open: Counter[tuple[int, int]] = Counter()  # (queue, Monday's ordinal) -> issues
        self.staged: dict[int, str] = {}  # queue -> the newest staged_at of its issues

    def add(
        self, queue: str, staged_at: str, intervals: list[Interval], flow: FlowSettings
    ) -> None:
        """Note one issue's arrival, first done, cycle seconds and open week ends."""
        code = self.queues.setdefault(queue, len(self.queues))
        cycle = cycle_time(intervals, flow.cycle)
        if cycle is None:
            return
        calendar = flow.calendar
        self.queue.append(code)
        self.arrived.append(week_of(cycle.created_at, calendar).toordinal())
        done = cycle.done_at
        self.done.append(week_of(done, calendar).toordinal() if done else NO_WEEK)
        seconds = cycle.cycle_seconds
        self.cycle.append(float("nan") if seconds is None else float(seconds))
        for week in open_week_ends(intervals, flow.now, calendar):
            self.open[code, week.toordinal()] += 1
        self.staged[code] = max(self.staged.get(code, staged_at), staged_at)

    def frame(self, last_week: date) -> pd.DataFrame:
        """One row per queue and week from the queue's first arrival to `last_week`."""
        import pandas as pd  # only here: every haul command imports this module

        issues = pd.DataFrame({
            "queue": pd.Series(self.queue, dtype="int64"),
            "arrived": pd.Series(self.arrived, dtype="int64"),
            "done": pd.Series(self.done, dtype="int64"),
            "cycle": pd.Series(self.cycle, dtype="float64"),
        })  # fmt: skip
        if issues.empty:
            return pd.DataFrame()
        arrivals = issues.groupby(["queue", "arrived"]).size().rename("arrivals")
        finished = issues[issues["done"] != NO_WEEK]
        throughput = finished.groupby(["queue", "done"]).size().rename("throughput")
        quantiles = finished.groupby(["queue", "done"])["cycle"].quantile(list(PERCENTILES))
        quantiles = quantiles.unstack().reindex(columns=list(PERCENTILES))
        quantiles.columns = [_percentile_name(q) for q in PERCENTILES]
        weeks = [
            (queue, ordinal)
            for queue, first in issues.groupby("queue")["arrived"].min().items()
            for ordinal in range(int(first), last_week.toordinal() + 1, 7)
        ]
        index = pd.MultiIndex.from_tuples(weeks, names=["queue", "week"])
        table = pd.DataFrame(index=index)
        for series in (arrivals, throughput):
            table[series.name] = series.rename_axis(["queue", "week"]).reindex(index).fillna(0)
        opened = pd.Series(self.open, dtype="int64")
        table["open"] = opened.reindex(index).fillna(0) if not opened.empty else 0
        quantiles = quantiles.rename_axis(["queue", "week"]).reindex(index)
        return table.join(quantiles).reset_index()


def _percentile_name(quantile: float) -> str:
    return f"cycle_p{round(quantile * 100)}_s"


def derive_flow_weekly(context: ExportContext) -> Iterator[Derived]:
    """flow_weekly's rows, a group per queue (its staged_at: its newest issue's)."""
    flow, statuses = FlowSettings.of(context), statuses_of(context)
    facts = WeeklyFacts()
    for history in issue_histories(context):
        if context.withholds("flow_weekly", of_issue(history.issue, context)):
            continue
        intervals = status_intervals(
            history.issue.raw, history.changes, statuses, flow.now, flow.calendar
        )
        facts.add(str(history.queue), history.staged_at, intervals, flow)
    table = facts.frame(week_of(flow.now, flow.calendar))
    names = {code: queue for queue, code in facts.queues.items()}
    for code, weeks in table.groupby("queue", sort=False) if not table.empty else ():
        queue = names[int(code)]
        yield Derived(
            queue, facts.staged[int(code)], [_row(queue, week) for week in weeks.itertuples()]
        )


def _row(queue: str, week: Any) -> dict[str, Any]:
    monday = date.fromordinal(int(week.week))
    iso = monday.isocalendar()
    return {
        "queue_key": queue,
        "week": f"{iso.year}-W{iso.week:02d}",
        "week_start": monday,
        "arrivals": int(week.arrivals),
        "throughput": int(week.throughput),
        "open_at_week_end": int(week.open),
        **{name: _number(getattr(week, name)) for name in map(_percentile_name, PERCENTILES)},
    }


def _number(data: Any) -> float | None:
    return None if data != data else float(data)  # NaN: no cycle time that week


FLOW_WEEKLY = Table("flow_weekly", "changelog", (
    value("queue_key", "string", "the queue: key (an issue counts in its queue now)", "queue_key"),
    value("week", "string", "the ISO week (2024-W05), in [export] timezone", "week"),
    value("week_start", "date", "its Monday", "week_start"),
    value("arrivals", "int", "issues created that week", "arrivals"),
    value("throughput", "int", "issues first done (or cancelled) that week", "throughput"),
    value("open_at_week_end", "int", "issues open at the week's end (the as-of instant in the last week)", "open_at_week_end"),
    value("cycle_p50_s", "float", "median cycle seconds of that week's throughput", "cycle_p50_s"),
    value("cycle_p85_s", "float", "85th percentile of those cycle seconds", "cycle_p85_s"),
    value("cycle_p95_s", "float", "95th percentile of those cycle seconds", "cycle_p95_s"),
), doc=(
    "per queue (an issue's queue now) and ISO week, from the queue's first arrival to the "
    "export's week: arrivals, throughput, open at week end, cycle-time percentiles (pandas)"
), service=SERVICE, derive=derive_flow_weekly)  # fmt: skip
