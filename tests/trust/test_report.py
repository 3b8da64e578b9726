"""The run report: report.json and report.html beside the store after every run, even a
failed one; the page opens in headless Chromium with its charts drawn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.browser import chromium_path as _chromium
from tests.helpers.browser import laid_out_well as _laid_out_well
from tests.helpers.browser import layout_of as _layout
from tests.helpers.browser import screenshot as _screenshot
from tests.helpers.trust_fixtures import (
    migrated,
    run_haul,
    source_queues,
    staging_db,
    tokens_env,
    wait_for,
    write_config,
)


def test_a_run_writes_both_reports(sandbox: Any, tmp_path: Path) -> None:
    migrated(tmp_path, sandbox.info)
    folder = staging_db(tmp_path).parent

    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))

    assert report["run"]["command"] == "run" and report["run"]["outcome"] == "ok"
    issues = next(row for row in report["counts"] if row["entity"] == "issue")
    assert issues["loaded"] == issues["staged"] == 50
    assert report["throughput"] and sum(p["per_second"] for p in report["throughput"]) > 0
    assert report["failures_by_reason"] == []
    assert report["requests"]["tracker_source_requests"] > 0
    assert report["requests"]["tracker_target_requests"] > 0
    assert report["rates"]["tracker_source read"][0][1] > 0  # the auto budget's first rate
    assert [stage["stage"] for stage in report["stages"]] == ["extract", "load"]
    assert all(stage["seconds"] >= 0 for stage in report["stages"])
    tracker = next(s for s in report["services"] if s["name"] == "tracker")
    assert tracker["sides"]["target"]["requests"] > 0
    names = {line["name"] for line in report["rate_lines"]}
    assert "tracker target, writes" in names and "tracker source, reads" in names
    assert report["next"] == "everything staged is loaded: run haul verify to compare the target"
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert '<svg id="stages-chart"' in page and 'id="next"' in page
    assert 'id="service-tracker"' in page
    moved = [line for line in report["rate_lines"] if line["varied"]]
    assert ('<svg id="rates"' in page) == bool(moved)
    assert bool(moved) or "no rate budget moved" in page
    assert "<pre" not in page and '"tracker_source_requests":' not in page  # no raw JSON
    assert "<script" not in page and "src=" not in page and "href=" not in page  # offline


def test_the_headline_says_what_verify_found_after_the_run(sandbox: Any, tmp_path: Path) -> None:
    """A run that loaded everything, then a verify that finds a worklog deleted in the target
    (a loss: the worklog missing, and its issue's time spent short of the source's; a person's
    edit there would be the target's own, no difference that fails):
    report.json, report.html and `haul status` all say the run is not ok, and why."""
    from tests.helpers.trust_fixtures import loaded_rows, target_call

    info = sandbox.info
    config, env = migrated(tmp_path, info)
    _, worklog_id, issue_key = loaded_rows(tmp_path, "worklog")[0]
    target_call(info, "DELETE", f"/issues/{issue_key}/worklog/{worklog_id}")

    verified = run_haul("verify", "--config", config, env=env)
    status = run_haul("status", "--config", config, env=env)

    assert verified.returncode == 3, verified.stdout + verified.stderr
    folder = staging_db(tmp_path).parent
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    said = "done, but verify found 2 difference(s)"
    assert report["headline"] == {"text": said, "ok": False}
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert f'<h1 id="headline">haul run: <span class="bad">{said}</span></h1>' in page
    assert "verify after the last run: 2 difference(s)" in status.stdout
    assert "next: haul verify found 2 difference(s)" in status.stdout


def test_the_headline_is_ok_only_when_nothing_failed_and_verify_matched() -> None:
    """Failed records or verify differences make the headline bad news (the exit status is 3);
    a stopped run shows its outcome; a verify from before the run says nothing of it."""
    from haul.pipelines.commands.demo import demo_status
    from haul.pipelines.commands.status import verify_after
    from haul.pipelines.report.run import Headline, headline

    matched = {"ok": True, "difference_count": 0, "ended_at": "2026-01-02T00:00:00"}
    differs = {"ok": False, "difference_count": 4, "ended_at": "2026-01-02T00:00:00"}
    assert headline("ok", 0, None) == Headline("ok", ok=True)
    assert headline("ok", 0, matched) == Headline("ok, verified", ok=True)
    assert headline("ok", 0, differs) == Headline("done, but verify found 4 difference(s)", False)
    assert headline("ok", 2, differs).text == (
        "done, but 2 record(s) failed and verify found 4 difference(s)"
    )
    assert headline("interrupted", 0, matched) == Headline("interrupted", ok=False)
    assert demo_status(True, headline("ok", 0, differs)) == 3  # the demo exits as verify does
    assert demo_status(True, headline("ok", 0, matched)) == 0
    assert demo_status(False, headline("ok", 0, matched)) == 1
    assert verify_after(differs, "2026-01-03T00:00:00") is None
    assert verify_after(differs, "2026-01-01T00:00:00") == differs


def test_a_failed_extract_still_writes_a_report(sandbox: Any, tmp_path: Path) -> None:
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    sandbox.set_faults("error_object:1.0@*/links")
    try:
        done = run_haul("extract", "--config", config, env=tokens_env(info["tokens"]["admin"]))
    finally:
        sandbox.set_faults("")

    assert done.returncode == 3, done.stderr
    report = json.loads((staging_db(tmp_path).parent / "report.json").read_text(encoding="utf-8"))
    assert report["run"]["command"] == "extract"
    assert report["extract_problems"] > 0


def _every_chart() -> dict[str, Any]:
    """A report with something in every chart: stages, a varying load, a budget that moved
    (twelve lines recorded, two moved), failures and pending records, verify differences."""
    from haul.pipelines.report.parts import rate_lines

    details = {
        f"{service}_{side}_rate_history": {"read": [[0.0, 50.0]], "write": [[0.0, 20.0]]}
        for service in ("tracker", "wiki", "forms")
        for side in ("source", "target")
    }
    details["tracker_target_rate_history"] = {
        "read": [[0.0, 50.0], [12.0, 35.0], [40.0, 45.0]],
        "write": [[0.0, 20.0], [9.5, 8.0], [30.0, 14.0]],
    }
    counts = [
        {"entity": name, "staged": 120, "loaded": 100 - i, "failed": i, "pending": 20}
        for i, name in enumerate(("issue", "comment", "comment_attachment", "backfill_attachment"))
    ]
    return {
        "run": {"id": 7, "command": "run", "outcome": "failed", "error": "3 records failed",
                "started_at": "2026-01-01T00:00:00.000+00:00",
                "ended_at": "2026-01-01T00:01:00.000+00:00", "seconds": 60.0},
        "counts": counts,
        "details": {"issues_staged": 120, "tracker_target_requests": 900},
        "requests": {}, "retries": {}, "rate_limit_waits": {}, "rates": {},
        "unmapped_users": ["someone-gone"],
        "extract_problems": 0,
        "failures_by_reason": [
            {"stage": "load", "entity": "issue", "count": 1, "waiting": 12,
             "reason": "PlannedConflict: NEW-2 is taken by an issue haul did not make: 'x'"},
        ],
        "throughput": [{"second": s, "per_second": (s * 7) % 23} for s in range(0, 60, 2)],
        "verify": {"ok": False, "difference_count": 2,
                   "differences_by_kind": {"cell": 1, "field": 1},
                   "entities": [{"entity": "backfill_grid_rows", "staged": 1, "loaded": 1,
                                 "checked": 1, "found": 1, "differing": 1, "compared": True}],
                   "differences": [
                       {"kind": "cell", "entity": "backfill_grid_rows", "source_id": "s1",
                        "target_id": "g1", "field": "cell row 1, column comment",
                        "source": "fine", "target": "changed by hand"}]},
        "stages": [
            {"stage": "extract", "started_at": "2026-01-01T00:00:00.000+00:00",
             "ended_at": "2026-01-01T00:00:20.000+00:00", "seconds": 20.0},
            {"stage": "load", "started_at": "2026-01-01T00:00:20.000+00:00",
             "ended_at": "2026-01-01T00:01:00.000+00:00", "seconds": 40.0},
            {"stage": "verify", "started_at": "2026-01-01T00:01:05.000+00:00",
             "ended_at": "2026-01-01T00:01:15.000+00:00", "seconds": 10.0},
        ],
        "runs": [{"id": 7, "command": "run", "outcome": "failed", "seconds": 60.0,
                  "started_at": "2026-01-01T00:00:00.000+00:00"}],
        "services": [{"name": "tracker", "counts": counts,
                      "sides": {"target": {"requests": 900, "retries": 3}}}],
        "rate_lines": rate_lines(details),
        "next": "3 records failed: run haul failures",
    }  # fmt: skip


def test_the_layout_check_sees_overlapping_text(tmp_path: Path) -> None:
    """The check the report's browser test relies on finds two texts drawn over each other."""
    chromium = _chromium()
    page = tmp_path / "overlap.html"
    page.write_text(
        '<p style="position:absolute;top:10px;left:10px">first words</p>'
        '<p style="position:absolute;top:12px;left:14px">second words</p>'
        "<p>" + "filler text " * 30 + "</p>",
        encoding="utf-8",
    )

    layout = _layout(chromium, page, 390, tmp_path)

    assert layout["overlaps"] and "first words | second words" in layout["overlaps"]


def test_the_html_report_reads_well_on_a_phone_and_a_desktop(sandbox: Any, tmp_path: Path) -> None:
    """After a run and a verify through the CLI, and for a report with every chart: no two
    texts overlap at 390 px or 1280 px, nothing is wider than the screen, every chart has a
    title and both axis labels, twelve recorded budgets draw only the two that moved, each
    named, the counts' failed and pending columns are in view at 390 px without scrolling;
    screenshots are kept in /tmp."""
    from haul.pipelines.report.html import render_html

    chromium = _chromium()
    config, env = migrated(tmp_path, sandbox.info)
    assert run_haul("verify", "--config", config, env=env).returncode == 0
    page = staging_db(tmp_path).parent / "report.html"
    rich = tmp_path / "every-chart.html"
    rich.write_text(render_html(_every_chart()), encoding="utf-8")

    columns = {}
    for width in (390, 1280):
        real, full = (_layout(chromium, p, width, tmp_path) for p in (page, rich))
        _laid_out_well(real, width)
        _laid_out_well(full, width)
        _screenshot(chromium, page, width, tmp_path)
        _screenshot(chromium, rich, width, tmp_path)
        columns[width] = full["columns"]["counts-tracker"]

    assert "The target matches the staged data." in real["text"]
    assert "nothing: everything staged is loaded and haul verify found" in real["text"]
    assert "verify" in [line.split("\t")[0] for line in real["text"].splitlines()]
    charts = {chart["id"] for chart in full["charts"]}
    assert charts == {"stages-chart", "throughput", "counts", "rates"}
    assert {"entity", "failed", "pending"} <= set(columns[390]), columns  # in view unscrolled
    assert "tracker target, writes" in full["text"] and "wiki source, reads" not in full["text"]
    assert "cell row 1, column comment" in full["text"]


def test_after_undo_the_report_counts_the_records_undone(sandbox: Any, tmp_path: Path) -> None:
    """A run, then `haul undo`: report.json and report.html count what undo took back as
    undone, no longer loaded (the issues, which the API cannot delete, stay loaded); on a
    phone the counts' failed, pending and undone columns are in view, before those that
    scroll."""
    chromium = _chromium()
    config, env = migrated(tmp_path, sandbox.info)
    undone = run_haul("undo", "--yes", "--config", config, env=env)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    folder = staging_db(tmp_path).parent

    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    counts = {row["entity"]: row for row in report["counts"]}
    assert report["run"]["command"] == "undo"
    assert counts["comment"]["undone"] == counts["comment"]["to_load"] > 0
    assert counts["comment"]["loaded"] == 0
    assert counts["issue"]["undone"] == 0 and counts["issue"]["loaded"] == 50
    page = folder / "report.html"
    for width in (390, 1280):
        layout = _layout(chromium, page, width, tmp_path)
        _laid_out_well(layout, width)
        _screenshot(chromium, page, width, tmp_path)
        columns = layout["columns"]["counts-tracker"]
        assert {"entity", "failed", "pending", "undone"} <= set(columns), columns
    charts = {chart["id"]: chart for chart in layout["charts"]}
    assert "counts" in charts  # the records undone, drawn per entity


def test_an_interrupted_load_still_writes_a_report(sandbox: Any, tmp_path: Path) -> None:
    import signal

    from tests.helpers.cli_fixtures import asked_to_stop
    from tests.helpers.trust_fixtures import HELD, load_under_way, stop

    try:
        _, _, load = load_under_way(sandbox, tmp_path)
        load.send_signal(signal.SIGTERM)
        wait_for(lambda: asked_to_stop(staging_db(tmp_path)), 60, "the load to be asked to stop")
        sandbox.release(HELD)  # the comments in flight are imported; nothing new starts
        stop(load, timeout=60)
    finally:
        sandbox.set_faults("")

    assert load.returncode == 1
    report = json.loads((staging_db(tmp_path).parent / "report.json").read_text(encoding="utf-8"))
    assert report["run"]["command"] == "load" and report["run"]["outcome"] == "interrupted"
    issues = next(row for row in report["counts"] if row["entity"] == "issue")
    assert issues["loaded"] + issues["pending"] == issues["to_load"] == 50
    loaded = sum(row["loaded"] for row in report["counts"])
    pending = sum(row["pending"] for row in report["counts"])
    assert loaded > 0 and (pending > 0 or loaded == sum(r["to_load"] for r in report["counts"]))


def test_retries_and_rate_limit_waits_are_in_the_report(sandbox: Any, tmp_path: Path) -> None:
    """A night with 429s: the report counts the retries and the seconds waited on them."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=["DEV"])
    sandbox.set_faults("429:0.1:1@*/comments")
    try:
        done = run_haul("extract", "--config", config, env=tokens_env(info["tokens"]["admin"]))
    finally:
        sandbox.set_faults("")
    assert done.returncode == 0, done.stderr
    report = json.loads((staging_db(tmp_path).parent / "report.json").read_text(encoding="utf-8"))
    assert report["retries"]["tracker_source_retries"] > 0
    assert report["rate_limit_waits"]["tracker_source_rate_limit_wait_s"] >= 1.0
    page = (staging_db(tmp_path).parent / "report.html").read_text(encoding="utf-8")
    assert "tracker_source_retries" in page
