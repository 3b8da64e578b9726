"""flow.html: written by every export that has a model, self-contained, every chart drawn in
real headless Chromium at a phone's and a desktop's width (skipped, with the reason, without
Chromium); and the forecast's figures redone from haul.duckdb alone with the fixed seed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests.helpers.browser import chromium_path as _chromium
from tests.helpers.browser import laid_out_well as _laid_out_well
from tests.helpers.browser import layout_of as _layout
from tests.helpers.browser import screenshot as _screenshot
from tests.helpers.export_fixtures import only_folder, stage_sandbox

CHARTS = ("cfd", "cycle-scatter", "throughput", "aging", "wip")
DATED = ("cfd", "cycle-scatter", "throughput", "wip")  # charts with an axis of dates
QUEUES = ("queue-DEV", "queue-OPS", "queue-TEST")  # the small multiples, one per queue


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An export of a sandbox as seeded: its last issues finished in the weeks before today."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=1) as sandbox:
        staged = stage_sandbox(sandbox, tmp_path_factory.mktemp("page"))
        out = staged.directory / "out"
        done = staged.haul("export", "--config", staged.config, "--out", out)
        assert done.returncode == 0, done.stdout + done.stderr
        yield only_folder(out)


def test_the_page_is_written_self_contained_with_every_chart(folder: Path) -> None:
    """flow.html is in the folder and the manifest; it fetches nothing (no URL but the SVG
    namespace); it has each chart with a title and both axes, and the forecast table."""
    page = (folder / "flow.html").read_text(encoding="utf-8")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["pages"] == ["flow.html"]
    assert set(re.findall(r"https?://[^\"' )]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert "<script" not in page and "<link" not in page and "<img" not in page
    for chart in CHARTS:
        assert f'<svg id="{chart}"' in page, chart
    assert 'id="forecast"' in page and "<table>" in page


def forecast_by_hand(
    db: duckdb.DuckDBPyConnection,
) -> dict[tuple[str, float], tuple[int, int | None]]:
    """flow_forecast redone from the file by its documented method (flow/forecast.py)."""
    info = dict(db.execute("SELECT setting, value FROM model_info").fetchall())
    export_day = date.fromisoformat(info["export_day"])
    done = [row[0] for row in db.execute(
        "SELECT done_at::DATE FROM cycle_times WHERE done_at IS NOT NULL").fetchall()]  # fmt: skip
    first = export_day - timedelta(days=83)
    samples = np.array([done.count(first + timedelta(days=n)) for n in range(84)])
    open_now = db.execute(
        "SELECT count(*) FROM status_intervals WHERE ongoing AND status_type NOT IN ('done', 'cancelled')"
    ).fetchone()[0]  # type: ignore[index]
    sums = np.random.default_rng(41).choice(samples, size=(10_000, 30)).sum(axis=1)
    rng, reached, total = (
        np.random.default_rng(41),
        np.zeros(10_000, dtype=int),
        np.zeros(10_000, dtype=int),
    )
    for start in range(0, 3_600, 90):
        running = rng.choice(samples, size=(10_000, 90)).cumsum(axis=1) + total[:, None]
        hit = running >= open_now
        newly = hit.any(axis=1) & (reached == 0)
        reached[newly] = start + hit[newly].argmax(axis=1) + 1
        total = running[:, -1]
        if reached.all():
            break
    found = {}
    for c in (0.5, 0.85, 0.95):
        found["items_by_date", c] = (int(np.quantile(sums, 1 - c, method="lower")), 30)
        found["date_for_items", c] = (open_now, int(np.quantile(reached, c, method="higher")))
    return found


def test_the_forecast_is_reproduced_from_the_file_with_its_seed(folder: Path) -> None:
    with duckdb.connect(str(folder / "haul.duckdb"), read_only=True) as db:
        db.execute("SET TimeZone = 'UTC'")
        rows = db.execute("SELECT question, confidence, items, days FROM flow_forecast").fetchall()
        expected = forecast_by_hand(db)
    assert {(q, c): (items, days) for q, c, items, days in rows} == expected
    assert expected["items_by_date", 0.5][0] >= expected["items_by_date", 0.95][0]
    later, sooner = expected["date_for_items", 0.95][1], expected["date_for_items", 0.5][1]
    assert later is not None and sooner is not None and later >= sooner > 0


@pytest.mark.parametrize("width", [390, 1280])
def test_every_chart_renders_and_answers_in_headless_chromium(
    folder: Path, width: int, tmp_path: Path
) -> None:
    """At a phone's width and a desktop's: no text over another, nothing wider than the
    screen, each chart with its title and axis labels. Dated axes carry more ticks than their
    two ends; throughput is bars, per week and per queue on one scale; aging's percentile
    lines stand apart (a log scale: the oldest issue is years old, the percentiles days); the
    forecast of the seeded sandbox is shown, from the seed alone (its last issues finished in
    the weeks before today). A screenshot is kept in /tmp."""
    chromium = _chromium()
    layout = _layout(chromium, folder / "flow.html", width, tmp_path)
    _laid_out_well(layout, width)
    _screenshot(chromium, folder / "flow.html", width, tmp_path)
    charts = {chart["id"]: chart for chart in layout["charts"]}
    assert set(charts) == {*CHARTS, *QUEUES}
    for ident in DATED:
        assert len(charts[ident]["x_marks"]) > 2, charts[ident]
    for ident in ("throughput", *QUEUES):
        assert charts[ident]["bars"] > 0 and charts[ident]["lines"] == 0, charts[ident]
    lines = charts["aging"]["percentiles"]
    assert lines["95"] + 2 < lines["85"] and lines["85"] + 2 < lines["50"], lines
    assert "items finished by" in layout["text"]
    assert "No issue finished in the last" not in layout["text"]
