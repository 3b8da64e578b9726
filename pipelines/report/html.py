"""The run report as one self-contained HTML page: inline CSS and SVG charts, nothing fetched.

From the top: the outcome and what to do next; the stages (how long extract, load and verify
took, as a timeline); each service (its entities' counts, its requests per side); the charts
that say something (records loaded per second when the rate moved, records per entity and
outcome when something failed or waits, the rate budgets that moved, one line per service
and direction with its name in a legend below), each with a title and both axes labelled;
verify's result; the failures by cause; the figures as a table; the last runs. The page
reflows to a phone's width: charts scale to it, wide tables scroll inside their box. The raw
figures are report.json's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Any

from haul.pipelines.report import charts
from haul.pipelines.report.charts import Frame
from haul.pipelines.report.counts import COUNTS_CAPTION, shared_budget_phrases

OUTCOMES = (
    ("loaded", "#2e7d32"),
    ("failed", "#c62828"),
    ("pending", "#f9a825"),
    ("undone", "#757575"),  # loaded, then taken back by haul undo
)
# a service's counts, what needs a person first: on a phone the first columns are in view
# (undone only after a haul undo)
COUNT_COLUMNS = ("entity", "failed", "pending", "undone", "loaded", "to_load", "staged")
SERIES_COLOURS = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f")

STYLE = (
    charts.STYLE
    + """
h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right;vertical-align:top}
td:first-child,th:first-child,th.text{text-align:left}
td.text{text-align:left;overflow-wrap:anywhere;min-width:9em}
td.name{text-align:left;white-space:nowrap}
@media (max-width:600px){body{font-size:14px}td,th{padding:2px 4px}}
.ok{color:#2e7d32}.bad{color:#c62828}
code{background:#f3f3f3;padding:1px 4px;overflow-wrap:anywhere}
"""
)


# -- charts ---------------------------------------------------------------------------------


def timeline_svg(stages: list[dict[str, Any]]) -> str:
    """Each stage as a bar from its start to its end, seconds from the first start."""
    starts = [_instant(s["started_at"]) for s in stages]
    ends = [_instant(s["ended_at"]) for s in stages]
    first = min(starts)
    last = max(max(ends) - first, 0.001)
    frame = Frame(0, last, 1, charts.rows_height(len(stages)), charts.LEFT + 10)
    body = []
    for index, (stage, start, end) in enumerate(zip(stages, starts, ends, strict=True)):
        name = stage["stage"]
        body.append(charts.row_label(frame, index, name))
        body.append(charts.hbar(frame, index, start - first, max(end - first, start - first + 1e-9),
                                SERIES_COLOURS[index % 6], f'class="stage" data-stage="{escape(name)}"',
                                f"{name}: {stage['seconds']} s"))  # fmt: skip
    return charts.chart("stages-chart", "the stages over time", frame,
                        "seconds since the first stage began", "stage", body,
                        ("0", f"{round(last, 1):g}"), y_ticks=False)  # fmt: skip


def throughput_svg(points: list[dict[str, Any]]) -> str:
    """Records loaded per second over the run, as a line."""
    top = max(max(p["per_second"] for p in points), 1)
    last = max(points[-1]["second"], 1)
    frame = Frame(0, last, top)
    line = charts.polyline(frame, [(p["second"], p["per_second"]) for p in points], "#1565c0")
    return charts.chart("throughput", "records loaded per second over the run", frame,
                        "seconds since the first record loaded", "records loaded per second",
                        [line], ("0", f"{last:g}"))  # fmt: skip


def rates_svg(lines: list[dict[str, Any]]) -> str:
    """Each rate budget that moved, as a step line; the legend is the figure's, below."""
    top = max(rate for line in lines for _, rate in line["points"]) or 1
    last = max(t for line in lines for t, _ in line["points"]) or 1
    frame = Frame(0, last, top)
    body = [
        charts.steps(frame, line["points"], SERIES_COLOURS[index % 6], _named(line["key"]))
        for index, line in enumerate(lines)
    ]
    return charts.chart("rates", "the rate budgets that moved during the run", frame,
                        "seconds into the run", "requests per second allowed", body,
                        ("0", f"{last:g}"))  # fmt: skip


def _positive(count: Any) -> bool:
    return isinstance(count, int) and count > 0


def _named(name: str) -> str:
    return f' data-name="{escape(name)}"'


def counts_svg(counts: list[dict[str, Any]]) -> str:
    """Loaded, failed and pending per entity, as one stacked horizontal bar each (the entity's
    name to its left, so that no two names meet however many there are)."""
    left = max(round(charts.CHAR * max(len(row["entity"]) for row in counts)) + 14, charts.LEFT)
    top = max(sum(row.get(name, 0) for name, _ in OUTCOMES) for row in counts) or 1
    frame = Frame(0, top, 1, charts.rows_height(len(counts)), left)
    body = []
    for index, row in enumerate(counts):
        entity, at = row["entity"], 0
        body.append(charts.row_label(frame, index, entity))
        for name, colour in OUTCOMES:
            count = row.get(name, 0)
            attrs = f'class="bar" data-entity="{escape(entity)}" data-outcome="{name}"'
            body.append(charts.hbar(frame, index, at, at + count, colour, attrs,
                                    f"{entity} {name}: {count}"))  # fmt: skip
            at += count
    return charts.chart("counts", "records per entity and outcome", frame, "records", "entity",
                        body, ("0", f"{top:g}"), y_ticks=False)  # fmt: skip


def _instant(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


# -- sections ----------------------------------------------------------------------------------


NAMES = frozenset(("entity", "stage", "command", "outcome", "kind"))  # broken only at "_"


def _cell(column: str, value: Any, text: bool) -> str:
    shown = escape("" if value is None else str(value))
    if column in NAMES:  # a long name may break after an underscore (a phone's width)
        return f'<td class="name">{shown.replace("_", "_<wbr>")}</td>'
    return f'<td class="text">{shown}</td>' if text else f"<td>{shown}</td>"


def _table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], ident: str, text: Sequence[str] = ()
) -> str:
    """A table in a box that scrolls sideways when it is wider than the screen; names stay
    whole, `text` columns are left-aligned and break anywhere (keys, reasons)."""
    head = "".join(
        f'<th class="text">{escape(c.replace("_", " "))}</th>'
        if c in text
        else f"<th>{escape(c.replace('_', ' '))}</th>"
        for c in columns
    )
    body = "".join(
        "<tr>" + "".join(_cell(c, row.get(c), c in text) for c in columns) + "</tr>" for row in rows
    )
    return f'<div class="scroll"><table id="{ident}"><tr>{head}</tr>{body}</table></div>'


def _stages(stages: list[dict[str, Any]]) -> str:
    if not stages:
        return '<p id="stages">No stage of this run has a recorded time yet.</p>'
    chart = timeline_svg(stages) if len(stages) > 1 else ""
    table = _table(stages, ["stage", "seconds", "started_at", "ended_at"], "stages", ["stage"])
    return (charts.figure("stages", "Stages over time", chart) if chart else "") + table


def _services(services: list[dict[str, Any]]) -> str:
    parts = []
    for service in services:
        name = escape(service["name"])
        sides = "; ".join(
            f"{side}: {figures.get('requests', 0)} requests, {figures.get('retries', 0)} retries,"
            f" {figures.get('rate_limit_wait_s', 0)} s waited on rate limits"
            + "".join(f", {p}" for p in shared_budget_phrases(figures.get("shared_budget")))
            for side, figures in service["sides"].items()
        )
        parts.append(f'<section class="service" id="service-{name}"><h3>{name}</h3>')
        parts.append(f"<p>{escape(sides or 'No request recorded in this run.')}</p>")
        undone = any(_positive(row.get("undone")) for row in service["counts"])
        columns = [c for c in COUNT_COLUMNS if c != "undone" or undone]
        if service["counts"]:
            parts.append(_table(service["counts"], columns, f"counts-{name}", ["entity"]))
            parts.append(f"<p>{escape(COUNTS_CAPTION)}.</p>")
        parts.append("</section>")
    return "".join(parts) or "<p>No service has anything staged yet.</p>"


def _charts(report: dict[str, Any]) -> str:
    """Only the charts that say something; a sentence for each that would not."""
    parts, said = [], []
    points = report.get("throughput") or []
    if len(points) > 1 and len({p["per_second"] for p in points}) > 1:
        parts.append(
            charts.figure("throughput", "Records loaded per second", throughput_svg(points))
        )
    else:
        said.append("the load's rate did not vary (or nothing was loaded)")
    counts = report.get("counts") or []
    if any(row["failed"] or row["pending"] or row.get("undone") for row in counts):
        shown = [o for o in OUTCOMES if o[0] != "undone" or any(r.get("undone") for r in counts)]
        legend = charts.legend(shown)
        chart = counts_svg(counts)
        parts.append(charts.figure("counts", "Records per entity and outcome", chart, legend))
    else:
        said.append("every planned record is loaded (the counts are in the tables above)")
    lines = [line for line in report.get("rate_lines") or [] if line["varied"]]
    if lines:
        legend = charts.legend(
            [(line["name"], SERIES_COLOURS[i % 6]) for i, line in enumerate(lines)]
        )
        parts.append(charts.figure("rates", "Rate budgets that moved", rates_svg(lines), legend))
    else:
        fixed = ", ".join(
            f"{line['name']} {line['points'][-1][1]:g}/s" for line in report.get("rate_lines") or []
        )
        said.append(f"no rate budget moved ({fixed or 'none recorded'})")
    if said:
        parts.append(
            f'<p id="no-charts">No chart where nothing varied: {escape("; ".join(said))}.</p>'
        )
    return "".join(parts)


def _verify(result: dict[str, Any] | None) -> str:
    if not result:
        return '<div id="verify"><p>haul verify has not been run on this store.</p></div>'
    if result.get("ok"):
        verdict = '<p class="ok">The target matches the staged data.</p>'
    else:
        kinds = ", ".join(f"{k} {n}" for k, n in (result.get("differences_by_kind") or {}).items())
        more = f" ({escape(kinds)})" if kinds else ""
        verdict = (
            f'<p class="bad">{result.get("difference_count")} difference(s){more}; every one is'
            " in verify.csv beside the store.</p>"
        )
    entities = result.get("entities") or []
    compared = [v for v in entities if v.get("compared", True) and v.get("loaded")]
    not_compared = [
        v["entity"] for v in entities if not v.get("compared", True) and v.get("loaded")
    ]
    columns = ["entity", "staged", "loaded", "checked", "found", "differing"]
    parts = [verdict, _table(compared, columns, "verify-table", ["entity"])]
    if not_compared:
        parts.append(
            f"<p>Not compared (haul cannot read them back yet): {escape(', '.join(not_compared))}.</p>"
        )
    shown = (result.get("differences") or [])[:20]
    if shown:
        columns = ["kind", "entity", "source_id", "target_id", "field", "source", "target"]
        parts.append(_table(shown, columns, "differences", columns))
    return f'<div id="verify">{"".join(parts)}</div>'


def _waiting(waiting: list[dict[str, Any]], total: int) -> str:
    """The records that wait for a later run (not failed), each with what it waits for."""
    if not total:
        return '<p id="waiting">No record waits for a later run.</p>'
    more = f" The first {len(waiting)} of {total} are listed." if total > len(waiting) else ""
    return _table(
        waiting, ["entity", "source_id", "reason"], "waiting", ["entity", "source_id", "reason"]
    ) + (
        "<p>Waiting: neither loaded nor failed; each needs a record outside the migration's"
        f" scope so far (a link to a queue not migrated yet), and the run that migrates it"
        f" makes them.{more}</p>"
    )


def _failures(causes: list[dict[str, Any]]) -> str:
    if not causes:
        return '<p id="failures">No record failed.</p>'
    columns = ["stage", "entity", "reason", "count", "waiting"]
    return _table(causes, columns, "failures", ["stage", "entity", "reason"]) + (
        "<p>count: the records that failed for this reason; waiting: the records under them"
        " that could not load because of it. haul failures lists each.</p>"
    )


CHANGES = (
    "created",
    "updated",
    "transitioned",
    "moved",
    "deleted",
    "deleted_at_source",
    "out_of_scope",
)


def _changes(changes: dict[str, dict[str, int]]) -> str:
    """What the run did in the target per entity, and what the source deleted (a sync)."""
    if not changes:
        return '<p id="changes">This run wrote nothing to the target and found nothing deleted.</p>'
    rows = [{"entity": e, **{c: n.get(c, 0) for c in CHANGES}} for e, n in sorted(changes.items())]
    return _table(rows, ["entity", *CHANGES], "changes") + (
        "<p>deleted at source: found deleted at the source by this run's extract; deleted: "
        'removed from the target too ([sync] deletions = "mirror"); out of scope: still at the'
        " source but no longer in the scope (moved out, or no longer matching its query), left"
        " in the target as loaded.</p>"
    )


def _figures(details: dict[str, Any]) -> str:
    rows = [
        {"figure": key, "value": value}
        for key, value in details.items()
        if isinstance(value, str | int | float | bool) or value is None
    ]
    return _table(rows, ["figure", "value"], "figures", ["figure"])


def render_html(report: dict[str, Any]) -> str:
    """The whole page for one report (see `run_report.gather_report`)."""
    run = report["run"]
    command = escape(str(run["command"]))
    said = report.get("headline") or {"text": run["outcome"], "ok": run["outcome"] == "ok"}
    outcome = escape(str(said["text"]))
    outcome_class = "ok" if said["ok"] else "bad"
    error = f" {escape(str(run['error']))}" if run.get("error") else ""
    users = ", ".join(report.get("unmapped_users") or []) or "none"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>haul {command} report</title>
<style>{STYLE}</style></head><body>
<h1 id="headline">haul {command}: <span class="{outcome_class}">{outcome}</span></h1>
<p id="run">Run {run["id"]}, started {escape(str(run["started_at"]))}, ended
{escape(str(run["ended_at"]))} ({run["seconds"]} s).{error}</p>
<h2>Next</h2>
<p id="next">{escape(str(report.get("next") or ""))}</p>
<h2>Stages</h2>
{_stages(report.get("stages") or [])}
<h2>Per service</h2>
{_services(report.get("services") or [])}
<h2>What changed</h2>
{_changes((report.get("details") or {}).get("changes") or {})}
<h2>Charts</h2>
{_charts(report)}
<h2>Verify</h2>
{_verify(report.get("verify"))}
<h2>Failures by cause</h2>
{_failures(report.get("failures_by_reason") or [])}
<h2>Waiting for a later run</h2>
{_waiting(report.get("waiting") or [], int(report.get("waiting_count") or 0))}
<h2>Figures</h2>
<p>Users loaded as the default user: {escape(users)}. Extract problems: {report.get("extract_problems", 0)}. Changes at the source not carried: {report.get("changes_not_carried", 0)}. Kept by haul undo, changed by a person since haul wrote them: {len(report.get("kept_as_changed") or [])} (haul failures names them).</p>
{_figures(report.get("details") or {})}
<h2>Last runs</h2>
{_table(report.get("runs") or [], ["id", "command", "outcome", "seconds", "started_at"], "runs", ["command", "outcome"])}
<p>Every figure of this page is in report.json beside it.</p>
</body></html>
"""
