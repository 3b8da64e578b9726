"""The flow model of one issue, from hand-built changelog records (pipelines/tracker/flow/model.py):
intervals, business seconds, field history, daily rows and cycle times, with `now` given."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from haul.pipelines.tracker.flow.model import (
    StatusInfo,
    WorkCalendar,
    changes_of,
    cycle_time,
    daily_rows,
    field_history,
    status_intervals,
    whole_seconds,
)

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

STATUSES = {
    "open": StatusInfo("open", "Open", "new"),
    "inProgress": StatusInfo("inProgress", "In progress", "inProgress"),
    "needInfo": StatusInfo("needInfo", "Need info", "paused"),
    "resolved": StatusInfo("resolved", "Resolved", "done"),
}
UTC_CALENDAR = WorkCalendar.of(["mon", "tue", "wed", "thu", "fri"], "09:00-18:00", "UTC")
LOGINS = {"1": "alice", "2": "bob"}
NOW = datetime(2024, 1, 19, 12, 0, tzinfo=UTC)  # a Friday


def at(text: str) -> str:
    return f"2024-01-{text}+00:00"


def ref(key: str) -> dict[str, Any]:
    return {"self": f"https://t/statuses/{key}", "id": "9", "key": key, "display": key.title()}


def person(uid: str) -> dict[str, Any]:
    return {"self": f"https://t/users/{uid}", "id": uid, "display": f"User {uid}"}


def entry(
    entry_id: str, when: str, *fields: tuple[str, Any, Any], kind: str = "IssueWorkflow"
) -> dict[str, Any]:
    return {
        "id": entry_id,
        "type": kind,
        "updatedAt": at(when),
        "updatedBy": person("2"),
        "fields": [
            {"field": {"id": name, "display": name}, "from": before, "to": after}
            for name, before, after in fields
        ],
    }


ISSUE = {
    "key": "TEST-1",
    "createdAt": at("15T10:00:00.000"),  # a Monday
    "createdBy": person("1"),
    "status": ref("resolved"),
    "statusStartTime": at("17T16:00:00.000"),
    "queue": {"key": "TEST"},
    "priority": {"key": "normal"},
    "assignee": person("2"),
}
ENTRIES = [
    entry("a1", "15T10:00:00.000", ("status", None, ref("open")), kind="IssueCreated"),
    entry("a2", "16T09:30:00.000", ("status", ref("open"), ref("inProgress"))),
    entry(
        "a3",
        "16T12:00:00.000",
        ("priority", {"key": "minor"}, {"key": "normal"}),
        ("assignee", person("1"), person("2")),
        kind="IssueUpdated",
    ),
    entry("a4", "17T16:00:00.000", ("status", ref("inProgress"), ref("resolved"))),
]


def model(entries: list[dict[str, Any]] = ENTRIES, issue: dict[str, Any] = ISSUE) -> Any:
    changes = changes_of(entries, LOGINS.get)
    return changes, status_intervals(issue, changes, STATUSES, NOW, UTC_CALENDAR)


def test_intervals_tile_the_issue_from_creation_to_now() -> None:
    """One interval per status, each starting where the last ended, the last open and the
    issue's status now; their seconds add up to its age."""
    _, intervals = model()
    assert [i.status.key for i in intervals] == ["open", "inProgress", "resolved"]
    assert intervals[0].entered_at == datetime(2024, 1, 15, 10, tzinfo=UTC)
    for before, after in itertools.pairwise(intervals):
        assert before.left_at == after.entered_at
    assert intervals[-1].left_at is None
    assert sum(i.seconds for i in intervals) == whole_seconds(intervals[0].entered_at, NOW)
    assert intervals[0].seconds == 23 * 3600 + 30 * 60


def test_business_seconds_count_working_hours_only() -> None:
    """open: Mon 10:00 to Tue 09:30 is 8 working hours and 30 minutes; inProgress: Tue 09:30
    to Wed 16:00 is 8.5 + 7 hours; resolved: Wed 16:00 to Fri 12:00 is 2 + 9 + 3 hours."""
    _, intervals = model()
    assert [i.business_seconds for i in intervals] == [30_600, 55_800, 50_400]


def test_business_seconds_follow_the_time_zone_and_skip_weekends() -> None:
    """In Berlin (UTC+1 in winter) 09:00-18:00 is 08:00-17:00 UTC; a weekend counts nothing,
    and whole weeks count a week's hours."""
    berlin = WorkCalendar.of(["mon", "tue", "wed", "thu", "fri"], "09:00-18:00", "Europe/Berlin")
    monday = datetime(2024, 1, 15, 7, tzinfo=UTC)
    assert berlin.business_seconds(monday, monday + timedelta(hours=2)) == 3600
    saturday = datetime(2024, 1, 20, 0, tzinfo=UTC)
    assert berlin.business_seconds(saturday, saturday + timedelta(days=2)) == 0
    assert UTC_CALENDAR.business_seconds(monday, monday + timedelta(weeks=5)) == 5 * 45 * 3600
    late_monday = datetime(2024, 1, 15, 10, tzinfo=UTC)  # its first hour is not counted
    later = late_monday + timedelta(weeks=3, hours=2)
    assert UTC_CALENDAR.business_seconds(late_monday, later) == (3 * 45 + 2) * 3600


def test_a_status_start_time_dates_the_change() -> None:
    """An entry carrying statusStartTime is dated by it, not by when it was written."""
    late = entry(
        "a2",
        "16T11:00:00.000",
        ("status", ref("open"), ref("inProgress")),
        ("statusStartTime", at("15T10:00:00.000"), at("16T09:30:00.000")),
    )
    _, intervals = model([ENTRIES[0], late, ENTRIES[3]])
    assert intervals[1].entered_at == datetime(2024, 1, 16, 9, 30, tzinfo=UTC)


def test_a_lost_last_change_enters_the_issue_status_at_its_start_time() -> None:
    """A changelog that stops short of the issue's status: the status is entered at the
    issue's statusStartTime, so the last interval is the issue's status."""
    _, intervals = model(ENTRIES[:3])
    assert [i.status.key for i in intervals] == ["open", "inProgress", "resolved"]
    assert intervals[2].entered_at == datetime(2024, 1, 17, 16, tzinfo=UTC)


def test_times_out_of_order_or_past_now_are_clamped() -> None:
    """A change dated before the creation or after `now` stays inside [created, now]."""
    early = entry("a2", "01T00:00:00.000", ("status", ref("open"), ref("inProgress")))
    future = entry("a4", "31T00:00:00.000", ("status", ref("inProgress"), ref("resolved")))
    _, intervals = model([early, future])
    assert intervals[1].entered_at == intervals[0].entered_at
    assert intervals[2].entered_at == NOW and intervals[2].seconds == 0
    assert sum(i.seconds for i in intervals) == whole_seconds(intervals[0].entered_at, NOW)


def test_field_history_has_a_row_per_value_the_current_one_open() -> None:
    """Each tracked field from the creation; a change closes a row and opens the next, by
    whom; people by login."""
    changes, _ = model()
    history = field_history(ISSUE, changes, LOGINS.get)
    rows = {(r.field, r.value): r for r in history}
    assert [r.value for r in history if r.field == "assignee"] == ["alice", "bob"]
    assert rows["assignee", "alice"].valid_to == datetime(2024, 1, 16, 12, tzinfo=UTC)
    assert rows["assignee", "bob"].valid_to is None
    assert rows["assignee", "bob"].changed_by == "bob"
    assert rows["priority", "minor"].changed_by == "alice"  # the creator set the first value
    assert [r.value for r in history if r.field == "status"] == ["open", "inProgress", "resolved"]
    assert [r.value for r in history if r.field == "queue"] == ["TEST"]  # never changed


def test_daily_rows_cover_the_whole_life_and_days_after_the_end() -> None:
    """Mon 15 to Wed 17 (resolved at 16:00): a row each day to the export day (the 19th,
    within a month of the end), its stage at the day's end; with no days after the end,
    the last row is the day it finished."""
    changes, intervals = model()
    history = field_history(ISSUE, changes, LOGINS.get)
    days = daily_rows(intervals, history, None, date(2024, 1, 19), NOW, UTC_CALENDAR)
    assert [(d.day.day, d.status.key, d.assignee, d.priority, d.stage) for d in days] == [
        (15, "open", "alice", "minor", "todo"),
        (16, "inProgress", "bob", "normal", "in_progress"),
        (17, "resolved", "bob", "normal", "done"),
        (18, "resolved", "bob", "normal", "done"),
        (19, "resolved", "bob", "normal", "done"),
    ]
    ended = daily_rows(intervals, history, None, date(2024, 1, 19), NOW, UTC_CALENDAR, 0)
    assert [d.day.day for d in ended] == [15, 16, 17]


def test_daily_rows_start_at_daily_since_and_end_at_now() -> None:
    """An issue open now has a row for each day from daily_since to the export day."""
    issue = {**ISSUE, "status": ref("inProgress")}
    changes, intervals = model(ENTRIES[:3], issue)
    history = field_history(issue, changes, LOGINS.get)
    days = daily_rows(intervals, history, date(2024, 1, 17), date(2024, 1, 19), NOW, UTC_CALENDAR)
    assert [d.day.day for d in days] == [17, 18, 19]


def test_cycle_time_is_first_started_to_first_done() -> None:
    """Lead time from creation, cycle time from the first inProgress, to the first done."""
    _, intervals = model()
    cycle = cycle_time(intervals)
    assert cycle is not None
    assert cycle.first_started_at == datetime(2024, 1, 16, 9, 30, tzinfo=UTC)
    assert cycle.first_done_at == datetime(2024, 1, 17, 16, tzinfo=UTC)
    assert cycle.lead_seconds == 54 * 3600
    assert cycle.cycle_seconds == 30 * 3600 + 30 * 60


def test_an_issue_never_started_has_no_cycle_seconds() -> None:
    """Done straight from open: lead seconds, no cycle seconds."""
    direct = entry("a2", "16T09:30:00.000", ("status", ref("open"), ref("resolved")))
    _, intervals = model([ENTRIES[0], direct])
    cycle = cycle_time(intervals)
    assert cycle is not None and cycle.cycle_seconds is None and cycle.lead_seconds == 84_600


@pytest.mark.parametrize("hours", ["18:00-09:00", "9-18", "25:00-26:00"])
def test_work_hours_that_are_not_a_span_are_refused(hours: str) -> None:
    """The config's work_hours is HH:MM-HH:MM, start before end."""
    from pydantic import TypeAdapter, ValidationError

    from haul.pipelines.config.types import WorkHours

    with pytest.raises(ValidationError):
        TypeAdapter(WorkHours).validate_python(hours)


BASE_CONFIG = {
    "source": {"tracker_url": "https://t.example/v3", "org_id": "1", "token_env": "T"},
    "scope": {"queues": ["TEST"]},
    "staging": {"path": "haul.db"},
}


def export_section(**keys: Any) -> Any:
    from pathlib import Path

    from haul.pipelines.config import parse_config

    return parse_config({**BASE_CONFIG, "export": keys}, base_dir=Path(".")).export


def test_the_model_calendar_defaults_to_office_hours_in_utc() -> None:
    """work_days Monday to Friday, work_hours 09:00-18:00, timezone UTC, daily_since unset
    (90 days before the export)."""
    section = export_section()
    assert section.work_days == ("mon", "tue", "wed", "thu", "fri")
    assert (section.work_hours, section.timezone, section.daily_since) == (
        "09:00-18:00",
        "UTC",
        None,
    )
    chosen = export_section(
        work_days=["Sunday", "mon"], work_hours="08:30-17:00", timezone="Asia/Tokyo",
        daily_since="2024-01-01",
    )  # fmt: skip
    assert chosen.work_days == ("sun", "mon") and chosen.daily_since == date(2024, 1, 1)


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ({"work_days": ["someday"]}, "export.work_days[0]"),
        ({"work_hours": "18:00-09:00"}, "export.work_hours"),
        ({"timezone": "Mars/Olympus"}, "export.timezone"),
        ({"daily_since": "yesterday"}, "export.daily_since"),
        ({"work_hour": "09:00-18:00"}, "export.work_hour"),
    ],
)
def test_a_bad_calendar_key_is_refused_by_its_name(keys: dict[str, Any], named: str) -> None:
    """Each problem names its key; an unknown key too."""
    from haul.pipelines.config import ConfigError

    with pytest.raises(ConfigError, match=named.replace("[", r"\[").replace("]", r"\]")):
        export_section(**keys)


def test_duckdb_columns_that_differ_only_in_case_stay_apart(tmp_path: Any) -> None:
    """DuckDB compares names regardless of case: a table with `Name` and `name` columns (a
    survey's slugs) still gets its database table, the second column renamed."""
    import duckdb

    from haul.pipelines.export.duck import database
    from haul.pipelines.export.tables import Column, Table

    columns = tuple(Column(name, "string", name, lambda item: None) for name in ("name", "Name"))
    table = Table("survey_x", "survey_answer", columns)
    with database(tmp_path / "haul.duckdb") as db:
        db.table(table).write([("a", "b", None)])
    with duckdb.connect(str(tmp_path / "haul.duckdb"), read_only=True) as check:
        assert check.execute("SELECT name, Name_2 FROM survey_x").fetchall() == [("a", "b")]


def test_the_tables_stream_each_issue_with_its_own_changelog(tmp_path: Any) -> None:
    """Through a real store: each issue meets only its changelog, an issue without a
    creation time is left out, and a row's staged_at is the newest of its issue's records."""
    from haul.pipelines.export.tables import ExportContext
    from haul.pipelines.tracker.flow.tables import derive_intervals
    from haul.state.store import StagingStore

    times = iter(["2024-02-01T00:00:00.000+00:00", "2024-02-02T00:00:00.000+00:00"])
    with StagingStore.open(tmp_path / "haul.db", clock=lambda: next(times)) as store:
        store.upsert_records(
            "issue",
            [
                {"source_id": "TEST-1", "parent": "TEST", "raw": ISSUE},
                {"source_id": "TEST-2", "parent": "TEST", "raw": {"key": "TEST-2"}},
            ],
        )
        store.upsert_records(
            "changelog",
            [{"source_id": f"TEST-1/{e['id']}", "parent": "TEST-1", "raw": e} for e in ENTRIES],
        )
        context = ExportContext(store, as_of=NOW)
        groups = list(derive_intervals(context))
    assert [group.subject for group in groups] == ["TEST-1"]
    assert groups[0].staged_at == "2024-02-02T00:00:00.000+00:00"
    rows = list(groups[0].rows)
    assert [row["status"]["key"] for row in rows] == ["open", "inProgress", "resolved"]
