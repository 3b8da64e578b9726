"""flow_forecast: a Monte Carlo forecast over past throughput, reproducible from haul.duckdb.

The method, so anyone can redo it from the file (`cycle_times.done_at`, `model_info`):
1. samples: the issues finished (`done_at`, in the model's time zone) on each of the
   `HISTORY_DAYS` days up to and including the export day;
2. `numpy.random.default_rng(SEED)`; `RUNS` runs, each drawing one sample per future day
   with `rng.choice(samples, size=(RUNS, days))`;
3. items by a date: each run's sum over `forecast_days` days; at confidence c the number
   of items at least that many runs reach: `numpy.quantile(sums, 1 - c, method="lower")`;
4. when N items (the issues not finished now, or `[model] forecast_items`): with a fresh
   `default_rng(SEED)`, blocks of `rng.choice(samples, size=(RUNS, BLOCK_DAYS))` (up to
   `MAX_DAYS` days), the first day each run's running sum reaches N; at confidence c,
   `numpy.quantile(days, c, method="higher")`, as a date after the export day (empty when
   some run never gets there).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import date, timedelta
from typing import Any

from haul.pipelines.export.columns import value
from haul.pipelines.export.tables import Derived, ExportContext, Table
from haul.pipelines.tracker.export_columns import of_issue
from haul.pipelines.tracker.flow.model import cycle_time, status_intervals
from haul.pipelines.tracker.flow.tables import (
    SERVICE,
    FlowSettings,
    issue_histories,
    statuses_of,
)

SEED = 41
RUNS = 10_000
HISTORY_DAYS = 84  # twelve weeks of daily throughput
BLOCK_DAYS = 90
MAX_DAYS = 3_600  # forty blocks: about ten years
CONFIDENCES = (0.5, 0.85, 0.95)


def items_by(samples: Sequence[int], days: int) -> dict[float, int]:
    """Confidence -> the items finished within `days` days at least that share of runs."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    sums = rng.choice(np.asarray(samples), size=(RUNS, days)).sum(axis=1)
    return {c: int(np.quantile(sums, 1 - c, method="lower")) for c in CONFIDENCES}


def days_until(samples: Sequence[int], items: int) -> dict[float, int | None]:
    """Confidence -> the days within which `items` are finished in that share of runs (None
    when some run never gets there within MAX_DAYS). Drawn a block of days at a time, so
    memory holds RUNS x BLOCK_DAYS draws."""
    import numpy as np

    if items <= 0:
        return dict.fromkeys(CONFIDENCES, 0)
    rng = np.random.default_rng(SEED)
    reached_on = np.zeros(RUNS, dtype=np.int64)  # 0: not yet
    total = np.zeros(RUNS, dtype=np.int64)
    for start in range(0, MAX_DAYS, BLOCK_DAYS):
        running = rng.choice(np.asarray(samples), size=(RUNS, BLOCK_DAYS)).cumsum(axis=1)
        running += total[:, None]
        hit = running >= items
        newly = hit.any(axis=1) & (reached_on == 0)
        reached_on[newly] = start + hit[newly].argmax(axis=1) + 1
        total = running[:, -1]
        if reached_on.all():
            return {c: int(np.quantile(reached_on, c, method="higher")) for c in CONFIDENCES}
    return dict.fromkeys(CONFIDENCES, None)


def derive_forecast(context: ExportContext) -> Iterator[Derived]:
    """The forecast's rows: items by the date `forecast_days` ahead, and when N items."""
    flow, statuses = FlowSettings.of(context), statuses_of(context)
    first = flow.export_day - timedelta(days=HISTORY_DAYS - 1)
    finished: Counter[date] = Counter()
    open_now, staged = 0, ""
    for history in issue_histories(context):
        if context.withholds("flow_forecast", of_issue(history.issue, context)):
            continue
        raw = history.issue.raw
        intervals = status_intervals(raw, history.changes, statuses, flow.now, flow.calendar)
        cycle = cycle_time(intervals, flow.cycle)
        if cycle is not None and cycle.done_at is not None:
            finished[flow.calendar.local_day(cycle.done_at)] += 1
        open_now += bool(intervals) and not intervals[-1].status.finished
        staged = max(staged, history.staged_at)
    samples = [finished[first + timedelta(days=n)] for n in range(HISTORY_DAYS)]
    model = flow.model
    items = model.forecast_items if model.forecast_items is not None else open_now
    rows = _rows(samples, flow.export_day, model.forecast_days, items)
    yield Derived("forecast", staged, rows)


def _rows(samples: list[int], export_day: date, days: int, items: int) -> list[dict[str, Any]]:
    base = {"history_from": export_day - timedelta(days=HISTORY_DAYS - 1), "history_to": export_day,
            "history_finished": sum(samples), "seed": SEED, "runs": RUNS}  # fmt: skip
    if not any(samples):  # nothing finished lately: no forecast to make
        return []
    by_date = items_by(samples, days)
    until = days_until(samples, items)
    rows = []
    for confidence in CONFIDENCES:
        rows.append({**base, "question": "items_by_date", "confidence": confidence,
                     "items": by_date[confidence], "days": days,
                     "date": export_day + timedelta(days=days)})  # fmt: skip
        span = until[confidence]
        rows.append({**base, "question": "date_for_items", "confidence": confidence,
                     "items": items, "days": span,
                     "date": None if span is None else export_day + timedelta(days=span)})  # fmt: skip
    return rows


FLOW_FORECAST = Table("flow_forecast", "changelog", (
    value("question", "string", "items_by_date (how many finished by `date`) or date_for_items (when `items` are finished)", "question"),
    value("confidence", "float", "the share of runs that do at least as well (0.5, 0.85, 0.95)", "confidence"),
    value("items", "int", "items finished (items_by_date) or to finish (date_for_items)", "items"),
    value("days", "int", "days after the export day (empty: more than ten years)", "days"),
    value("date", "date", "the export day plus days", "date"),
    value("history_from", "date", "the first day of the throughput sampled", "history_from"),
    value("history_to", "date", "its last day (the export day)", "history_to"),
    value("history_finished", "int", "the issues finished in those days", "history_finished"),
    value("seed", "int", "numpy.random.default_rng's seed", "seed"),
    value("runs", "int", "the Monte Carlo runs", "runs"),
), doc=(
    "a Monte Carlo forecast over the daily throughput of the last 84 days (cycle_times.done_at): "
    "items finished by a date, and when the open items (or [model] forecast_items) are finished, "
    "at 50/85/95% confidence; fixed seed, so the file reproduces it"
), service=SERVICE, derive=derive_forecast)  # fmt: skip
