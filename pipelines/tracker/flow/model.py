"""How work flowed through one issue, from its staged record and changelog: pure functions.

    issue raw JSON + its changelog entries ──changes_of──> [Change] (time order)
        ├─ status_intervals: the statuses it sat in, contiguous from creation to `now`
        ├─ field_history:    one row per value each field held, the current one open-ended
        ├─ daily_rows:       its state at the end of each day it was open
        └─ cycle_time:       created, first started, first done, lead and cycle seconds

Nothing here reads a clock or the store: `now` (the instant the staged data stands for) and
the export day are given, so the same inputs give the same rows. Times are clamped into
[created, now] and never run backwards, so an issue's intervals always tile its age exactly
(whole seconds are floored instants, so their lengths add up to the age in whole seconds).

A status change is a changelog change of `status` to a status other than the current one;
the entry that made the issue (`from` empty) names its first status. An entry carrying
`statusStartTime` dates the change by it. If the changelog ends in a status other than the
issue's own (a change the changelog lost), the issue's status is entered at its
`statusStartTime`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from haul.pipelines.config_types import WEEKDAYS, work_hours_span
from haul.pipelines.export.values import parse_timestamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SECOND = timedelta(seconds=1)
FINISHED_TYPES = frozenset({"done", "cancelled"})  # a status of these types ends the work
STARTED_TYPE = "inProgress"
PEOPLE_FIELDS = frozenset({"assignee", "author", "createdBy", "followers", "qaEngineer"})
# Fields every issue has a history of, changed or not; any other field that changed joins them.
TRACKED_FIELDS = ("status", "type", "priority", "queue", "assignee", "resolution")
UNTRACKED_FIELDS = frozenset({"statusStartTime"})  # when a status began: the intervals say it
LoginOf = Callable[[str], str | None]  # a user id -> their login


@dataclass(frozen=True)
class StatusInfo:
    """A status as the dictionary describes it: key, name and type (new, inProgress, done...)."""

    key: str
    name: str | None = None
    type: str | None = None

    @property
    def finished(self) -> bool:
        """Whether work is over in this status (a done or cancelled type)."""
        return self.type in FINISHED_TYPES


@dataclass(frozen=True)
class WorkCalendar:
    """Working days and hours in one time zone: what business seconds count."""

    days: frozenset[int]  # date.weekday(): Monday is 0
    start: time
    end: time  # time.max: the end of the day
    zone: ZoneInfo

    @classmethod
    def of(cls, work_days: Iterable[str], work_hours: str, timezone: str) -> WorkCalendar:
        """The calendar of the config's `[export]` keys (`mon`..., `09:00-18:00`, `UTC`)."""
        start, end = work_hours_span(work_hours)
        days = frozenset(WEEKDAYS.index(day) for day in work_days)
        return cls(days, start, end, ZoneInfo(timezone))

    def local_day(self, moment: datetime) -> date:
        """The calendar day `moment` falls on in this zone."""
        return moment.astimezone(self.zone).date()

    def day_start(self, day: date) -> datetime:
        """The first instant of `day` in this zone, in UTC."""
        return datetime.combine(day, time(0), self.zone).astimezone(UTC)

    def _window(self, day: date) -> tuple[datetime, datetime]:
        opening = datetime.combine(day, self.start, self.zone).astimezone(UTC)
        if self.end == time.max:
            return opening, self.day_start(day + timedelta(days=1))
        return opening, datetime.combine(day, self.end, self.zone).astimezone(UTC)

    def business_seconds(self, start: datetime, end: datetime) -> int:
        """Whole working seconds in [start, end): the working hours of working days, local
        time. Whole weeks count as a week's hours (a summer-time switch inside working hours
        is then off by its hour)."""
        if end <= start:
            return 0
        total = timedelta(0)
        first, last = self.local_day(start), self.local_day(end)
        day = first
        while day <= last:
            # whole weeks strictly between the first and the last day: a week's hours each
            if day > first and day.weekday() == 0 and (weeks := (last - day).days // 7) > 0:
                total += weeks * self._week()
                day += timedelta(weeks=weeks)
                continue
            if day.weekday() in self.days:
                opening, closing = self._window(day)
                overlap = min(end, closing) - max(start, opening)
                total += max(overlap, timedelta(0))
            day += timedelta(days=1)
        return total // SECOND

    def _week(self) -> timedelta:
        day = datetime.combine(date(2001, 1, 1), time(0))  # any Monday: naive, no switch
        end = day + timedelta(days=1) if self.end == time.max else datetime.combine(day, self.end)
        return len(self.days) * (end - datetime.combine(day, self.start))


@dataclass(frozen=True)
class Change:
    """One field's change in one changelog entry, its values made plain (see `plain`)."""

    at: datetime
    field: str
    before: Any
    after: Any
    by: str | None  # the login of who made it
    by_name: str | None = None  # their display name
    entry: str = ""


@dataclass(frozen=True)
class Interval:
    """A span an issue sat in one status; `left_at` is None for the current one."""

    position: int
    status: StatusInfo
    entered_at: datetime
    left_at: datetime | None
    seconds: int
    business_seconds: int


@dataclass(frozen=True)
class FieldValue:
    """A value one field held over [valid_from, valid_to); valid_to None: it holds it now."""

    field: str
    value: Any
    valid_from: datetime
    valid_to: datetime | None
    changed_by: str | None  # login
    changed_by_name: str | None = None


@dataclass(frozen=True)
class CycleTime:
    """When an issue was made, first started and first finished, and the seconds between."""

    created_at: datetime
    first_started_at: datetime | None
    first_done_at: datetime | None
    done_status: StatusInfo | None
    lead_seconds: int | None
    cycle_seconds: int | None


def whole_seconds(start: datetime, end: datetime) -> int:
    """Seconds from `start` to `end`, each floored to its second: spans that meet add up."""
    return (end - EPOCH) // SECOND - (start - EPOCH) // SECOND


def plain(field: str, data: Any, login_of: LoginOf) -> Any:
    """A changed value without its links: a person becomes their login, another reference
    its key (else id, else name); lists element by element."""
    if isinstance(data, list):
        return [plain(field, element, login_of) for element in data]
    if not isinstance(data, dict):
        return data
    if field in PEOPLE_FIELDS and data.get("id") is not None:
        return login_of(str(data["id"])) or data.get("login") or str(data["id"])
    name = data.get("display")
    return data.get("key") or data.get("id") or (name if isinstance(name, str) else None)


def changes_of(entries: Iterable[Mapping[str, Any]], login_of: LoginOf) -> list[Change]:
    """Every field change of an issue's changelog entries, in time order (then entry id,
    then the order the entry lists them); an entry without a readable time is skipped."""
    changes = []
    for entry in entries:
        at = parse_timestamp(entry.get("updatedAt"))
        fields = entry.get("fields")
        if at is None or not isinstance(fields, list):
            continue
        started = _status_start(fields)
        author = entry.get("updatedBy")
        by = plain("author", author, login_of) if isinstance(author, dict) else None
        by_name = _display(author)
        for change in fields:
            if not isinstance(change, dict) or not isinstance(change.get("field"), dict):
                continue
            name = str(change["field"].get("id"))
            when = started if name == "status" and started is not None else at
            before = plain(name, change.get("from"), login_of)
            after = plain(name, change.get("to"), login_of)
            entry_id = str(entry.get("id") or "")
            changes.append(Change(when, name, before, after, by, by_name, entry_id))
    return sorted(changes, key=lambda change: (change.at, change.entry))


def _display(person: Any) -> str | None:
    name = person.get("display") if isinstance(person, dict) else None
    if isinstance(name, dict):  # a localised name: English, else the first language
        name = name.get("en") or next(iter(name.values()), None)
    return None if name is None else str(name)


def _status_start(fields: list[Any]) -> datetime | None:
    for change in fields:
        if isinstance(change, dict) and (change.get("field") or {}).get("id") == "statusStartTime":
            return parse_timestamp(change.get("to"))
    return None


def created_at(issue: Mapping[str, Any]) -> datetime:
    """When the issue was made (its `createdAt`; ValueError when it has none)."""
    moment = parse_timestamp(issue.get("createdAt"))
    if moment is None:
        raise ValueError(f"issue {issue.get('key')}: no readable createdAt")
    return moment


def status_steps(
    issue: Mapping[str, Any], changes: Sequence[Change], now: datetime
) -> list[tuple[datetime, str]]:
    """(entered at, status key) of each status the issue sat in, first at its creation;
    times clamped into [created, now] and never decreasing."""
    created = created_at(issue)
    now = max(now, created)
    moves = [change for change in changes if change.field == "status" and change.after]
    first = next((c.before for c in moves if c.before), None) or (moves[0].after if moves else None)
    current = (issue.get("status") or {}).get("key")
    steps = [(created, str(first or current))]
    for change in moves:
        if change.after != steps[-1][1]:
            steps.append((min(max(change.at, steps[-1][0]), now), str(change.after)))
    if current and steps[-1][1] != current:  # the changelog lost the last change
        entered = parse_timestamp(issue.get("statusStartTime")) or steps[-1][0]
        steps.append((min(max(entered, steps[-1][0]), now), str(current)))
    return steps


def status_intervals(
    issue: Mapping[str, Any],
    changes: Sequence[Change],
    statuses: Mapping[str, StatusInfo],
    now: datetime,
    calendar: WorkCalendar,
) -> list[Interval]:
    """The issue's status intervals: contiguous from its creation to `now`, the last open."""
    steps = status_steps(issue, changes, now)
    end = max(now, steps[0][0])
    intervals = []
    for position, (entered, key) in enumerate(steps):
        left = steps[position + 1][0] if position + 1 < len(steps) else None
        until = left or end
        intervals.append(
            Interval(
                position,
                statuses.get(key) or StatusInfo(key),
                entered,
                left,
                whole_seconds(entered, until),
                calendar.business_seconds(entered, until),
            )
        )
    return intervals


def field_history(
    issue: Mapping[str, Any], changes: Sequence[Change], login_of: LoginOf
) -> list[FieldValue]:
    """One row per value each field held (the tracked fields, and any other that changed),
    by field then time; the first from the issue's creation, by its author."""
    created = created_at(issue)
    author = issue.get("createdBy")
    creator = (plain("author", author, login_of) if author else None, _display(author))
    by_field: dict[str, list[Change]] = {name: [] for name in TRACKED_FIELDS}
    for change in changes:
        if change.field in UNTRACKED_FIELDS:
            continue
        if change.before is not None or change.at > created:  # not the values it was made with
            by_field.setdefault(change.field, []).append(change)
    rows = []
    for name in sorted(by_field):
        own = by_field[name]
        value = own[0].before if own else plain(name, issue.get(name), login_of)
        since, by = created, creator
        for change in own:
            at = max(change.at, since)
            rows.append(FieldValue(name, value, since, at, *by))
            value, since, by = change.after, at, (change.by, change.by_name)
        rows.append(FieldValue(name, value, since, None, *by))
    return [row for row in rows if row.valid_to is None or row.valid_to > row.valid_from]


def value_at(history: Sequence[FieldValue], moment: datetime) -> Any:
    """The value a field (its rows of `field_history`, in time order) held just before
    `moment`; None before its first."""
    index = bisect.bisect_left([row.valid_from for row in history], moment) - 1
    return history[index].value if index >= 0 else None


@dataclass(frozen=True)
class DailyRow:
    """An open issue's state at the end of one day (or at `now`, on the export day)."""

    day: date
    status: StatusInfo
    assignee: Any
    queue: Any
    priority: Any


def daily_rows(
    intervals: Sequence[Interval],
    history: Sequence[FieldValue],
    first_day: date,
    export_day: date,
    now: datetime,
    calendar: WorkCalendar,
) -> list[DailyRow]:
    """A row for each day from `first_day` to `export_day` the issue was open (its status
    not of a done or cancelled type) at the day's end: the next midnight in the calendar's
    zone, or `now` on the export day."""
    if not intervals:
        return []
    created = intervals[0].entered_at
    fields = {name: [row for row in history if row.field == name] for name in TRACKED_FIELDS}
    entered = [interval.entered_at for interval in intervals]
    day = max(first_day, calendar.local_day(created))
    rows = []
    while day <= export_day:
        end = min(calendar.day_start(day + timedelta(days=1)), now)
        index = bisect.bisect_left(entered, end) - 1
        if end > created and index >= 0 and not intervals[index].status.finished:
            rows.append(
                DailyRow(
                    day,
                    intervals[index].status,
                    value_at(fields["assignee"], end),
                    value_at(fields["queue"], end),
                    value_at(fields["priority"], end),
                )
            )
        day += timedelta(days=1)
    return rows


def cycle_time(intervals: Sequence[Interval]) -> CycleTime | None:
    """Created, the first entry into an inProgress status, the first into a done or cancelled
    one; lead seconds (created to done) and cycle seconds (started to done)."""
    if not intervals:
        return None
    created = intervals[0].entered_at
    started = next((i.entered_at for i in intervals if i.status.type == STARTED_TYPE), None)
    done = next((i for i in intervals if i.status.finished), None)
    done_at = done.entered_at if done else None
    return CycleTime(
        created,
        started,
        done_at,
        done.status if done else None,
        whole_seconds(created, done_at) if done_at else None,
        whole_seconds(started, done_at) if done_at and started and started <= done_at else None,
    )
