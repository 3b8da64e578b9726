"""flow.html: the flow model's pictures, one self-contained page (inline CSS and SVG, nothing
fetched) drawn from the export's haul.duckdb, readable on a phone as on a desktop:

- cumulative flow: issues arrived, started and finished by each day (`cycle_times`);
- cycle-time scatter: each finished issue's cycle days by its finish, with the 50/85/95th
  percentile lines;
- throughput run chart: issues finished per ISO week;
- aging work in progress: each issue in progress now, its age against those percentiles;
- WIP per day: issues in progress at each day's end (`issue_daily`);
- the Monte Carlo forecast (`flow_forecast`): how many items by a date, when N items.

Days are in UTC (the file's instants); every number drawn is a query of the file away.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import date, datetime
from html import escape
from typing import Any

import duckdb

from haul.pipelines.export.pages import Page

WIDTH, HEIGHT = 520, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 30, 44
COLOURS = {"arrived": "#90caf9", "started": "#1565c0", "finished": "#2e7d32"}
PERCENTILE_COLOURS = {50: "#2e7d32", 85: "#ef6c00", 95: "#c62828"}
MOST_POINTS = 240  # a line's points at most: long histories are sampled evenly

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em;color:#222;max-width:760px}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.1em;margin:1.4em 0 .3em}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}
svg{width:100%;height:auto;max-width:640px}svg text{font:13px system-ui,sans-serif;fill:#333}
ul.legend{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:.3em 1.2em}
ul.legend span{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:.4em 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}
p.note{color:#555;font-size:.9em}
"""


# -- charts ---------------------------------------------------------------------------------


class Frame:
    """A plot area: x from `first` to `last` (day ordinals), y from 0 to `top`."""

    def __init__(self, first: float, last: float, top: float) -> None:
        self.first, self.last, self.top = first, max(last, first + 1), max(top, 1)

    def xy(self, x: float, y: float) -> tuple[float, float]:
        span_x, span_y = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
        px = LEFT + span_x * (x - self.first) / (self.last - self.first)
        return round(px, 1), round(HEIGHT - BOTTOM - span_y * y / self.top, 1)


def svg(ident: str, title: str, frame: Frame, x_label: str, y_label: str, body: list[str],
        x_ticks: tuple[str, str]) -> str:  # fmt: skip
    """A chart: its title, axes with their labels, end ticks, and `body` inside."""
    bottom = HEIGHT - BOTTOM
    parts = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#888"/>',
        f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#888"/>',
        f'<text class="y-label" x="{LEFT}" y="{TOP - 12}">{escape(y_label)}</text>',
        f'<text class="x-label" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">'
        f"{escape(x_label)}</text>",
        f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{frame.top:g}</text>',
        f'<text x="{LEFT - 6}" y="{bottom}" text-anchor="end">0</text>',
        f'<text x="{LEFT}" y="{bottom + 16}">{escape(x_ticks[0])}</text>',
        f'<text x="{WIDTH - RIGHT}" y="{bottom + 16}" text-anchor="end">{escape(x_ticks[1])}</text>',
        *body,
    ]
    inner = "\n".join(parts)
    return (
        f'<svg id="{ident}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' role="img" aria-label="{escape(title)}">\n<title>{escape(title)}</title>\n{inner}\n</svg>'
    )


def polyline(frame: Frame, points: Sequence[tuple[float, float]], colour: str) -> str:
    """A line through `points` (x, y in the frame's units)."""
    coordinates = " ".join(f"{x},{y}" for x, y in (frame.xy(*p) for p in points))
    return f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="2"/>'


def dots(frame: Frame, points: Sequence[tuple[float, float]], colour: str) -> list[str]:
    """A dot at each of `points`."""
    return [
        f'<circle cx="{x}" cy="{y}" r="2.5" fill="{colour}" fill-opacity=".6"/>'
        for x, y in (frame.xy(*p) for p in points)
    ]


def hline(frame: Frame, y: float, colour: str) -> str:
    """A dashed horizontal line across the plot at `y`."""
    (x1, py), (x2, _) = frame.xy(frame.first, y), frame.xy(frame.last, y)
    return (
        f'<line x1="{x1}" y1="{py}" x2="{x2}" y2="{py}" stroke="{colour}" stroke-dasharray="5 3"/>'
    )


def legend(items: Sequence[tuple[str, str]]) -> str:
    """The names and colours of a chart's series, below it."""
    entries = "".join(
        f'<li><span style="background:{colour}"></span>{escape(name)}</li>'
        for name, colour in items
    )
    return f'<ul class="legend">{entries}</ul>'


def figure(ident: str, caption: str, chart: str, after: str = "") -> str:
    """A chart with its caption (and what follows it, a legend)."""
    return f'<figure id="{ident}-figure"><figcaption>{escape(caption)}</figcaption>{chart}{after}</figure>'


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
    frame = Frame(first, export_day, len(rows))
    body = [
        polyline(frame, [(d, bisect.bisect_right(times, d)) for d in days], COLOURS[name])
        for name, times in series.items()
    ]
    chart = svg("cfd", "issues arrived, started and finished by each day", frame, "day",
                "issues", body, (_iso(first), _iso(export_day)))  # fmt: skip
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
    frame = Frame(points[0][0], points[-1][0], round(max(y for _, y in points) + 0.5))
    body = dots(frame, points, "#1565c0") + [
        hline(frame, v, PERCENTILE_COLOURS[p]) for p, v in lines.items()
    ]
    chart = svg("cycle-scatter", "cycle time of each finished issue, by the day it finished",
                frame, "finished", "cycle days", body,
                (_iso(points[0][0]), _iso(points[-1][0])))  # fmt: skip
    return figure("cycle-scatter", "Cycle time", chart, legend(_percentile_legend(lines)))


def throughput(db: duckdb.DuckDBPyConnection) -> str:
    """Issues finished per ISO week, weeks with none at 0."""
    rows = _rows(db, "SELECT date_trunc('week', done_at)::DATE AS week, count(*) FROM cycle_times "
                     "WHERE done_at IS NOT NULL GROUP BY week ORDER BY week")  # fmt: skip
    counts = {_day(week): count for week, count in rows}
    weeks = list(range(min(counts), max(counts) + 1, 7))
    points = [(week, counts.get(week, 0)) for week in weeks]
    frame = Frame(weeks[0], weeks[-1], max(counts.values()))
    chart = svg("throughput", "issues finished per week", frame, "week", "finished",
                [polyline(frame, points, "#2e7d32"), *dots(frame, points, "#2e7d32")],
                (_iso(weeks[0]), _iso(weeks[-1])))  # fmt: skip
    return figure("throughput", "Throughput per week", chart)


def aging(db: duckdb.DuckDBPyConnection, lines: dict[int, float], as_of: datetime) -> str | None:
    """Each issue in progress at the last day's end, its age since started (None: none)."""
    rows = _rows(db, "SELECT c.issue_key, c.started_at FROM issue_daily d JOIN cycle_times c "
                     "USING (issue_key) WHERE d.stage = 'in_progress' AND c.started_at IS NOT NULL "
                     "AND d.day = (SELECT max(day) FROM issue_daily) ORDER BY c.started_at")  # fmt: skip
    if not rows:
        return None
    ages = [
        (n + 1, (as_of - started).total_seconds() / 86_400) for n, (_, started) in enumerate(rows)
    ]
    top = max([*(age for _, age in ages), *lines.values()])
    frame = Frame(0, len(ages) + 1, round(top + 0.5))
    body = dots(frame, ages, "#6a1b9a") + [
        hline(frame, v, PERCENTILE_COLOURS[p]) for p, v in lines.items()
    ]
    chart = svg("aging", "age of each issue in progress now, oldest first", frame,
                "issues in progress, oldest first", "days since started", body,
                ("1", str(len(ages))))  # fmt: skip
    return figure("aging", "Aging work in progress", chart, legend(_percentile_legend(lines)))


def wip(db: duckdb.DuckDBPyConnection) -> str | None:
    """Issues in progress at each day's end (None: no daily rows)."""
    rows = _rows(db, "SELECT day, count(*) FILTER (stage = 'in_progress') FROM issue_daily "
                     "GROUP BY day ORDER BY day")  # fmt: skip
    if not rows:
        return None
    counts = {_day(day): count for day, count in rows}
    days = sampled(sorted(counts))
    frame = Frame(days[0], days[-1], max(counts.values()))
    chart = svg("wip", "issues in progress at each day's end", frame, "day", "in progress",
                [polyline(frame, [(d, counts[d]) for d in days], "#1565c0")],
                (_iso(days[0]), _iso(days[-1])))  # fmt: skip
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
             aging(db, lines, as_of), wip(db), forecast(db)]  # fmt: skip
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
