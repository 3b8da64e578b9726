"""The run report as one self-contained HTML page: inline CSS and SVG charts, nothing fetched.

Charts: records loaded per second over the run (`#throughput`), counts per entity and outcome
as grouped bars (`#counts`); then the failure reasons, the verify result and the figures.
"""

from __future__ import annotations

import json
from html import escape
from itertools import pairwise
from typing import Any

OUTCOMES = (("loaded", "#2e7d32"), ("failed", "#c62828"), ("pending", "#f9a825"))
WIDTH, HEIGHT, PAD = 720, 240, 40
LABELS_BELOW = 90  # room under the counts chart for its slanted entity names

STYLE = """
body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:780px}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.ok{color:#2e7d32}.bad{color:#c62828}
svg text{font:11px system-ui,sans-serif;fill:#333}
"""


def _axis(max_value: float, label: str) -> list[str]:
    bottom = HEIGHT - PAD
    return [
        f'<line x1="{PAD}" y1="{PAD / 2}" x2="{PAD}" y2="{bottom}" stroke="#888"/>',
        f'<line x1="{PAD}" y1="{bottom}" x2="{WIDTH - 10}" y2="{bottom}" stroke="#888"/>',
        f'<text x="4" y="{PAD / 2 + 4}">{max_value:g}</text>',
        f'<text x="{WIDTH - 10}" y="{HEIGHT - 8}" text-anchor="end">{escape(label)}</text>',
    ]


def throughput_svg(points: list[dict[str, Any]]) -> str:
    """Records per second over the run, as a polyline with dots."""
    if not points:
        return '<p id="throughput-empty">No record was loaded in this run.</p>'
    top = max(max(p["per_second"] for p in points), 1)
    last = max(points[-1]["second"], 1)
    span_x, span_y = WIDTH - PAD - 10, HEIGHT - 1.5 * PAD

    def xy(point: dict[str, Any]) -> tuple[float, float]:
        x = PAD + span_x * point["second"] / last
        return round(x, 1), round(HEIGHT - PAD - span_y * point["per_second"] / top, 1)

    coords = [xy(point) for point in points]
    parts = _axis(top, f"seconds into the run ({last:g} s)")
    line = " ".join(f"{x},{y}" for x, y in coords)
    parts.append(f'<polyline class="series" points="{line}" fill="none" stroke="#1565c0"/>')
    parts += [f'<circle class="point" cx="{x}" cy="{y}" r="2" fill="#1565c0"/>' for x, y in coords]
    return _svg("throughput", "records loaded per second", parts)


SERIES_COLOURS = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f")


def rates_svg(rates: dict[str, list[list[float]]]) -> str:
    """Each rate budget (requests per second it allowed) over the run, as step lines."""
    if not rates:
        return '<p id="rates-empty">No rate budget changed in this run (fixed budgets).</p>'
    top = max(max(rate for _, rate in points) for points in rates.values()) or 1
    last = max(max(t for t, _ in points) for points in rates.values()) or 1
    span_x, span_y = WIDTH - PAD - 10, HEIGHT - 1.5 * PAD

    def xy(t: float, rate: float) -> str:
        return f"{round(PAD + span_x * t / last, 1)},{round(HEIGHT - PAD - span_y * rate / top, 1)}"

    parts = _axis(top, f"seconds into the run ({last:g} s)")
    for index, (name, points) in enumerate(sorted(rates.items())):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        steps = [xy(*points[0])]
        for (_, rate), (t, next_rate) in pairwise(points):
            steps += [xy(t, rate), xy(t, next_rate)]
        steps.append(xy(last, points[-1][1]))
        parts.append(
            f'<polyline class="series" data-name="{escape(name)}" points="{" ".join(steps)}"'
            f' fill="none" stroke="{colour}"/>'
        )
        parts.append(
            f'<text x="{PAD + 8}" y="{PAD / 2 + 16 + 14 * index}" style="fill:{colour}">'
            f"{escape(name)}</text>"
        )
    return _svg("rates", "requests per second each budget allowed", parts)


def counts_svg(counts: list[dict[str, Any]]) -> str:
    """Loaded, failed and pending per entity, as grouped bars."""
    if not counts:
        return '<p id="counts-empty">Nothing is planned to load yet.</p>'
    top = max(max(row[name] for name, _ in OUTCOMES for row in counts), 1)
    group = (WIDTH - PAD - 10) / len(counts)
    bar = group / (len(OUTCOMES) + 1)
    span_y = HEIGHT - 1.5 * PAD
    parts = _axis(top, "")
    for index, row in enumerate(counts):
        left = PAD + index * group
        for offset, (name, colour) in enumerate(OUTCOMES):
            height = span_y * row[name] / top
            parts.append(
                f'<rect class="bar" data-entity="{escape(row["entity"])}" data-outcome="{name}"'
                f' x="{left + (offset + 0.5) * bar:.1f}" y="{HEIGHT - PAD - height:.1f}"'
                f' width="{bar:.1f}" height="{height:.1f}" fill="{colour}">'
                f"<title>{escape(row['entity'])} {name}: {row[name]}</title></rect>"
            )
        x, y = left + group / 2, HEIGHT - PAD + 12
        parts.append(  # slanted, so that sixteen entities' names do not run into each other
            f'<text class="label" x="{x:.1f}" y="{y}" text-anchor="end"'
            f' transform="rotate(-35 {x:.1f} {y})">{escape(row["entity"])}</text>'
        )
    legend = "".join(
        f'<rect x="{WIDTH - 260 + i * 85}" y="4" width="10" height="10" fill="{c}"/>'
        f'<text x="{WIDTH - 246 + i * 85}" y="13">{n}</text>'
        for i, (n, c) in enumerate(OUTCOMES)
    )
    return _svg("counts", "records per entity and outcome", [*parts, legend], LABELS_BELOW)


def _svg(ident: str, title: str, parts: list[str], below: int = 0) -> str:
    body = "\n".join(parts)
    height = HEIGHT + below
    return (
        f'<svg id="{ident}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}"'
        f' viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">\n'
        f"<title>{escape(title)}</title>\n{body}\n</svg>"
    )


def _table(rows: list[dict[str, Any]], columns: list[str], ident: str) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(row.get(c, '')))}</td>" for c in columns) + "</tr>"
        for row in rows
    )
    return f'<table id="{ident}"><tr>{head}</tr>{body}</table>'


def _verify(result: dict[str, Any] | None) -> str:
    if not result:
        return '<p id="verify">haul verify has not been run on this store.</p>'
    verdict = (
        '<p class="ok">The target matches the staged data.</p>'
        if result.get("ok")
        else f'<p class="bad">{result.get("difference_count")} difference(s); see verify.csv.</p>'
    )
    columns = ["entity", "staged", "loaded", "checked", "found", "differing"]
    return f'<div id="verify">{verdict}{_table(result.get("entities", []), columns, "verify-table")}</div>'


def render_html(report: dict[str, Any]) -> str:
    """The whole page for one report (see `run_report.gather_report`)."""
    run = report["run"]
    outcome_class = "ok" if run["outcome"] == "ok" else "bad"
    failures = report["failures_by_reason"]
    failure_html = (
        _table(failures, ["entity", "reason", "count"], "failures")
        if failures
        else '<p id="failures">No record failed.</p>'
    )
    figures = json.dumps(report["details"], indent=2, default=str)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>haul {escape(str(run["command"]))} report</title>
<style>{STYLE}</style></head><body>
<h1>haul {escape(str(run["command"]))}: <span class="{outcome_class}">{escape(str(run["outcome"]))}</span></h1>
<p>Run {run["id"]}, started {escape(str(run["started_at"]))}, ended {escape(str(run["ended_at"]))}
({run["seconds"]} s). {escape(str(run["error"] or ""))}</p>
<h2>Records loaded per second</h2>
{throughput_svg(report["throughput"])}
<h2>Rate budgets (requests per second allowed)</h2>
{rates_svg(report.get("rates") or {})}
<h2>Records per entity and outcome</h2>
{counts_svg(report["counts"])}
{_table(report["counts"], ["entity", "staged", "loaded", "failed", "pending"], "counts-table")}
<h2>Failure reasons</h2>
{failure_html}
<h2>Verify</h2>
{_verify(report["verify"])}
<h2>Figures</h2>
<p id="requests">Requests: {escape(", ".join(f"{k} {v}" for k, v in report["requests"].items()) or "none recorded")}</p>
<p id="retries">Retries: {escape(", ".join(f"{k} {v}" for k, v in (report.get("retries") or {}).items()) or "none")}; seconds waited on 429s: {escape(", ".join(f"{k} {v}" for k, v in (report.get("rate_limit_waits") or {}).items()) or "none")}</p>
<p>Users loaded as the default user: {escape(", ".join(report["unmapped_users"]) or "none")}</p>
<pre id="figures">{escape(figures)}</pre>
</body></html>
"""
