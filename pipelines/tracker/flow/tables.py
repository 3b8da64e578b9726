"""The flow model's export tables: status intervals, field history, a daily snapshot, cycle
times (see `model`) and weekly flow metrics (see `weekly`).

Each table streams the staged issues one at a time, in the store's (queue, key) order, with
that issue's changelog entries: memory holds one issue's history, never the org's. The model
stands as of `context.as_of` (the instant the staged data describes, chosen by the export),
in the calendar of the config's `[export]` keys (`work_days`, `work_hours`, `timezone`,
`daily_since`). Each issue's rows carry the newest `staged_at` of its record and its
changelog, so `--since` keeps the issues whose changelog (or fields) moved.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import structlog

from haul.pipelines.export.columns import display_text, timestamp, value
from haul.pipelines.export.tables import Column, Derived, ExportContext, Table
from haul.pipelines.export.values import parse_timestamp
from haul.pipelines.tracker.export_access import of_issue
from haul.pipelines.tracker.flow.model import (
    Change,
    StatusInfo,
    WorkCalendar,
    changes_of,
    cycle_time,
    daily_rows,
    field_history,
    status_intervals,
)
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

SERVICE = "tracker"
DAILY_DAYS = 90  # issue_daily's default reach before the export day


@dataclass(frozen=True)
class IssueHistory:
    """One staged issue with its changelog's changes, and the newest staged_at of both."""

    issue: StagedRecord
    changes: list[Change]
    staged_at: str

    @property
    def key(self) -> str:
        return self.issue.source_id

    @property
    def queue(self) -> Any:
        return (self.issue.raw.get("queue") or {}).get("key")


@dataclass(frozen=True)
class FlowSettings:
    """What the model is computed as of, and in which calendar."""

    now: datetime
    calendar: WorkCalendar
    export_day: date
    daily_since: date

    @classmethod
    def of(cls, context: ExportContext) -> FlowSettings:
        """The settings of an export: its as-of instant and the config's `[export]` keys."""
        settings = context.settings
        calendar = WorkCalendar.of(settings.work_days, settings.work_hours, settings.timezone)
        export_day = calendar.local_day(context.as_of)
        since = settings.daily_since or export_day - timedelta(days=DAILY_DAYS)
        return cls(context.as_of, calendar, export_day, since)


def staged_statuses(store: StagingStore) -> dict[str, StatusInfo]:
    """Status key -> its name and type, from the staged status dictionary."""
    return {
        str(record.raw.get("key")): StatusInfo(
            str(record.raw.get("key")),
            display_text(record.raw.get("display") or record.raw.get("name")),
            record.raw.get("type"),
        )
        for record in store.iter_records("status")
    }


def staged_logins(store: StagingStore) -> dict[str, str]:
    """Staged user id -> login."""
    return {row.source_id: str(row.raw.get("login")) for row in store.iter_records("user")}


def issue_histories(context: ExportContext) -> Iterator[IssueHistory]:
    """Every staged issue with its changelog, one at a time, in (queue, key) order (an issue
    without a readable creation time is left out, and logged)."""
    store = context.store
    logins = context.memo("tracker.logins", staged_logins)
    for issue in store.iter_records("issue"):
        if parse_timestamp(issue.raw.get("createdAt")) is None:  # nothing to measure from
            log.warning("flow_issue_skipped", issue=issue.source_id, reason="no createdAt")
            continue
        entries = list(store.iter_records("changelog", parent=issue.source_id))
        staged_at = max([issue.staged_at, *(entry.staged_at for entry in entries)])
        changes = changes_of((entry.raw for entry in entries), logins.get)
        yield IssueHistory(issue, changes, staged_at)


def statuses_of(context: ExportContext) -> dict[str, StatusInfo]:
    """The staged status dictionary, read once per export."""
    return context.memo("tracker.statuses", staged_statuses)


def _status_columns() -> tuple[Column, ...]:
    return (
        value("status_key", "string", "the status: key", "status", "key"),
        value("status_name", "string", "the status: name", "status", "name"),
        value("status_type", "string", "the status's type (new, inProgress, done...)", "status", "type"),
    )  # fmt: skip


def _status(status: StatusInfo) -> dict[str, Any]:
    return {"key": status.key, "name": status.name, "type": status.type}


ISSUE_KEY = value("issue_key", "string", "the issue's key", "issue_key")
QUEUE_KEY = value("queue_key", "string", "the issue's queue (now): key", "queue_key")


def derive_intervals(context: ExportContext) -> Iterator[Derived]:
    """status_intervals: each issue's statuses, contiguous from its creation to the as-of."""
    flow, statuses = FlowSettings.of(context), statuses_of(context)
    for history in issue_histories(context):
        intervals = status_intervals(
            history.issue.raw, history.changes, statuses, flow.now, flow.calendar
        )
        rows = [
            {
                "issue_key": history.key,
                "queue_key": history.queue,
                "position": interval.position,
                "status": _status(interval.status),
                "entered_at": interval.entered_at,
                "left_at": interval.left_at,
                "duration_s": interval.seconds,
                "business_s": interval.business_seconds,
            }
            for interval in intervals
        ]
        yield Derived(history.key, history.staged_at, rows)


STATUS_INTERVALS = Table("status_intervals", "changelog", (
    ISSUE_KEY,
    QUEUE_KEY,
    value("position", "int", "the interval's place in the issue's history, from 0", "position"),
    *_status_columns(),
    timestamp("entered_at", "when the issue entered the status (the first: its creation)", "entered_at"),
    timestamp("left_at", "when it left it (empty: its status now)", "left_at"),
    value("duration_s", "int", "seconds in the status (the current one: until the as-of instant)", "duration_s"),
    value("business_s", "int", "of those, seconds within [export] work_days and work_hours, in its timezone", "business_s"),
), doc="one row per status an issue sat in, contiguous from its creation to the export's as-of instant",
   service=SERVICE, derive=derive_intervals, access=of_issue, partition_by="entered_at")  # fmt: skip


def _text(data: Any) -> str | None:
    if data is None or isinstance(data, str):
        return data
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def derive_field_history(context: ExportContext) -> Iterator[Derived]:
    """issue_field_history: each value each field of each issue held."""
    logins = context.memo("tracker.logins", staged_logins)
    for history in issue_histories(context):
        rows = [
            {
                "issue_key": history.key,
                "field": row.field,
                "value": _text(row.value),
                "valid_from": row.valid_from,
                "valid_to": row.valid_to,
                "changed_by_login": row.changed_by,
                "changed_by_name": row.changed_by_name,
            }
            for row in field_history(history.issue.raw, history.changes, logins.get)
        ]
        yield Derived(history.key, history.staged_at, rows)


ISSUE_FIELD_HISTORY = Table("issue_field_history", "changelog", (
    ISSUE_KEY,
    value("field", "string", "the field's id (status, assignee, priority, ...)", "field"),
    value("value", "string", "the value: a key, a login, text, or a JSON list", "value"),
    timestamp("valid_from", "when the field took the value (the first: the issue's creation)", "valid_from"),
    timestamp("valid_to", "when it lost it (empty: it holds it now)", "valid_to"),
    value("changed_by_login", "string", "who set it: login", "changed_by_login"),
    value("changed_by_name", "string", "who set it: display name", "changed_by_name"),
), doc=(
    "one row per value a field of an issue held (status, type, priority, queue, assignee, "
    "resolution, and any other field its changelog changed), by field then time"
), service=SERVICE, derive=derive_field_history, access=of_issue)  # fmt: skip


def derive_daily(context: ExportContext) -> Iterator[Derived]:
    """issue_daily: each open issue's state at the end of each day since daily_since."""
    flow, statuses = FlowSettings.of(context), statuses_of(context)
    logins = context.memo("tracker.logins", staged_logins)
    for history in issue_histories(context):
        raw = history.issue.raw
        intervals = status_intervals(raw, history.changes, statuses, flow.now, flow.calendar)
        fields = field_history(raw, history.changes, logins.get)
        days = daily_rows(
            intervals, fields, flow.daily_since, flow.export_day, flow.now, flow.calendar
        )
        rows = [
            {
                "day": row.day,
                "issue_key": history.key,
                "status": _status(row.status),
                "assignee_login": _text(row.assignee),
                "queue_key": _text(row.queue),
                "priority_key": _text(row.priority),
            }
            for row in days
        ]
        yield Derived(history.key, history.staged_at, rows)


ISSUE_DAILY = Table("issue_daily", "changelog", (
    value("day", "date", "the day (in [export] timezone)", "day"),
    ISSUE_KEY,
    *_status_columns(),
    value("assignee_login", "string", "the assignee at the day's end: login", "assignee_login"),
    value("queue_key", "string", "the queue at the day's end: key", "queue_key"),
    value("priority_key", "string", "the priority at the day's end: key", "priority_key"),
), doc=(
    "one row per issue per day it was open (its status not of a done or cancelled type at the "
    "day's end, or at the as-of instant on the export day), from [export] daily_since "
    "(default 90 days before) to the export day"
), service=SERVICE, derive=derive_daily, access=of_issue, partition_by="day")  # fmt: skip


def derive_cycle_times(context: ExportContext) -> Iterator[Derived]:
    """cycle_times: one row per issue."""
    flow, statuses = FlowSettings.of(context), statuses_of(context)
    for history in issue_histories(context):
        raw = history.issue.raw
        intervals = status_intervals(raw, history.changes, statuses, flow.now, flow.calendar)
        cycle = cycle_time(intervals)
        rows = []
        if cycle is not None:
            done = cycle.done_status
            rows.append({
                "issue_key": history.key,
                "queue_key": history.queue,
                "created_at": cycle.created_at,
                "first_started_at": cycle.first_started_at,
                "first_done_at": cycle.first_done_at,
                "done_status": _status(done) if done else {},
                "lead_s": cycle.lead_seconds,
                "cycle_s": cycle.cycle_seconds,
            })  # fmt: skip
        yield Derived(history.key, history.staged_at, rows)


CYCLE_TIMES = Table("cycle_times", "changelog", (
    ISSUE_KEY,
    QUEUE_KEY,
    timestamp("created_at", "when the issue was created", "created_at"),
    timestamp("first_started_at", "when it first entered a status of type inProgress", "first_started_at"),
    timestamp("first_done_at", "when it first entered a status of type done or cancelled", "first_done_at"),
    value("done_status_key", "string", "that status: key", "done_status", "key"),
    value("done_status_type", "string", "that status: type (done or cancelled)", "done_status", "type"),
    value("lead_s", "int", "seconds from creation to first done (empty: not done)", "lead_s"),
    value("cycle_s", "int", "seconds from first started to first done (empty: not both, in that order)", "cycle_s"),
), doc="one row per issue: when it was created, first started and first done", service=SERVICE,
   derive=derive_cycle_times, access=of_issue)  # fmt: skip
