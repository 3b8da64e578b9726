"""The sprint model: which issues each sprint held and when (`sprint_issue_history`), and
per sprint what was committed, added, removed, completed and carried over
(`sprint_summary`), from the issues' `sprint` field history and the sprints' dates.

A sprint runs from its `startDateTime` to its `endDateTime` (dates: midnight to midnight in
UTC); one not over yet is measured to the as-of instant. An issue is in a sprint while its
`sprint` field lists it (from creation, when the changelog never changed it). Of the
issues in a sprint at any time of its run:
- committed: in it when it started;
- added: came in after it started;
- removed: in it during its run but not at its end;
- completed: in it when it entered a status that finishes work ([model]) during the run,
  and finished at the run's end;
- carried over (spillover): in it at the end of a sprint that is over, not finished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from haul.pipelines.export.columns import timestamp, value
from haul.pipelines.export.tables import Derived, ExportContext, Table
from haul.pipelines.export.values import parse_date, parse_timestamp
from haul.pipelines.tracker.export_columns import of_issue, staged_logins
from haul.pipelines.tracker.flow.model import (
    Interval,
    LoginOf,
    created_at,
    field_history,
    finishes,
    plain,
    status_intervals,
)
from haul.pipelines.tracker.flow.tables import (
    ISSUE_KEY,
    SERVICE,
    FlowSettings,
    issue_histories,
    statuses_of,
)
from haul.state.store import StagingStore

Span = tuple[datetime, datetime | None]  # [from, to); None: still


@dataclass(frozen=True)
class Sprint:
    """A sprint's id, name, board, status and run."""

    id: str
    name: str | None
    board: str | None
    status: str | None
    start: datetime
    end: datetime
    staged_at: str = ""  # when haul last staged the sprint


@dataclass(frozen=True)
class InSprint:
    """One issue's part in one sprint."""

    sprint: Sprint
    added_at: datetime
    removed_at: datetime | None
    committed: bool
    added: bool
    removed: bool
    completed_at: datetime | None
    carried_over: bool


def staged_sprints(store: StagingStore) -> dict[str, Sprint]:
    """Sprint id -> its run, of every staged sprint with readable dates."""
    sprints = {}
    for record in store.iter_records("sprint"):
        raw = record.raw
        start = parse_timestamp(raw.get("startDateTime")) or _midnight(raw.get("startDate"))
        end = parse_timestamp(raw.get("endDateTime")) or _midnight(raw.get("endDate"), 1)
        if start is None or end is None:
            continue
        board = (raw.get("board") or {}).get("id")
        sprint_id = str(raw.get("id"))
        sprints[sprint_id] = Sprint(
            sprint_id, raw.get("name"), None if board is None else str(board), raw.get("status"),
            start, end, record.staged_at,
        )  # fmt: skip
    return sprints


def _midnight(text: Any, days: int = 0) -> datetime | None:
    day = parse_date(text)
    return None if day is None else datetime.combine(day + timedelta(days=days), time(0), UTC)


def memberships(
    issue: dict[str, Any], changes: Sequence[Any], login_of: LoginOf
) -> dict[str, list[Span]]:
    """Sprint id -> the spans the issue's `sprint` field listed it, adjacent ones joined."""
    rows = [row for row in field_history(issue, changes, login_of) if row.field == "sprint"]
    values = [(row.value, row.valid_from, row.valid_to) for row in rows]
    if not rows:
        values = [(plain("sprint", issue.get("sprint"), login_of), created_at(issue), None)]
    spans: dict[str, list[Span]] = {}
    for listed, since, until in values:
        for sprint_id in _ids(listed):
            own = spans.setdefault(sprint_id, [])
            if own and own[-1][1] == since:
                own[-1] = (own[-1][0], until)
            else:
                own.append((since, until))
    return spans


def _ids(listed: Any) -> list[str]:
    if listed is None:
        return []
    return [str(item) for item in (listed if isinstance(listed, list) else [listed])]


def _member(spans: list[Span], moment: datetime) -> bool:
    return any(since <= moment and (until is None or moment < until) for since, until in spans)


def _finished_at(intervals: Sequence[Interval], moment: datetime) -> bool:
    current = [interval for interval in intervals if interval.entered_at <= moment]
    return bool(current) and current[-1].status.finished


def in_sprint(
    sprint: Sprint, spans: list[Span], intervals: Sequence[Interval], now: datetime
) -> InSprint | None:
    """The issue's part in `sprint` (None when it was never in it during its run)."""
    end = min(sprint.end, now)
    during = [(a, b) for a, b in spans if a <= end and (b is None or b > sprint.start)]
    if not during:
        return None
    committed = _member(spans, sprint.start)
    at_end = _member(spans, end)
    removed_at = spans[-1][1]
    finishing = [i.entered_at for i in finishes(intervals) if sprint.start <= i.entered_at <= end]
    done = next((f for f in reversed(finishing) if _member(spans, f)), None)
    completed = done if done is not None and _finished_at(intervals, end) else None
    over = sprint.end <= now
    return InSprint(
        sprint=sprint,
        added_at=spans[0][0],
        removed_at=removed_at,
        committed=committed,
        added=not committed,
        removed=not at_end,
        completed_at=completed,
        carried_over=over and at_end and completed is None and not _finished_at(intervals, end),
    )


def sprint_parts(context: ExportContext) -> Iterator[tuple[Any, list[InSprint]]]:
    """Each staged issue's history with its parts in the staged sprints."""
    flow, statuses = FlowSettings.of(context), statuses_of(context)
    sprints = context.memo("tracker.sprints", staged_sprints)
    logins = context.memo("tracker.logins", staged_logins)
    for history in issue_histories(context):
        raw = history.issue.raw
        spans = memberships(raw, history.changes, logins.get)
        if not spans:
            yield history, []
            continue
        intervals = status_intervals(raw, history.changes, statuses, flow.now, flow.calendar)
        parts = [
            part
            for sprint_id, own in spans.items()
            if sprint_id in sprints
            and (part := in_sprint(sprints[sprint_id], own, intervals, flow.now)) is not None
        ]
        yield history, parts


def derive_sprint_history(context: ExportContext) -> Iterator[Derived]:
    """sprint_issue_history: one row per issue and sprint it was in during the run."""
    for history, parts in sprint_parts(context):
        rows = [
            {
                "issue_key": history.key,
                "sprint_id": part.sprint.id,
                "sprint_name": part.sprint.name,
                "board_id": part.sprint.board,
                "added_at": part.added_at,
                "removed_at": part.removed_at,
                "committed": part.committed,
                "added": part.added,
                "removed": part.removed,
                "completed": part.completed_at is not None,
                "completed_at": part.completed_at,
                "carried_over": part.carried_over,
            }
            for part in sorted(parts, key=lambda part: (part.sprint.start, part.sprint.id))
        ]
        yield Derived(history.key, history.staged_at, rows)


SPRINT_ISSUE_HISTORY = Table("sprint_issue_history", "changelog", (
    ISSUE_KEY,
    value("sprint_id", "string", "the sprint: id", "sprint_id"),
    value("sprint_name", "string", "the sprint: name", "sprint_name"),
    value("board_id", "string", "its board", "board_id"),
    timestamp("added_at", "when the issue's sprint field first listed it", "added_at"),
    timestamp("removed_at", "when it last stopped listing it (empty: it lists it now)", "removed_at"),
    value("committed", "bool", "in the sprint when it started", "committed"),
    value("added", "bool", "came into the sprint after it started", "added"),
    value("removed", "bool", "in the sprint during its run, not at its end (or now)", "removed"),
    value("completed", "bool", "finished work ([model]) in the sprint during its run, finished at its end", "completed"),
    timestamp("completed_at", "when it finished in it", "completed_at"),
    value("carried_over", "bool", "in the sprint at its end, not finished (a sprint that is over)", "carried_over"),
), doc="one row per issue and sprint it was in during the sprint's run: committed, added, removed, completed in it, carried over",
   service=SERVICE, derive=derive_sprint_history, access=of_issue)  # fmt: skip


def derive_sprint_summary(context: ExportContext) -> Iterator[Derived]:
    """sprint_summary: one row per staged sprint."""
    sprints = context.memo("tracker.sprints", staged_sprints)
    counts: dict[str, Counter[str]] = {sprint_id: Counter() for sprint_id in sprints}
    staged: dict[str, str] = {}
    for history, parts in sprint_parts(context):
        if not parts or context.withholds("sprint_summary", of_issue(history.issue, context)):
            continue
        for part in parts:
            tally = counts[part.sprint.id]
            tally.update(
                committed=int(part.committed), added=int(part.added), removed=int(part.removed),
                completed=int(part.completed_at is not None), spillover=int(part.carried_over),
            )  # fmt: skip
            staged[part.sprint.id] = max(staged.get(part.sprint.id, ""), history.staged_at)
    now = context.as_of
    for sprint in sorted(sprints.values(), key=lambda sprint: (sprint.start, sprint.id)):
        tally = counts[sprint.id]
        row = {
            "sprint_id": sprint.id,
            "sprint_name": sprint.name,
            "board_id": sprint.board,
            "status": sprint.status,
            "start_at": sprint.start,
            "end_at": sprint.end,
            "over": sprint.end <= now,
            **{name: tally[name] for name in SUMMARY_COUNTS},
        }
        yield Derived(sprint.id, max(staged.get(sprint.id, ""), sprint.staged_at), [row])


SUMMARY_COUNTS = ("committed", "added", "removed", "completed", "spillover")

SPRINT_SUMMARY = Table("sprint_summary", "changelog", (
    value("sprint_id", "string", "the sprint: id", "sprint_id"),
    value("sprint_name", "string", "the sprint: name", "sprint_name"),
    value("board_id", "string", "its board", "board_id"),
    value("status", "string", "its status (draft, in_progress, released...)", "status"),
    timestamp("start_at", "when it starts", "start_at"),
    timestamp("end_at", "when it ends", "end_at"),
    value("over", "bool", "whether it ended before the as-of instant", "over"),
    value("committed", "int", "issues in it when it started", "committed"),
    value("added", "int", "issues that came in after it started", "added"),
    value("removed", "int", "issues in it during its run, not at its end", "removed"),
    value("completed", "int", "issues finished in it", "completed"),
    value("spillover", "int", "issues in it at its end, not finished (carried over)", "spillover"),
), doc="one row per sprint: committed, added, removed, completed, spillover (sprint_issue_history counted)",
   service=SERVICE, derive=derive_sprint_summary)  # fmt: skip
