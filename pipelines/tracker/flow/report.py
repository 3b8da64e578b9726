"""flow.html: the flow model's pictures, one self-contained page (inline CSS and SVG, nothing
fetched) drawn from the export's haul.duckdb, readable on a phone as on a desktop:

- cumulative flow: issues arrived, started and finished by each day (`cycle_times`);
- cycle-time scatter: each finished issue's cycle days by its finish, with the 50/85/95th
  percentile lines;
- throughput: issues finished per ISO week, as bars;
- throughput by queue: the same per queue (`flow_weekly`), small multiples on one scale;
- aging work in progress: each issue in progress now, its age against those percentiles, on
  a log scale (ages run from days to years: on a linear one the percentiles would merge);
- WIP per day: issues in progress at each day's end (`issue_daily`);
- the Monte Carlo forecast (`flow_forecast`): how many items by a date, when N items.

Days are in UTC (the file's instants), their axes ticked on week, month or year starts; every
number drawn is a query of the file away.
"""

from __future__ import annotations

import bisect
from datetime import date, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from haul.pipelines.export.pages import Page
from haul.pipelines.report import charts
from haul.pipelines.report.charts import date_marks, dots, figure, hline, legend, polyline

if TYPE_CHECKING:  # the page is drawn from a connection the export opens
    import duckdb

HEIGHT = 240
SMALL_HEIGHT = 150  # one queue's chart of the small multiples
AGING_HEIGHT = 300  # taller: close percentiles stay apart on its log scale
COLOURS = {"arrived": "#90caf9", "started": "#1565c0", "finished": "#2e7d32"}
PERCENTILE_COLOURS = {50: "#2e7d32", 85: "#ef6c00", 95: "#c62828"}
MOST_POINTS = 240  # a line's points at most: long histories are sampled evenly

STYLE = (
    charts.STYLE
    + """
h2{font-size:1.1em;margin:1.4em 0 .3em}h3{font-size:1em;margin:.8em 0 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}
p.note{color:#555;font-size:.9em}
"""
)


def day_frame(first: float, last: float, top: float) -> charts.Frame:
    """A plot area of this page's charts: x in day ordinals (at least one day), y from 0."""
    return charts.Frame(first, max(last, first + 1), max(top, 1), HEIGHT)


def sampled(days: list[int]) -> list[int]:
    """At most MOST_POINTS of `days`, evenly, the last always kept."""
    step = max(1, -(-len(days) // MOST_POINTS))
    kept = days[::step]
    return kept if kept[-1] == days[-1] else [*kept, days[-1]]


# -- the figures, each from the file ----------------------------------------------------------


def _rows(db: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return db.execute(sql).fetchall()


def _day(moment: datetime | date) -> int:
    return (moment.date() if isinstance(moment, datetime) else moment).toordinal()


def _iso(ordinal: float) -> str:
    return date.fromordinal(int(ordinal)).isoformat()


def cumulative_flow(db: duckdb.DuckDBPyConnection, export_day: int) -> str:
    """Issues arrived, started and finished by each day, to the export day."""
    rows = _rows(db, "SELECT created_at, started_at, done_at FROM cycle_times")
    series = {
        name: sorted(_day(row[n]) for row in rows if row[n] is not None)
        for n, name in enumerate(("arrived", "started", "finished"))
    }
    first = series["arrived"][0]
    days = sampled(list(range(first, export_day + 1)))
    frame = day_frame(first, export_day, len(rows))
    body = [
        polyline(frame, [(d, bisect.bisect_right(times, d)) for d in days], COLOURS[name])
        for name, times in series.items()
    ]
    chart = charts.chart("cfd", "issues arrived, started and finished by each day", frame, "day",
                "issues", body, (_iso(first), _iso(export_day)),
                x_marks=date_marks(first, export_day))  # fmt: skip
    return figure("cfd", "Cumulative flow", chart, legend([(n, COLOURS[n]) for n in series]))


def percentiles(db: duckdb.DuckDBPyConnection) -> dict[int, float]:
    """The 50/85/95th percentiles of the finished cycles, in days."""
    row = db.execute(
        "SELECT quantile_cont(cycle_s, [0.5, 0.85, 0.95]) FROM cycle_times WHERE cycle_s IS NOT NULL"
    ).fetchone()
    values = row[0] if row else None
    return {} if not values else {p: v / 86_400 for p, v in zip((50, 85, 95), values, strict=True)}


def _percentile_legend(lines: dict[int, float]) -> list[tuple[str, str]]:
    return [
        (f"{p}th percentile: {days:.1f} days", PERCENTILE_COLOURS[p]) for p, days in lines.items()
    ]


def cycle_scatter(db: duckdb.DuckDBPyConnection, lines: dict[int, float]) -> str:
    """Each finished issue's cycle days by the day it finished, with percentile lines."""
    rows = _rows(db, "SELECT done_at, cycle_s FROM cycle_times WHERE cycle_s IS NOT NULL "
                     "AND done_at IS NOT NULL ORDER BY done_at")  # fmt: skip
    points = [(_day(done), seconds / 86_400) for done, seconds in rows]
    frame = day_frame(points[0][0], points[-1][0], round(max(y for _, y in points) + 0.5))
    body = dots(frame, points, "#1565c0") + [
        hline(frame, v, PERCENTILE_COLOURS[p], f' data-percentile="{p}"') for p, v in lines.items()
    ]
    chart = charts.chart("cycle-scatter", "cycle time of each finished issue, by the day it finished",
                frame, "finished", "cycle days", body,
                (_iso(points[0][0]), _iso(points[-1][0])),
                x_marks=date_marks(points[0][0], points[-1][0]))  # fmt: skip
    return figure("cycle-scatter", "Cycle time", chart, legend(_percentile_legend(lines)))


def throughput(db: duckdb.DuckDBPyConnection) -> str:
    """Issues finished per ISO week, a bar each, weeks with none at 0."""
    rows = _rows(db, "SELECT date_trunc('week', done_at)::DATE AS week, count(*) FROM cycle_times "
                     "WHERE done_at IS NOT NULL GROUP BY week ORDER BY week")  # fmt: skip
    counts = {_day(week): count for week, count in rows}
    chart = weekly_bars("throughput", "issues finished per week", counts, min(counts),
                        max(counts), HEIGHT)  # fmt: skip
    return figure("throughput", "Throughput per week", chart)


def weekly_bars(
    ident: str, title: str, counts: dict[int, int], first: int, last: int, height: int, top: int = 0
) -> str:
    """A bar per week from the Monday `first` to the Monday `last` (day ordinals), its height
    the week's count (`top`: the y axis's top, when charts share it)."""
    frame = charts.Frame(first, last + 7, max(top, *counts.values(), 1), height)
    body = [
        charts.vbar(frame, week, 7, counts[week], "#2e7d32",
                    f'class="bar" data-week="{_iso(week)}" data-count="{counts[week]}"',
                    f"week of {_iso(week)}: {counts[week]} finished")
        for week in range(first, last + 1, 7) if counts.get(week)
    ]  # fmt: skip
    return charts.chart(ident, title, frame, "week", "finished", body,
                        (_iso(first), _iso(last)), x_marks=date_marks(first, last + 7))  # fmt: skip


def by_queue(db: duckdb.DuckDBPyConnection) -> str | None:
    """Each queue's issues finished per week (`flow_weekly`), one small chart each, all on
    the same weeks and the same scale (None: no weekly rows)."""
    rows = _rows(db, "SELECT queue_key, week_start, throughput FROM flow_weekly "
                     "ORDER BY queue_key, week_start")  # fmt: skip
    if not rows:
        return None
    weeks: dict[str, dict[int, int]] = {}
    for queue, week, count in rows:
        weeks.setdefault(str(queue), {})[_day(week)] = int(count)
    first = min(min(counts) for counts in weeks.values())
    last = max(max(counts) for counts in weeks.values())
    top = max(max(counts.values()) for counts in weeks.values())
    parts = [
        weekly_bars(f"queue-{queue}", f"issues finished per week in {queue}", counts, first,
                    last, SMALL_HEIGHT, top)
        for queue, counts in weeks.items()
    ]  # fmt: skip
    names = "".join(
        f"<h3>{escape(queue)}</h3>{part}" for queue, part in zip(weeks, parts, strict=True)
    )
    return (
        '<figure id="queues-figure"><figcaption>Throughput per week, by queue</figcaption>'
        f'<p class="note">One chart per queue (an issue counts in its queue now), all on the same '
        f"weeks and the same scale (0 to {top} a week).</p>{names}</figure>"
    )


def aging(db: duckdb.DuckDBPyConnection, lines: dict[int, float], as_of: datetime) -> str | None:
    """Each issue in progress at the last day's end, its age since started on a log scale of
    days, with the percentile lines (None: none in progress)."""
    rows = _rows(db, "SELECT c.issue_key, c.started_at FROM issue_daily d JOIN cycle_times c "
                     "USING (issue_key) WHERE d.stage = 'in_progress' AND c.started_at IS NOT NULL "
                     "AND d.day = (SELECT max(day) FROM issue_daily) ORDER BY c.started_at")  # fmt: skip
    if not rows:
        return None
    ages = [(as_of - started).total_seconds() / 86_400 for _, started in rows]
    top = max([*ages, *lines.values(), 1.0])
    frame = charts.Frame(0, len(ages) + 1, charts.log_days(top) * 1.05, AGING_HEIGHT)
    body = dots(frame, [(n + 1, charts.log_days(age)) for n, age in enumerate(ages)], "#6a1b9a")
    body += [
        hline(frame, charts.log_days(v), PERCENTILE_COLOURS[p], f' data-percentile="{p}"')
        for p, v in lines.items()
    ]
    chart = charts.chart("aging", "age of each issue in progress now, oldest first", frame,
                "issues in progress, oldest first", "days since started (log scale)", body,
                ("1", str(len(ages))), y_marks=charts.log_marks(top))  # fmt: skip
    older = sum(age > lines.get(95, top) for age in ages)
    note = (f'<p class="note">{older} of {len(ages)} in progress are older than the 95th '
            "percentile of finished cycles.</p>" if lines else "")  # fmt: skip
    return figure(
        "aging", "Aging work in progress", chart, legend(_percentile_legend(lines)) + note
    )


def wip(db: duckdb.DuckDBPyConnection) -> str | None:
    """Issues in progress at each day's end (None: no daily rows)."""
    rows = _rows(db, "SELECT day, count(*) FILTER (stage = 'in_progress') FROM issue_daily "
                     "GROUP BY day ORDER BY day")  # fmt: skip
    if not rows:
        return None
    counts = {_day(day): count for day, count in rows}
    days = sampled(sorted(counts))
    frame = day_frame(days[0], days[-1], max(counts.values()))
    chart = charts.chart("wip", "issues in progress at each day's end", frame, "day", "in progress",
                [polyline(frame, [(d, counts[d]) for d in days], "#1565c0")],
                (_iso(days[0]), _iso(days[-1])), x_marks=date_marks(days[0], days[-1]))  # fmt: skip
    return figure("wip", "Work in progress per day", chart)


def forecast(db: duckdb.DuckDBPyConnection) -> str:
    """The forecast's rows as sentences with their confidence."""
    rows = _rows(db, "SELECT question, confidence, items, days, date, history_from, history_to "
                     "FROM flow_forecast ORDER BY question DESC, confidence")  # fmt: skip
    if not rows:
        return ('<h2 id="forecast">Forecast</h2><p class="note">No issue finished in the last '
                "84 days: no throughput to forecast from.</p>")  # fmt: skip
    cells = []
    for question, confidence, items, days, when, _, _ in rows:
        what = (f"{items} or more items finished by {when}" if question == "items_by_date"
                else f"{items} items finished by {when or 'more than ten years'}"
                + ("" if days is None else f" ({days} days)"))  # fmt: skip
        cells.append(f"<tr><td>{escape(what)}</td><td>{confidence:.0%}</td></tr>")
    first, last = rows[0][5], rows[0][6]
    return (
        '<h2 id="forecast">Forecast (Monte Carlo)</h2><div class="scroll"><table>'
        "<tr><th>how many, and by when</th><th>confidence</th></tr>"
        + "".join(cells)
        + f'</table></div><p class="note">From the issues finished each day {first} to {last}; '
        "10 000 runs with a fixed seed (table flow_forecast).</p>"
    )


def render_flow(db: duckdb.DuckDBPyConnection) -> str | None:
    """The page, or None when the file has no finished cycle to draw."""
    names = {row[0] for row in _rows(db, "SELECT table_name FROM duckdb_tables()")}
    if not {"cycle_times", "issue_daily", "flow_forecast", "model_info"} <= names:
        return None
    info = dict(_rows(db, "SELECT setting, value FROM model_info"))
    if not _rows(
        db, "SELECT 1 FROM cycle_times WHERE cycle_s IS NOT NULL AND done_at IS NOT NULL LIMIT 1"
    ):
        return None
    as_of = datetime.fromisoformat(info["as_of"])
    lines = percentiles(db)
    export_day = date.fromisoformat(info["export_day"]).toordinal()
    parts = [cumulative_flow(db, export_day), cycle_scatter(db, lines), throughput(db),
             by_queue(db) if "flow_weekly" in names else None, aging(db, lines, as_of), wip(db), forecast(db)]  # fmt: skip
    body = "\n".join(part for part in parts if part)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>haul: how work flowed</title><style>{STYLE}</style></head><body>"
        f'<h1>How work flowed</h1><p class="note">As of {escape(info["as_of"])}, '
        f"cycle = {escape(info['cycle'])}; days in UTC; every figure is in haul.duckdb.</p>"
        f"{body}</body></html>"
    )


FLOW_PAGE = Page("flow.html", render_flow)
