"""The flow model end to end, on the small sandbox org staged by a real `haul extract`: its
invariants checked against the staged tables of the same export, `flow_weekly` recomputed
from `status_intervals`, and `haul.duckdb` holding every table with the files' row counts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from tests.helpers.export_fixtures import Staged, only_folder, stage_sandbox

FINISHED = {"done", "cancelled"}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staged]:
    """The small seeded sandbox org (1 000 issues), staged once for this module."""
    from haul.sandbox.server import start_sandbox

    with start_sandbox(size="small", seed=3) as sandbox:
        # issue_daily from 60 days back: the whole life of an issue open since 2022 is a row
        # a day to now (test_model_definitions checks whole lives on the tiny org)
        model = "[model]\ndaily_since = 60\n"
        yield stage_sandbox(sandbox, tmp_path_factory.mktemp("flow"), sections=model)


@pytest.fixture(scope="module")
def folder(small: Staged) -> Path:
    """One CSV export of it."""
    out = small.directory / "csv"
    done = small.haul("export", "--config", small.config, "--out", out)
    assert done.returncode == 0, done.stderr
    return only_folder(out)


def table(folder: Path, name: str) -> pd.DataFrame:
    frame = pd.read_csv(folder / f"{name}.csv", dtype=str, keep_default_na=False)
    for column in frame.columns:
        if column.endswith("_at") or column in ("valid_from", "valid_to"):
            frame[column] = pd.to_datetime(frame[column].replace("", None), utc=True)
    return frame


def as_of(folder: Path) -> datetime:
    manifest = json.loads((folder / "manifest.json").read_text())
    return datetime.fromisoformat(manifest["model_as_of"])


def whole(moment: Any) -> int:
    return int(pd.Timestamp(moment).timestamp() // 1)


def status_changes(changelog: pd.DataFrame) -> dict[str, int]:
    """Issue -> its status changes in the staged changelog (not the one that made it)."""
    counts: dict[str, int] = {}
    for issue, changes in zip(changelog["issue_key"], changelog["changes"], strict=True):
        for change in json.loads(changes or "[]"):
            moved = change["from"] is not None and change["from"] != change["to"]
            if change["field"] == "status" and moved:
                counts[issue] = counts.get(issue, 0) + 1
    return counts


def test_each_issues_intervals_tile_its_age(folder: Path) -> None:
    """From its creation to the as-of instant without gap or overlap; their seconds add up
    to its age; one more than its status changes; the last open and its current status."""
    issues = table(folder, "issues").set_index("key")
    intervals = table(folder, "status_intervals")
    changes = status_changes(table(folder, "changelog"))
    now = as_of(folder)
    assert set(intervals["issue_key"]) == set(issues.index)
    for key, own in intervals.groupby("issue_key"):
        own = own.sort_values("position", key=lambda p: p.astype(int))
        issue = issues.loc[key]
        assert own["entered_at"].iloc[0] == issue["created_at"], key
        assert own["left_at"].iloc[:-1].tolist() == own["entered_at"].iloc[1:].tolist(), key
        assert pd.isna(own["left_at"].iloc[-1]), key
        assert own["status_key"].iloc[-1] == issue["status_key"], key
        assert len(own) == changes.get(str(key), 0) + 1, key
        age = whole(now) - whole(issue["created_at"])
        assert own["duration_s"].astype(int).sum() == age, key
        business = own["business_s"].astype(int)
        assert (business >= 0).all() and (business <= own["duration_s"].astype(int)).all()


Steps = list[tuple[datetime, str]]  # (entered at, status type), in position order


def steps_of(intervals: pd.DataFrame) -> dict[str, tuple[str, Steps]]:
    """Issue -> its queue and its intervals' (entered at, status type), as plain values."""
    ordered = intervals.assign(order=intervals["position"].astype(int))
    ordered = ordered.sort_values(["issue_key", "order"])
    issues: dict[str, tuple[str, Steps]] = {}
    for row in ordered.itertuples():
        _, steps = issues.setdefault(row.issue_key, (row.queue_key, []))
        steps.append((row.entered_at.to_pydatetime(), row.status_type))
    return issues


def open_just_before(steps: Steps, moment: datetime) -> bool:
    """Whether the issue existed just before `moment` in a status not finished."""
    earlier = [kind for entered, kind in steps if entered < moment]
    return bool(earlier) and earlier[-1] not in FINISHED


def midnight(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time(), UTC)


def last_finish(steps: Steps) -> datetime | None:
    """When the issue entered the finished status it sits in now (None: not finished)."""
    if steps[-1][1] not in FINISHED:
        return None
    index = len(steps) - 1
    while index > 0 and steps[index - 1][1] in FINISHED:
        index -= 1
    return steps[index][0]


def test_daily_rows_cover_each_issues_life(folder: Path) -> None:
    """One row per issue per day from its creation (or daily_since, 60 days back, as
    model_info says) to the export day, or to 30 days after the day it finished, with its
    stage: done in a finished status, todo before any start."""
    daily = table(folder, "issue_daily")
    now = as_of(folder)
    export_day = now.date()
    info = table(folder, "model_info").set_index("setting")["value"]
    since = date.fromisoformat(info["daily_since"])
    assert since == export_day - timedelta(days=60)
    got = daily.groupby("issue_key")["day"].apply(sorted).to_dict()
    finished_lately = False  # some issue finished since daily_since (the seed's last weeks)
    for key, (_, steps) in steps_of(table(folder, "status_intervals")).items():
        finished = last_finish(steps)
        finished_lately |= finished is not None and finished.date() >= since
        last = (
            export_day
            if finished is None
            else min(export_day, finished.date() + timedelta(days=30))
        )
        days, day = [], max(since, steps[0][0].date())
        while day <= last:
            if steps[0][0] < min(midnight(day + timedelta(days=1)), now):
                days.append(day.isoformat())
            day += timedelta(days=1)
        assert got.get(key, []) == days, key
    open_days = daily[daily["stage"] != "done"]
    assert set(open_days["status_type"]) & FINISHED == set()
    assert set(daily[daily["stage"] == "done"]["status_type"]) <= FINISHED
    assert set(daily["stage"]) == {"todo", "in_progress"} | ({"done"} if finished_lately else set())


def recomputed_weekly(intervals: pd.DataFrame, now: datetime) -> pd.DataFrame:
    """flow_weekly from status_intervals alone, by its definition (UTC weeks)."""

    def monday(moment: datetime) -> date:
        return moment.date() - timedelta(days=moment.weekday())

    by_queue: dict[str, list[tuple[Steps, datetime | None, int | None]]] = {}
    for queue, steps in steps_of(intervals).values():
        # cycle = "first": the first start to the first finish after it (or, never started,
        # the first finish)
        started = next((entered for entered, kind in steps if kind == "inProgress"), None)
        finishes = [
            entered
            for (entered, kind), before in zip(steps, [None, *steps], strict=False)
            if kind in FINISHED and (before is None or before[1] not in FINISHED)
        ]
        done = next((at for at in finishes if started is None or at >= started), None)
        cycle = None
        if done is not None and started is not None:
            cycle = whole(done) - whole(started)
        by_queue.setdefault(queue, []).append((steps, done, cycle))
    rows = []
    for queue, issues in sorted(by_queue.items()):
        week = min(monday(steps[0][0]) for steps, _, _ in issues)
        while week <= monday(now):
            start, next_week = midnight(week), midnight(week + timedelta(days=7))
            arrived = [steps for steps, _, _ in issues if start <= steps[0][0] < next_week]
            finished = [cycle for _, done, cycle in issues if done and start <= done < next_week]
            still_open = sum(open_just_before(steps, min(next_week, now)) for steps, _, _ in issues)
            cycles = [cycle for cycle in finished if cycle is not None]
            percentiles = np.percentile(cycles, [50, 85, 95]) if cycles else [None] * 3
            rows.append(
                (queue, week.isoformat(), len(arrived), len(finished), still_open, *percentiles)
            )
            week += timedelta(days=7)
    columns = ["queue_key", "week_start", "arrivals", "throughput", "open_at_week_end",
               "cycle_p50_s", "cycle_p85_s", "cycle_p95_s"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def test_flow_weekly_matches_a_recomputation_from_status_intervals(folder: Path) -> None:
    """Arrivals, throughput, open at week end and the cycle percentiles of every queue and
    week are what status_intervals say."""
    intervals = table(folder, "status_intervals")
    weekly = table(folder, "flow_weekly")
    expected = recomputed_weekly(intervals, as_of(folder))
    assert weekly[["queue_key", "week_start"]].values.tolist() == (
        expected[["queue_key", "week_start"]].values.tolist()
    )
    for column in ("arrivals", "throughput", "open_at_week_end"):
        assert weekly[column].astype(int).tolist() == expected[column].tolist(), column
    for column in ("cycle_p50_s", "cycle_p85_s", "cycle_p95_s"):
        got = pd.to_numeric(weekly[column].replace("", None)).astype(float)
        want = expected[column].astype(float)
        assert np.allclose(got, want, equal_nan=True), column
    assert weekly["arrivals"].astype(int).sum() == intervals["issue_key"].nunique()


def test_cycle_times_agree_with_the_intervals(folder: Path) -> None:
    """One row per issue; lead seconds from creation to done_at (the measured finish)."""
    cycles = table(folder, "cycle_times")
    issues = table(folder, "issues")
    assert sorted(cycles["issue_key"]) == sorted(issues["key"])
    done = cycles[cycles["done_at"].notna()]
    assert len(done) > 0
    lead = done["lead_s"].astype(int)
    assert lead.tolist() == [
        whole(d) - whole(c) for d, c in zip(done["done_at"], done["created_at"], strict=True)
    ]


def test_the_duckdb_file_holds_every_table_with_the_files_row_counts(folder: Path) -> None:
    """DuckDB opens haul.duckdb and finds each exported table, with as many rows as its CSV,
    typed (timestamps with a zone, counts as integers)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    with duckdb.connect(str(folder / "haul.duckdb"), read_only=True) as db:
        names = {row[0] for row in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert names == {entry["table"] for entry in manifest["files"]}
        for name in names:
            csv_rows = len(pd.read_csv(folder / f"{name}.csv", dtype=str))
            (count,) = db.execute(f'SELECT count(*) FROM "{name}"').fetchone()  # type: ignore[misc]
            assert count == csv_rows, name
        types = dict(
            db.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'status_intervals'"
            ).fetchall()
        )
    assert types["entered_at"] == "TIMESTAMP WITH TIME ZONE" and types["duration_s"] == "BIGINT"
