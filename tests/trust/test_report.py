"""The run report: report.json and report.html beside the store after every run, even a
failed one; the page opens in headless Chromium with its charts drawn."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from trust_fixtures import migrated, run_haul, source_queues, staging_db, tokens_env, write_config

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
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
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert '<svg id="throughput"' in page and '<svg id="counts"' in page
    assert report["rates"]["tracker_source read"][0][1] > 0  # the auto budget's first rate
    assert '<svg id="rates"' in page and 'data-name="tracker_target write"' in page
    assert "<script" not in page and "src=" not in page and "href=" not in page  # offline


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


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (make test installs it as root with apt-get)")
    return found


def test_the_html_report_draws_its_charts_in_chromium(sandbox: Any, tmp_path: Path) -> None:
    chromium = _chromium()
    config, env = migrated(tmp_path, sandbox.info)
    assert run_haul("verify", "--config", config, env=env).returncode == 0
    page = staging_db(tmp_path).parent / "report.html"
    profile = tmp_path / "profile"
    base = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]

    dom = subprocess.run(
        [*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90, check=True
    ).stdout
    shot = tmp_path / "report.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=820,1400", page.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )

    assert '<svg id="counts"' in dom and dom.count('class="bar"') == 3 * 7
    assert '<svg id="throughput"' in dom and '<svg id="rates"' in dom
    assert 'id="verify"' in dom and "The target matches the staged data." in dom
    assert shot.stat().st_size > 10_000
    keep = Path("/tmp/haul-report-screenshot.png")  # for a person to look at
    shutil.copy(shot, keep)


def test_an_interrupted_load_still_writes_a_report(sandbox: Any, tmp_path: Path) -> None:
    import signal

    from trust_fixtures import load_under_way, stop

    try:
        _, _, load = load_under_way(sandbox, tmp_path)
        load.send_signal(signal.SIGTERM)
        stop(load, timeout=60)
    finally:
        sandbox.set_faults("")

    assert load.returncode == 1
    report = json.loads((staging_db(tmp_path).parent / "report.json").read_text(encoding="utf-8"))
    assert report["run"]["command"] == "load" and report["run"]["outcome"] == "interrupted"
    issues = next(row for row in report["counts"] if row["entity"] == "issue")
    assert issues["loaded"] + issues["pending"] == issues["staged"] == 50
    loaded = sum(row["loaded"] for row in report["counts"])
    pending = sum(row["pending"] for row in report["counts"])
    assert loaded > 0 and (pending > 0 or loaded == sum(r["staged"] for r in report["counts"]))


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
