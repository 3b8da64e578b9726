"""The flow model's definitions as config (`[model]`): which statuses start and finish work,
how a reopened issue's cycle counts, business time less a holiday calendar (checked against
an independent day-by-day count), `model_info`, and the analysts' queries of docs/how-to/exports.md run against a real
export."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import holidays
import pytest

from haul.pipelines.config import ConfigError, load_config
from haul.pipelines.config.model import Model
from haul.pipelines.export.command import ExportRequest, run_export
from haul.pipelines.export.errors import ExportOptionError
from haul.pipelines.registry import services
from haul.pipelines.tracker.flow.calendar import DaysOff, WorkCalendar
from haul.pipelines.tracker.flow.model import Interval, StatusInfo, cycle_time
from haul.pipelines.tracker.flow.settings_check import model_findings
from haul.pipelines.tracker.flow.tables import defined
from haul.state.store import StagingStore
from tests.helpers.docs_pages import doc
from tests.helpers.export_fixtures import Staged, only_folder, stage_sandbox

EXPORTS_PAGE = doc("how-to/exports.md")
OPEN = StatusInfo("open", "Open", "new")
WORK = StatusInfo("inProgress", "In progress", "inProgress")
REVIEW = StatusInfo("inReview", "In review", "inProgress")
DONE = StatusInfo("resolved", "Resolved", "done")


def day(number: int, hour: int = 0) -> datetime:
    return datetime(2024, 3, number, hour, tzinfo=UTC)


def intervals(*steps: tuple[datetime, StatusInfo]) -> list[Interval]:
    """Intervals of (entered at, status) steps, the last one open."""
    found = []
    for position, (entered, status) in enumerate(steps):
        left = steps[position + 1][0] if position + 1 < len(steps) else None
        found.append(Interval(position, status, entered, left, 0, 0))
    return found


# open 1st, work 2nd, done 6th (4 days), reopened 20th, work 25th, done 31st (6 days)
REOPENED = intervals(
    (day(1), OPEN), (day(2), WORK), (day(6), DONE), (day(20), OPEN), (day(25), WORK),
    (day(31), DONE),
)  # fmt: skip


@pytest.mark.fast
@pytest.mark.parametrize(
    ("mode", "days", "done"), [("first", 4, day(6)), ("last", 29, day(31)), ("sum", 10, day(31))]
)
def test_a_reopened_issues_cycle_follows_the_mode(mode: str, days: int, done: datetime) -> None:
    """first: the first cycle (4 days); last: first start to last finish (29); sum: both
    cycles (4 + 6). Lead time runs to the mode's finish; one reopen, two cycles."""
    cycle = cycle_time(REOPENED, mode)  # type: ignore[arg-type]
    assert cycle is not None
    assert cycle.cycle_seconds == days * 86_400
    assert cycle.done_at == done and cycle.lead_seconds == (done - day(1)) // timedelta(seconds=1)
    assert (cycle.cycles, cycle.reopened) == (2, 1)


@pytest.mark.fast
def test_a_reopened_issue_open_now_has_no_last_or_sum_cycle() -> None:
    """Reopened and not finished again: "first" keeps its first cycle, "last" and "sum"
    wait for the last finish."""
    still_open = REOPENED[:-1]
    assert cycle_time(still_open, "first").cycle_seconds == 4 * 86_400  # type: ignore[union-attr]
    for mode in ("last", "sum"):
        cycle = cycle_time(still_open, mode)  # type: ignore[arg-type]
        assert cycle is not None and cycle.cycle_seconds is None and cycle.done_at is None


@pytest.mark.fast
def test_start_and_finish_statuses_chosen_by_key_replace_the_types() -> None:
    """With start_statuses = ["inReview"], work starts at review, not at inProgress; a key
    the dictionary lacks (a renamed status) is defined all the same."""
    statuses = {s.key: s for s in (OPEN, WORK, REVIEW, DONE)}
    model = Model(start_statuses=("inReview",), finish_statuses=("resolved", "gone"))
    chosen = defined(statuses, model)
    assert [key for key, s in chosen.items() if s.started] == ["inReview"]
    assert [key for key, s in chosen.items() if s.finished] == ["resolved", "gone"]
    steps = intervals((day(1), chosen["open"]), (day(2), chosen["inProgress"]),
                      (day(5), chosen["inReview"]), (day(6), chosen["resolved"]))  # fmt: skip
    cycle = cycle_time(steps)
    assert cycle is not None and cycle.started_at == day(5) and cycle.cycle_seconds == 86_400


def counted_seconds(start: datetime, end: datetime, zone: str, off: set[date]) -> int:
    """Working seconds by brute force: day by day through the local calendar (no whole
    weeks skipped), the overlap of [start, end) with 09:00-18:00 of each weekday not off."""
    local = ZoneInfo(zone)
    total = timedelta(0)
    current = start.astimezone(local).date()
    while current <= end.astimezone(local).date():
        if current.weekday() < 5 and current not in off:
            opening = datetime(current.year, current.month, current.day, 9, tzinfo=local)
            closing = datetime(current.year, current.month, current.day, 18, tzinfo=local)
            total += max(min(end, closing) - max(start, opening), timedelta(0))
        current += timedelta(days=1)
    return total // timedelta(seconds=1)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("start", "end"),
    [
        (datetime(2024, 3, 20, 10, tzinfo=UTC), datetime(2024, 4, 12, 15, tzinfo=UTC)),  # Easter
        (datetime(2024, 12, 18, 7, tzinfo=UTC), datetime(2025, 1, 8, 12, tzinfo=UTC)),  # Christmas
        (datetime(2024, 4, 29, 16, tzinfo=UTC), datetime(2024, 5, 2, 9, tzinfo=UTC)),  # May Day
    ],
)
def test_business_time_leaves_out_public_holidays(start: datetime, end: datetime) -> None:
    """Berlin working hours less Germany's public holidays (the holidays library), against
    a minute-by-minute count over the same days off, through whole weeks and a year's end."""
    off = set(holidays.country_holidays("DE", years=[2024, 2025]))
    calendar = WorkCalendar.of(
        ["mon", "tue", "wed", "thu", "fri"], "09:00-18:00", "Europe/Berlin", DaysOff("DE")
    )
    assert calendar.business_seconds(start, end) == counted_seconds(
        start, end, "Europe/Berlin", off
    )
    plain = WorkCalendar.of(["mon", "tue", "wed", "thu", "fri"], "09:00-18:00", "Europe/Berlin")
    assert plain.business_seconds(start, end) > calendar.business_seconds(start, end)


@pytest.mark.fast
def test_a_file_of_days_off_counts_like_a_country(tmp_path: Path) -> None:
    """A holidays_file's dates (comments and blank lines skipped) are not worked; a line
    that is not a date is an error naming the file and line."""
    path = tmp_path / "off.txt"
    path.write_text("# team days\n2024-03-21\n\n2024-03-22  # offsite\n")
    off = DaysOff.read(None, path)
    start, end = datetime(2024, 3, 18, tzinfo=UTC), datetime(2024, 3, 25, tzinfo=UTC)
    calendar = WorkCalendar.of(["mon", "tue", "wed", "thu", "fri"], "09:00-18:00", "UTC", off)
    assert calendar.business_seconds(start, end) == 3 * 9 * 3600
    path.write_text("2024-03-21\nlater\n")
    with pytest.raises(ValueError, match=r"off.txt, line 2: 'later'"):
        DaysOff.read(None, path)


CONFIG = """
[source]
tracker_url = "http://127.0.0.1:8700/v3"
org_id = "1"
token_env = "SRC_TOKEN"
[scope]
queues = ["TEST"]
[staging]
path = "haul.db"
[model]
"""


@pytest.mark.fast
@pytest.mark.parametrize(
    ("model", "says"),
    [
        ('holidays = "XX"', "model.holidays"),
        ('holidays_file = "nowhere.txt"', "model.holidays_file"),
        ('cycle = "median"', "model.cycle"),
        ("daily_after_end_days = -1", "model.daily_after_end_days"),
    ],
)
def test_a_model_setting_that_cannot_be_used_names_its_key(
    tmp_path: Path, model: str, says: str
) -> None:
    (tmp_path / "haul.toml").write_text(CONFIG + model + "\n")
    with pytest.raises(ConfigError) as error:
        load_config(tmp_path / "haul.toml")
    assert says in str(error.value)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A tiny sandbox org staged and exported with [model] settings."""
    from haul.sandbox import server as sandbox_server

    model = '[model]\ncycle = "last"\nholidays = "DE"\ntimezone = "Europe/Berlin"\n'
    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        staged: Staged = stage_sandbox(
            sandbox, tmp_path_factory.mktemp("definitions"), sections=model
        )
        out = staged.directory / "out"
        done = staged.haul("export", "--config", staged.config, "--out", out)
        assert done.returncode == 0, done.stdout + done.stderr
        yield only_folder(out) / "haul.duckdb"


def test_model_info_records_the_as_of_instant_and_every_setting(exported: Path) -> None:
    with duckdb.connect(str(exported), read_only=True) as db:
        info = dict(db.execute("SELECT setting, value FROM model_info").fetchall())
    assert info["cycle"] == "last" and info["holidays"] == "DE"
    assert info["timezone"] == "Europe/Berlin" and info["work_hours"] == "09:00-18:00"
    assert info["start_types"] == '["inProgress"]' and info["daily_since"] is None
    assert datetime.fromisoformat(info["as_of"]).tzinfo is not None
    assert set(info) >= {"as_of", "export_day", "work_days", "finish_types", "holidays_file"}


def test_model_statuses_and_types_the_staged_data_lacks_stop_the_export(exported: Path) -> None:
    """A typo in [model] (a status key or type no staged status has) exits 2 naming each,
    with the closest staged value, and writes nothing: not an export whose cycle times are
    silently empty. A default type the org lacks is never questioned."""
    directory = exported.parents[2]  # the staged sandbox's folder: its config and store
    text = (directory / "haul.toml").read_text(encoding="utf-8")
    typo = '[model]\nstart_statuses = ["inProgres"]\nfinish_types = ["donne", "done"]\n'
    (directory / "typo.toml").write_text(text.replace("[model]\n", typo), encoding="utf-8")
    config = load_config(directory / "typo.toml")
    out = directory / "typo-out"
    with pytest.raises(ExportOptionError) as caught:
        run_export(config, ExportRequest.from_options(config, out=out), services=services())
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert "[model] start_statuses: 'inProgres'" in message
    assert "did you mean 'inProgress'?" in message
    assert "[model] finish_types: 'donne'" in message and "did you mean 'done'?" in message
    assert not out.exists() or not any(out.iterdir())


def test_business_seconds_in_the_export_match_an_independent_count(exported: Path) -> None:
    """Every finished interval of up to three weeks: business_s is a day-by-day count in
    Berlin less Germany's holidays."""
    with duckdb.connect(str(exported), read_only=True) as db:
        rows = db.execute(
            "SELECT entered_at, left_at, business_s FROM status_intervals WHERE NOT ongoing "
            "AND left_at - entered_at < INTERVAL 21 DAY ORDER BY issue_key, position LIMIT 60"
        ).fetchall()
    off = set(holidays.country_holidays("DE", years=range(2015, 2031)))
    assert rows
    for entered, left, business in rows:
        assert business == counted_seconds(entered, left, "Europe/Berlin", off)


def test_issue_daily_covers_each_issues_whole_life_by_default(exported: Path) -> None:
    """No daily_since: each issue's rows run, a day each without gaps, from its creation
    day (in Berlin) to the export day, or to 30 days after the day it last finished."""
    with duckdb.connect(str(exported), read_only=True) as db:
        db.execute("SET TimeZone = 'Europe/Berlin'")
        rows = db.execute(
            "SELECT d.issue_key, min(d.day), max(d.day), count(*), "
            "any_value(i.created_at::DATE), any_value(c.done_at::DATE) "
            "FROM issue_daily d JOIN issues i ON i.key = d.issue_key "
            "JOIN cycle_times c ON c.issue_key = d.issue_key GROUP BY d.issue_key"
        ).fetchall()
        export_day = date.fromisoformat(
            db.execute("SELECT value FROM model_info WHERE setting = 'export_day'").fetchone()[0]  # type: ignore[index]
        )
        issues = db.execute("SELECT count(*) FROM issues").fetchone()[0]  # type: ignore[index]
    assert len(rows) == issues
    for key, first, last, count, created, done in rows:
        assert first == created, key
        assert count == (last - first).days + 1, key
        assert last == export_day or (done is not None and last == done + timedelta(days=30)), key


def analyst_queries() -> list[str]:
    text = EXPORTS_PAGE.read_text(encoding="utf-8")
    part = text[text.index("<!-- analyst-queries") :]
    part = part[: part.index("\n## ") if "\n## " in part else len(part)]
    return re.findall(r"```sql\n(.*?)```", part, re.DOTALL)


def test_the_docs_answer_the_six_questions_with_one_query_each(exported: Path) -> None:
    """Cycle time by queue and week, time in status, throughput, WIP, aging and CFD: each
    query runs and answers; throughput adds up to the finished issues, the CFD's last day
    holds every issue, and the time in status leaves the ongoing intervals out."""
    queries = analyst_queries()
    assert len(queries) == 6
    with duckdb.connect(str(exported), read_only=True) as db:
        db.execute("SET TimeZone = 'UTC'")
        answers = [db.execute(query).fetchall() for query in queries]
        finished = db.execute(
            "SELECT count(*) FROM cycle_times WHERE done_at IS NOT NULL"
        ).fetchone()
        issues = db.execute("SELECT count(*) FROM issues").fetchone()
        closed = db.execute("SELECT count(*) FROM status_intervals WHERE NOT ongoing").fetchone()
    by_queue, in_status, throughput, wip, aging, cfd = answers
    assert all(answers[:4]) and cfd
    assert sum(row[2] for row in by_queue) <= finished[0]  # type: ignore[index]
    assert sum(row[1] for row in in_status) == closed[0]  # type: ignore[index]
    assert sum(row[1] for row in throughput) == finished[0]  # type: ignore[index]
    assert all(row[1] > 0 for row in wip)
    assert all(row[2] >= 0 for row in aging)
    assert cfd[-1][1] == issues[0] and cfd[-1][3] == finished[0]  # type: ignore[index]


@pytest.mark.fast
def test_check_names_a_model_status_the_staged_data_lacks_as_an_error(tmp_path: Path) -> None:
    """`haul check` says what would stop the export, before it runs: one error per value."""
    (tmp_path / "haul.toml").write_text(
        CONFIG + 'start_statuses = ["inProgres"]\nstart_types = ["started"]\n'
    )
    config = load_config(tmp_path / "haul.toml")
    with StagingStore.open(tmp_path / "haul.db") as store:
        statuses = [("open", "new"), ("inProgress", "inProgress"), ("closed", "done")]
        store.upsert_records("status", [{"source_id": key, "raw": {"key": key, "type": kind},
                                         "updated_at": "t1"} for key, kind in statuses])  # fmt: skip
        found = asyncio.run(model_findings(config, None, store, "source", None))
    assert [f.level for f in found] == ["error", "error"]
    assert "start_statuses: 'inProgres'" in found[0].what and "'inProgress'?" in found[0].what
    assert "start_types: 'started'" in found[1].what and "[model]" in found[1].fix
