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
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from haul.pipelines.export.values import parse_timestamp
from haul.pipelines.tracker.flow.calendar import WorkCalendar

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
    starts: bool | None = None  # [model]'s say (see `Definitions`); None: by its type
    finishes: bool | None = None

    @property
    def finished(self) -> bool:
        """Whether work is over in this status (by default a done or cancelled type)."""
        return self.finishes if self.finishes is not None else self.type in FINISHED_TYPES

    @property
    def started(self) -> bool:
        """Whether entering this status starts work (by default an inProgress type)."""
        return self.starts if self.starts is not None else self.type == STARTED_TYPE


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


CycleMode = Literal["first", "last", "sum"]


@dataclass(frozen=True)
class CycleTime:
    """When an issue was made, first started and first finished (facts), and, by the team's
    definition (`CycleMode`), when its measured cycle started and finished and its seconds."""

    created_at: datetime
    first_started_at: datetime | None
    first_done_at: datetime | None
    done_status: StatusInfo | None
    lead_seconds: int | None
    cycle_seconds: int | None
    started_at: datetime | None = None
    done_at: datetime | None = None
    cycle_business_seconds: int | None = None
    cycles: int = 0  # start-to-finish cycles completed
    reopened: int = 0  # times it left a finishing status for another


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


class _FieldTimeline:
    """One field's values in time order, to ask for the value at many moments (`value_at`
    without rebuilding its index each time)."""

    def __init__(self, history: Sequence[FieldValue], field: str) -> None:
        self._rows = [row for row in history if row.field == field]
        self._starts = [row.valid_from for row in self._rows]

    def at(self, moment: datetime) -> Any:
        index = bisect.bisect_left(self._starts, moment) - 1
        return self._rows[index].value if index >= 0 else None


@dataclass(frozen=True)
class DailyRow:
    """An issue's state at the end of one day (or at `now`, on the export day)."""

    day: date
    status: StatusInfo
    assignee: Any
    queue: Any
    priority: Any
    stage: str = "todo"  # todo, in_progress or done (see `stages`)


def stages(intervals: Sequence[Interval]) -> list[str]:
    """Each interval's stage: "done" in a finishing status; "in_progress" from a start until
    the next finish (a status between keeps it); "todo" before a start, or after a reopen
    until the next start."""
    found, stage = [], "todo"
    for interval in intervals:
        if interval.status.finished:
            stage = "done"
        elif interval.status.started or stage == "in_progress":
            stage = "in_progress"
        else:
            stage = "todo"
        found.append(stage)
    return found


def daily_rows(
    intervals: Sequence[Interval],
    history: Sequence[FieldValue],
    first_day: date | None,
    export_day: date,
    now: datetime,
    calendar: WorkCalendar,
    after_end_days: int = 30,
) -> list[DailyRow]:
    """A row for each day of the issue's life: from its creation (or `first_day`, when
    later) to the export day, or, for an issue finished now, to `after_end_days` after the
    day it finished. Its state at the day's end: the next midnight in the calendar's zone,
    or `now` on the export day."""
    if not intervals:
        return []
    created = intervals[0].entered_at
    fields = {name: _FieldTimeline(history, name) for name in ("assignee", "queue", "priority")}
    entered = [interval.entered_at for interval in intervals]
    stage_of = stages(intervals)
    day = max(first_day or date.min, calendar.local_day(created))
    last_day = export_day
    if intervals[-1].status.finished:
        ended = calendar.local_day(finishes(intervals)[-1].entered_at)
        last_day = min(export_day, ended + timedelta(days=after_end_days))
    rows = []
    while day <= last_day:
        end = min(calendar.day_start(day + timedelta(days=1)), now)
        index = bisect.bisect_left(entered, end) - 1
        if end > created and index >= 0:
            rows.append(
                DailyRow(
                    day,
                    intervals[index].status,
                    fields["assignee"].at(end),
                    fields["queue"].at(end),
                    fields["priority"].at(end),
                    stage_of[index],
                )
            )
        day += timedelta(days=1)
    return rows


def cycle_spans(intervals: Sequence[Interval]) -> list[tuple[datetime, datetime | None]]:
    """Each cycle of work: from entering a start status (while not in one already) to the
    next entry into a finishing status; the last one open (None) when not finished now. A
    status between (review, blocked) keeps the cycle running; finishing without a start
    (the start skipped) makes no cycle."""
    spans: list[tuple[datetime, datetime | None]] = []
    start = None
    for interval in intervals:
        if interval.status.finished:
            if start is not None:
                spans.append((start, interval.entered_at))
            start = None
        elif start is None and interval.status.started:
            start = interval.entered_at
    if start is not None:
        spans.append((start, None))
    return spans


def finishes(intervals: Sequence[Interval]) -> list[Interval]:
    """The intervals that finished work: each entry into a finishing status from another."""
    return [
        interval
        for before, interval in zip((None, *intervals), intervals, strict=False)
        if interval.status.finished and (before is None or not before.status.finished)
    ]


def cycle_time(
    intervals: Sequence[Interval],
    mode: CycleMode = "first",
    calendar: WorkCalendar | None = None,
) -> CycleTime | None:
    """Created, first started, first finished; lead seconds (created to the measured finish)
    and cycle seconds by `mode`: "first" the first start to the first finish after it;
    "last" the first start to the last finish, when finished now; "sum" each cycle's
    seconds added up, when finished now. Business seconds in `calendar`, when given."""
    if not intervals:
        return None
    created = intervals[0].entered_at
    spans, ends = cycle_spans(intervals), finishes(intervals)
    started = spans[0][0] if spans else None
    done = _measured_finish(intervals, spans, ends, mode)
    done_at = done.entered_at if done else None
    closed = [(a, b) for a, b in spans if b is not None and (done_at is None or b <= done_at)]
    if mode == "sum":
        counted = closed if done_at is not None else []
    else:
        counted = [(started, done_at)] if started and done_at and started <= done_at else []
    cycle = sum(whole_seconds(a, b) for a, b in counted) if counted else None
    business = None
    if counted and calendar is not None:
        business = sum(calendar.business_seconds(a, b) for a, b in counted)
    first_done = ends[0].entered_at if ends else None
    return CycleTime(
        created_at=created,
        first_started_at=next((i.entered_at for i in intervals if i.status.started), None),
        first_done_at=first_done,
        done_status=done.status if done else None,
        lead_seconds=whole_seconds(created, done_at) if done_at else None,
        cycle_seconds=cycle,
        started_at=started,
        done_at=done_at,
        cycle_business_seconds=business,
        cycles=sum(1 for _, end in spans if end is not None),
        reopened=len(ends) - (1 if intervals[-1].status.finished else 0),
    )


def _measured_finish(
    intervals: Sequence[Interval],
    spans: list[tuple[datetime, datetime | None]],
    ends: list[Interval],
    mode: CycleMode,
) -> Interval | None:
    """The finish a mode measures to: "first" the first after the first start (the first
    of all without one); "last" and "sum" the last, if the issue is finished now."""
    if not ends:
        return None
    if mode != "first":
        return ends[-1] if intervals[-1].status.finished else None
    start = spans[0][0] if spans else None
    return next((end for end in ends if start is None or end.entered_at >= start), None)
