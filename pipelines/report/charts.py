"""The one chart kit: inline SVG charts for self-contained pages (nothing fetched), each with
a title, both axes labelled and a legend below; they scale to a phone's width.

    Frame(first, last, top)       a plot area: x from first to last, y from 0 to top
    chart(ident, title, frame, x_label, y_label, body, x_ticks, x_marks=, y_marks=)
                                  the <svg>: axes, their labels, ticks (at the ends, or at
                                  the marks given), `body` inside
    date_marks(first, last)       readable ticks for an axis of days: week, month or year starts
    log_marks(top)                ticks for a log axis of days (see `log_days`)
    polyline / steps / dots / hline / hbar / vbar   marks in a frame's units
    legend(items), figure(ident, caption, chart, after)
    STYLE                         the pages' shared CSS (charts, legends, tables)

Tick labels carry the class `tick`, the axis labels `x-label` and `y-label`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from html import escape
from itertools import pairwise

WIDTH = 520  # the charts' own units: they scale to the page (at most 640 px)
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 30, 44  # plot margins: tick and axis labels live there
ROW = 26  # one bar's row in a horizontal bar chart
CHAR = 7.5  # a label character's width at the charts' font size, to size a left margin
MOST_MARKS = 5  # dated ticks on an axis at most: each label ~8 characters, at a phone's width
Mark = tuple[float, str]  # a tick: where on its axis (in the frame's units), and its label

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em;color:#222;max-width:760px}
h1{font-size:1.4em;margin:.2em 0}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}
svg{width:100%;height:auto;max-width:640px}svg text{font:13px system-ui,sans-serif;fill:#333}
ul.legend{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:.3em 1.2em}
ul.legend span{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:.4em 0}
"""


@dataclass(frozen=True)
class Frame:
    """A plot area: x from `first` to `last`, y from 0 to `top`, in a chart `height` tall
    whose plot starts `left` units in (room for long labels)."""

    first: float
    last: float
    top: float
    height: int = 220
    left: int = LEFT

    def __post_init__(self) -> None:  # an empty range still draws
        object.__setattr__(self, "last", max(self.last, self.first + 1e-9))
        object.__setattr__(self, "top", self.top or 1)

    @property
    def bottom(self) -> int:
        """The y of the x axis."""
        return self.height - BOTTOM

    @property
    def span(self) -> float:
        """The plot's width in the chart's units."""
        return WIDTH - self.left - RIGHT

    def xy(self, x: float, y: float) -> tuple[float, float]:
        """A point in the frame's units, in the chart's."""
        px = self.left + self.span * (x - self.first) / (self.last - self.first)
        return round(px, 1), round(self.bottom - (self.bottom - TOP) * y / self.top, 1)


def chart(
    ident: str,
    title: str,
    frame: Frame,
    x_label: str,
    y_label: str,
    body: Sequence[str],
    x_ticks: tuple[str, str],
    *,
    y_ticks: bool = True,
    x_marks: Sequence[Mark] = (),
    y_marks: Sequence[Mark] = (),
) -> str:
    """A chart: its title, both axes with their labels (y's above the plot, never over its
    tick labels; x's under the x ticks, at the right), ticks, and `body` inside. The x ticks
    are `x_marks` when given (a short line and a label each), else `x_ticks` at the ends; the
    y ticks `y_marks` when given (each with a faint line across), else 0 and the top."""
    left, bottom = frame.left, frame.bottom
    parts = [
        f'<line x1="{left}" y1="{TOP}" x2="{left}" y2="{bottom}" stroke="#888"/>',
        f'<line x1="{left}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#888"/>',
        f'<text class="y-label" x="{left}" y="{TOP - 12}">{escape(y_label)}</text>',
        f'<text class="x-label" x="{WIDTH - RIGHT}" y="{frame.height - 6}" text-anchor="end">'
        f"{escape(x_label)}</text>",
        *(_x_marks(frame, x_marks) if len(x_marks) > 1 else _x_ends(frame, x_ticks)),
    ]
    if y_marks:
        parts += _y_marks(frame, y_marks)
    elif y_ticks:
        parts += [
            f'<text class="tick" x="{left - 6}" y="{TOP + 4}" text-anchor="end">{frame.top:g}</text>',
            f'<text class="tick" x="{left - 6}" y="{bottom}" text-anchor="end">0</text>',
        ]
    inner = "\n".join([*parts, *body])
    return (
        f'<svg id="{ident}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {frame.height}"'
        f' role="img" aria-label="{escape(title)}">\n<title>{escape(title)}</title>\n{inner}\n</svg>'
    )


def _x_ends(frame: Frame, labels: tuple[str, str]) -> list[str]:
    y = frame.bottom + 16
    return [
        f'<text class="tick" x="{frame.left}" y="{y}">{escape(labels[0])}</text>',
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{y}" text-anchor="end">{escape(labels[1])}</text>',
    ]


def _x_marks(frame: Frame, marks: Sequence[Mark]) -> list[str]:
    """A short tick under the axis and a label centred on it (kept inside the chart: the last
    label ends at the chart's right edge when centring would cut it)."""
    parts, bottom = [], frame.bottom
    for x, label in marks:
        px, _ = frame.xy(x, 0)
        room = len(label) * CHAR / 2
        anchor, at = ("end", WIDTH - 2.0) if px + room > WIDTH - 2 else ("middle", px)
        parts += [
            f'<line class="x-tick" x1="{px}" y1="{bottom}" x2="{px}" y2="{bottom + 4}" stroke="#888"/>',
            f'<text class="tick x-mark" x="{at}" y="{bottom + 17}" text-anchor="{anchor}">'
            f"{escape(label)}</text>",
        ]
    return parts


def _y_marks(frame: Frame, marks: Sequence[Mark]) -> list[str]:
    parts = []
    for y, label in marks:
        _, py = frame.xy(frame.first, y)
        parts += [
            f'<line x1="{frame.left}" y1="{py}" x2="{WIDTH - RIGHT}" y2="{py}" stroke="#eee"/>',
            f'<text class="tick y-mark" x="{frame.left - 6}" y="{py + 4}" text-anchor="end">'
            f"{escape(label)}</text>",
        ]
    return parts


def date_marks(first: int, last: int, most: int = MOST_MARKS) -> list[Mark]:
    """Ticks for an axis of day ordinals from `first` to `last`: at most `most`, on the
    first of every 1, 3, 6, 12 or 24... months ("Mar 2024", or "2024" on year steps), or, for
    a span of a few weeks, on Mondays ("Mar 4")."""
    for weeks in (1, 2, 4):
        if (last - first) / (7 * weeks) <= most and last - first < 62:
            monday = first + (-date.fromordinal(first).weekday()) % 7
            days = range(monday, last + 1, 7 * weeks)
            return [(day, _day_label(date.fromordinal(day))) for day in days]
    start = date.fromordinal(first)
    months = 1
    while True:
        marks = []
        index = start.year * 12 + start.month - 1  # months since year 0
        index += -index % months
        while (day := date(index // 12, index % 12 + 1, 1)).toordinal() <= last:
            if day.toordinal() >= first:
                marks.append((float(day.toordinal()), _month_label(day, months)))
            index += months
        if len(marks) <= most:
            return marks
        months = {1: 3, 3: 6, 6: 12}.get(months, months * 2)


def _day_label(day: date) -> str:
    return f"{day:%b} {day.day}"


def _month_label(day: date, months: int) -> str:
    return str(day.year) if months >= 12 else f"{day:%b %Y}"


def log_days(days: float) -> float:
    """A number of days on a log axis: log10(1 + days), so 0 days sits on the axis."""
    return math.log10(1 + max(days, 0))


def log_marks(top_days: float) -> list[Mark]:
    """Ticks for a log axis of days up to `top_days` (values placed with `log_days`)."""
    shown = [step for step in LOG_STEPS if step <= top_days] or [1]
    if len(shown) > 5:  # keep the axis readable: every other step, the largest kept
        shown = shown[(len(shown) + 1) % 2 :: 2]
    return [(log_days(step), LOG_STEPS[step]) for step in shown]


LOG_STEPS = {1: "1 d", 3: "3 d", 7: "1 wk", 14: "2 wk", 30: "1 mo", 90: "3 mo", 180: "6 mo",
             365: "1 yr", 730: "2 yr", 1825: "5 yr", 3650: "10 yr"}  # fmt: skip


def polyline(
    frame: Frame, points: Sequence[tuple[float, float]], colour: str, attrs: str = ""
) -> str:
    """A line through `points` (x, y in the frame's units); `attrs`: more attributes."""
    coordinates = " ".join(f"{x},{y}" for x, y in (frame.xy(*p) for p in points))
    return (
        f'<polyline class="series"{attrs} points="{coordinates}" fill="none" stroke="{colour}"'
        ' stroke-width="2"/>'
    )


def steps(frame: Frame, points: Sequence[tuple[float, float]], colour: str, attrs: str = "") -> str:
    """A step line: each value holds until the next point's x, the last to the frame's end."""
    corners = [points[0]]
    for (_, value), (x, next_value) in pairwise(points):
        corners += [(x, value), (x, next_value)]
    corners.append((frame.last, points[-1][1]))
    return polyline(frame, corners, colour, attrs)


def dots(frame: Frame, points: Sequence[tuple[float, float]], colour: str) -> list[str]:
    """A dot at each of `points`."""
    return [
        f'<circle cx="{x}" cy="{y}" r="2.5" fill="{colour}" fill-opacity=".6"/>'
        for x, y in (frame.xy(*p) for p in points)
    ]


def hline(frame: Frame, y: float, colour: str, attrs: str = "") -> str:
    """A dashed horizontal line across the plot at `y`; `attrs`: more attributes."""
    (x1, py), (x2, _) = frame.xy(frame.first, y), frame.xy(frame.last, y)
    return (
        f'<line{attrs} x1="{x1}" y1="{py}" x2="{x2}" y2="{py}" stroke="{colour}"'
        ' stroke-width="2" stroke-dasharray="5 3"/>'
    )


def vbar(frame: Frame, x: float, width: float, y: float, colour: str, attrs: str, tip: str) -> str:
    """A vertical bar from 0 to `y` over x from `x` to `x + width` (less a sliver between
    bars, at least a unit wide), with its tooltip; `attrs`: its class and data attributes."""
    (x1, top), (x2, base) = frame.xy(x, y), frame.xy(x + width, 0)
    gap = min(1.0, (x2 - x1) / 4)
    return (
        f'<rect {attrs} x="{x1 + gap / 2:.1f}" y="{top}" width="{max(x2 - x1 - gap, 1.0):.1f}"'
        f' height="{max(base - top, 0):.1f}" fill="{colour}"><title>{escape(tip)}</title></rect>'
    )


def row_label(frame: Frame, index: int, label: str) -> str:
    """The name of a horizontal bar chart's row `index`, left of the plot."""
    y = TOP + ROW * index + ROW / 2 + 4
    return (
        f'<text class="tick" x="{frame.left - 6}" y="{y}" text-anchor="end">{escape(label)}</text>'
    )


def hbar(
    frame: Frame, index: int, start: float, end: float, colour: str, attrs: str, tip: str
) -> str:
    """A horizontal bar in row `index` from x `start` to `end` (at least 2 units wide when
    `end` > `start`), with its tooltip; `attrs`: its class and data attributes."""
    (x1, _), (x2, _) = frame.xy(start, 0), frame.xy(end, 0)
    width = max(x2 - x1, 2.0) if end > start else 0.0
    return (
        f'<rect {attrs} x="{x1:.1f}" y="{TOP + ROW * index + 4}" width="{width:.1f}"'
        f' height="{ROW - 8}" fill="{colour}"><title>{escape(tip)}</title></rect>'
    )


def rows_height(rows: int) -> int:
    """A horizontal bar chart's height for `rows` rows."""
    return TOP + BOTTOM + ROW * rows


def legend(items: Sequence[tuple[str, str]]) -> str:
    """The names and colours of a chart's series, below it."""
    entries = "".join(
        f'<li><span style="background:{colour}"></span>{escape(name)}</li>'
        for name, colour in items
    )
    return f'<ul class="legend">{entries}</ul>'


def figure(ident: str, caption: str, chart: str, after: str = "") -> str:
    """A chart with its caption (and what follows it, a legend)."""
    return (
        f'<figure id="{ident}-figure"><figcaption>{escape(caption)}</figcaption>{chart}{after}'
        "</figure>"
    )
