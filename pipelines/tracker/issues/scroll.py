"""Each queue's issue scroll: the issues layer's extract stream.

Issues are scrolled per queue, sorted by update time; each page is staged with the queue's
watermark (update time and key of its last issue), so a crash or an expired scroll restarts
from the watermark, not from the beginning. The issue drain is in `drain`; the dictionaries'
and the structure's streams are the organisation layer's (`organisation.streams`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from haul.connectors.errors import HaulError, ScrollExpiredError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.streams import Page
from haul.pipelines.tracker.timefmt import format_time, parse_time

log = structlog.get_logger(__name__)

MAX_SCROLL_RESTARTS = 20


class ScrollStalled(HaulError):
    """Scrolls keep expiring before a page is staged: the run cannot make progress."""


def scroll_query(queue: str, since: str | None, narrowing: str | None) -> str:
    """The query for one queue's scroll: updated since the watermark, oldest first."""
    terms = [f"Queue: {queue}"]
    if since:
        terms.append(f'Updated: >= "{since}"')
    if narrowing:
        terms.append(narrowing)
    return " AND ".join(terms) + ' "Sort By": Updated ASC'


def since_watermark(checkpoint: dict[str, Any] | None, lookback: timedelta) -> str | None:
    """Where a scroll restarts: the watermark minus the lookback, in the tracker's format."""
    if not checkpoint or not checkpoint.get("updated_at"):
        return None
    return format_time(parse_time(checkpoint["updated_at"]) - lookback)


def checkpoint_name(queue: str) -> str:
    """The checkpoint of one queue's issue scroll."""
    return f"extract.issues.{queue}"


@dataclass
class Position:
    """Where this run's scroll has staged up to: the last update time staged, and the keys
    staged at that very instant (a restart asks from that instant on and skips them)."""

    moment: datetime | None = None
    keys: set[str] = field(default_factory=set)

    def passed(self, key: str, moment: datetime) -> bool:
        """Whether an issue at `moment` was staged already by this run (a restart repeats
        the issues of the instant it starts from)."""
        return self.moment is not None and moment == self.moment and key in self.keys

    def mark(self) -> tuple[datetime | None, int]:
        """Compared before and after a scroll: whether it staged anything new."""
        return self.moment, len(self.keys)

    def advance(self, key: str, moment: datetime) -> None:
        if self.moment is None or moment > self.moment:
            self.moment, self.keys = moment, {key}
        elif moment == self.moment:
            self.keys.add(key)


@dataclass
class IssueScroll:
    """One queue's issues, scrolled oldest update first from the watermark.

    The watermark a page commits never moves past the source's "now" (its replies' `Date`:
    an issue stamped in the future would carry it there, and every later change would be
    skipped), nor past an issue listed without its key (the next run reads it again). A
    scroll that expires mid-run restarts from the last update time this run staged, not from
    the watermark less the lookback: a window holding more changes than a scroll page would
    otherwise be read again from its start at every restart.
    """

    client: TrackerClient
    queue: str
    narrowing: str | None = None
    per_scroll: int = 500
    ttl_ms: int = 300_000
    lookback: timedelta = timedelta(minutes=10)
    restarts: int = 0
    entity: str = "issue"
    now: Callable[[], datetime | None] | None = None  # the source's clock; default its replies'
    _position: Position = field(default_factory=Position, init=False, repr=False)
    _held: datetime | None = field(default=None, init=False, repr=False)  # a keyless issue's time

    @property
    def checkpoint(self) -> str:
        return checkpoint_name(self.queue)

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        """Scroll to the end; an expired scroll restarts past what this run has staged."""
        stalled = 0
        since = self._since(saved())
        while stalled < MAX_SCROLL_RESTARTS:
            log.info("scroll_started", queue=self.queue, since=since)
            scroll = self.client.scroll_issues(
                query=scroll_query(self.queue, since, self.narrowing),
                per_scroll=self.per_scroll,
                ttl_ms=self.ttl_ms,
                expand="attachments",
            )
            before = self._position.mark()
            try:
                async with aclosing(scroll):
                    async for issues in scroll:
                        page = self._page([i for i in issues if not self._passed(i)], saved)
                        if page.rows or page.problems:
                            yield page
                return
            except ScrollExpiredError:
                self.restarts += 1
                progressed = self._position.mark() != before
                stalled = 0 if progressed else stalled + 1
                if self._position.moment is not None:
                    since = format_time(self._position.moment)
                log.warning(
                    "scroll_expired", queue=self.queue, restart_from=since, progressed=progressed
                )
        raise ScrollStalled(
            f"the scroll of queue {self.queue} expired {MAX_SCROLL_RESTARTS} times without "
            "progress: raise [tuning] scroll_ttl_ms or lower per_scroll"
        )

    def _since(self, checkpoint: dict[str, Any] | None) -> str | None:
        """Where the run's first scroll starts: the watermark less the lookback; the whole
        queue when the watermark lies past the source's now (left so by an older haul: the
        changes since its true place are unknown, so all are read once more)."""
        if checkpoint and checkpoint.get("updated_at"):
            now = self._source_now()
            if parse_time(checkpoint["updated_at"]) > now:
                log.warning(
                    "watermark_in_future", queue=self.queue,
                    watermark=checkpoint["updated_at"], source_now=format_time(now),
                )  # fmt: skip
                return None
        return since_watermark(checkpoint, self.lookback)

    def _passed(self, issue: dict[str, Any]) -> bool:
        moment = _moment(issue)
        return (
            bool(issue.get("key"))
            and moment is not None
            and self._position.passed(str(issue["key"]), moment)
        )

    def _page(
        self,
        issues: list[dict[str, Any]],
        saved: Callable[[], dict[str, Any] | None] = lambda: None,
    ) -> Page:
        """Rows for the issues that have a key; the watermark of the last readable update time.

        An issue without a key cannot be staged (nothing would name it): it is kept as a
        problem under its queue and id, left out, and holds the watermark at its update time
        so that the next run lists it again; once it comes with its key, its problem is
        settled. An update time in another form is staged as it came; the watermark is
        written in the tracker's own form, so a later run can always read it back.
        """
        rows, problems, settled, last = [], [], [], None
        for issue in issues:
            moment = _moment(issue)
            if not issue.get("key"):
                problems.append(("issue", keyless_name(self.queue, issue), KEYLESS))
                self._hold(moment, saved)
                continue
            key = str(issue["key"])
            rows.append(
                {"source_id": key, "parent": self.queue, "updated_at": issue.get("updatedAt"),
                 "raw": issue}
            )  # fmt: skip
            if issue.get("id") is not None:
                settled.append(("issue", keyless_name(self.queue, issue)))
            if moment is None:
                log.warning("unreadable_time", issue=key, updated_at=issue.get("updatedAt"))
                continue
            self._position.advance(key, moment)
            last = (moment, key)
        return Page(rows, self._watermark(last), problems, settled)

    def _hold(self, moment: datetime | None, saved: Callable[[], dict[str, Any] | None]) -> None:
        """Keep the watermark at or before a keyless issue (at the last one committed when
        its own time cannot be read; where it was, when nothing was committed yet)."""
        committed = saved() if moment is None else None
        if committed and committed.get("updated_at"):
            moment = parse_time(committed["updated_at"])
        held = moment or NOWHERE
        self._held = held if self._held is None else min(self._held, held)

    def _watermark(self, last: tuple[datetime, str] | None) -> dict[str, Any] | None:
        """The checkpoint of a page whose last readable issue is `last`, capped by the
        source's now and by a keyless issue (see the class docstring); None: not moved."""
        if last is None or self._held == NOWHERE:
            return None
        moment, key = last
        now = self._source_now()
        if moment > now:
            log.warning(
                "updated_in_future", queue=self.queue, issue=key, updated_at=format_time(moment),
                source_now=format_time(now),
            )  # fmt: skip
            moment = now
        if self._held is not None:
            moment = min(moment, self._held)
        return {"updated_at": format_time(moment), "key": key}

    def _source_now(self) -> datetime:
        told = self.now() if self.now is not None else self.client.server_now()
        # no Date from the service: the local clock, the best left (an early one only
        # reads more again)
        return told or datetime.now(UTC)


KEYLESS = "the tracker listed an issue without a key"
NOWHERE = datetime.min.replace(tzinfo=UTC)  # a keyless issue of unknown time: hold the watermark


def keyless_name(queue: str, issue: dict[str, Any]) -> str:
    """How an issue listed without its key is named: its queue and its id."""
    return f"{queue}:id={issue.get('id', '?')}"


def _moment(issue: dict[str, Any]) -> datetime | None:
    try:
        return parse_time(str(issue.get("updatedAt")))
    except ValueError:
        return None
