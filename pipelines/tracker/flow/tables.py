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
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any

import structlog

from haul.pipelines.config.model import Model
from haul.pipelines.export.columns import display_text, timestamp, value
from haul.pipelines.export.tables import Column, Derived, ExportContext, Table
from haul.pipelines.export.values import parse_timestamp
from haul.pipelines.tracker.export_columns import of_issue, staged_logins
from haul.pipelines.tracker.flow.calendar import DaysOff, WorkCalendar
from haul.pipelines.tracker.flow.model import (
    Change,
    CycleMode,
    StatusInfo,
    changes_of,
    cycle_time,
    daily_rows,
    field_history,
    status_intervals,
)
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

SERVICE = "tracker"


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
    """What the model is computed as of, in which calendar, by which definitions."""

    now: datetime
    calendar: WorkCalendar
    export_day: date
    daily_since: date | None
    model: Model

    @property
    def cycle(self) -> CycleMode:
        return self.model.cycle

    @classmethod
    def of(cls, context: ExportContext) -> FlowSettings:
        """The settings of an export, once: its as-of instant and the config's `[model]`
        (its calendar keys falling back on `[export]`'s)."""
        return context.memo(("tracker.flow", context.as_of), lambda _: cls._of(context))

    @classmethod
    def _of(cls, context: ExportContext) -> FlowSettings:
        settings, model = context.settings, model_settings(context)
        off = DaysOff.read(model.holidays, model.holidays_file)
        calendar = WorkCalendar.of(
            model.work_days or settings.work_days,
            model.work_hours or settings.work_hours,
            model.timezone or settings.timezone,
            off,
        )
        export_day = calendar.local_day(context.as_of)
        since = model.daily_since if model.daily_since is not None else settings.daily_since
        if isinstance(since, int):  # days before the export day
            since = export_day - timedelta(days=since)
        return cls(context.as_of, calendar, export_day, since, model)


def model_settings(context: ExportContext) -> Model:
    """The config's `[model]` (its defaults without a config)."""
    return context.config.model if context.config is not None else Model()


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


def defined(statuses: dict[str, StatusInfo], model: Model) -> dict[str, StatusInfo]:
    """The statuses with `[model]`'s say on which start and which finish work: listed keys
    alone when given, else the listed types. A listed key the dictionary lacks (a status
    since deleted or renamed) is added, so its intervals follow the definition too."""
    every = {key: statuses.get(key) or StatusInfo(key) for key in
             (*statuses, *model.start_statuses, *model.finish_statuses)}  # fmt: skip

    def says(status: StatusInfo, keys: tuple[str, ...], types: tuple[str, ...]) -> bool:
        return status.key in keys if keys else status.type in types

    return {
        key: replace(
            status,
            starts=says(status, model.start_statuses, model.start_types),
            finishes=says(status, model.finish_statuses, model.finish_types),
        )
        for key, status in every.items()
    }


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
    """The staged status dictionary with `[model]`'s definitions, read once per export."""
    model = model_settings(context)
    return context.memo(
        ("tracker.statuses", model), lambda store: defined(staged_statuses(store), model)
    )


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
                "ongoing": interval.left_at is None,
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
    value("business_s", "int", "of those, seconds within the working days and hours, less days off ([model])", "business_s"),
    value("ongoing", "bool", "true for the status it sits in now: its seconds run to the as-of instant (leave it out of sums of time spent)", "ongoing"),
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
            intervals, fields, flow.daily_since, flow.export_day, flow.now, flow.calendar,
            flow.model.daily_after_end_days,
        )  # fmt: skip
        rows = [
            {
                "day": row.day,
                "issue_key": history.key,
                "status": _status(row.status),
                "assignee_login": _text(row.assignee),
                "queue_key": _text(row.queue),
                "priority_key": _text(row.priority),
                "stage": row.stage,
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
    value("stage", "string", "todo (not started, or reopened), in_progress (started, not finished) or done (in a finishing status), by [model]", "stage"),
), doc=(
    "one row per issue per day of its life, its state at the day's end (at the as-of instant "
    "on the export day): from its creation (or [model] daily_since) to the export day, or to "
    "[model] daily_after_end_days (default 30) after the day it finished"
), service=SERVICE, derive=derive_daily, access=of_issue, partition_by="day")  # fmt: skip


def derive_cycle_times(context: ExportContext) -> Iterator[Derived]:
    """cycle_times: one row per issue."""
    flow, statuses = FlowSettings.of(context), statuses_of(context)
    for history in issue_histories(context):
        raw = history.issue.raw
        intervals = status_intervals(raw, history.changes, statuses, flow.now, flow.calendar)
        cycle = cycle_time(intervals, flow.cycle, flow.calendar)
        rows = []
        if cycle is not None:
            done = cycle.done_status
            rows.append({
                "issue_key": history.key,
                "queue_key": history.queue,
                "created_at": cycle.created_at,
                "first_started_at": cycle.first_started_at,
                "first_done_at": cycle.first_done_at,
                "started_at": cycle.started_at,
                "done_at": cycle.done_at,
                "done_status": _status(done) if done else {},
                "lead_s": cycle.lead_seconds,
                "cycle_s": cycle.cycle_seconds,
                "cycle_business_s": cycle.cycle_business_seconds,
                "cycles": cycle.cycles,
                "reopened": cycle.reopened,
            })  # fmt: skip
        yield Derived(history.key, history.staged_at, rows)


CYCLE_TIMES = Table("cycle_times", "changelog", (
    ISSUE_KEY,
    QUEUE_KEY,
    timestamp("created_at", "when the issue was created", "created_at"),
    timestamp("first_started_at", "when it first entered a status that starts work ([model])", "first_started_at"),
    timestamp("first_done_at", "when it first entered a status that finishes work ([model])", "first_done_at"),
    timestamp("started_at", "when its measured cycle started: its first start", "started_at"),
    timestamp("done_at", "when its measured cycle finished, by [model] cycle (first: the first finish after the start; last, sum: the last finish, empty unless finished now)", "done_at"),
    value("done_status_key", "string", "the status it finished in: key", "done_status", "key"),
    value("done_status_type", "string", "that status: type (done or cancelled)", "done_status", "type"),
    value("lead_s", "int", "seconds from creation to done_at (empty: not done)", "lead_s"),
    value("cycle_s", "int", "cycle seconds by [model] cycle: first or last from started_at to done_at; sum, each start-to-finish cycle added (empty: not started and done)", "cycle_s"),
    value("cycle_business_s", "int", "the same within the working days and hours, less days off", "cycle_business_s"),
    value("cycles", "int", "start-to-finish cycles completed", "cycles"),
    value("reopened", "int", "times it left a finishing status for another", "reopened"),
), doc="one row per issue: when it was created, started and finished, and its lead and cycle seconds by [model]",
   service=SERVICE, derive=derive_cycle_times, access=of_issue)  # fmt: skip
