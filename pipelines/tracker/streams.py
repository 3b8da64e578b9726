"""The tracker's extract streams: dictionaries and each queue's issue scroll.

Issues are scrolled per queue, sorted by update time; each page is staged with the queue's
watermark (update time and key of its last issue), so a crash or an expired scroll restarts
from the watermark, not from the beginning. The issue drain is in `drain`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from haul.connectors.errors import HaulError, NotFoundError, ScrollExpiredError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import ConfigError
from haul.pipelines.streams import Page
from haul.pipelines.tracker.probes import parse_time

log = structlog.get_logger(__name__)

MAX_SCROLL_RESTARTS = 20


class ScrollStalled(HaulError):
    """Scrolls keep expiring before a page is staged: the run cannot make progress."""


@dataclass
class ListStream:
    """A whole dictionary (statuses, users, ...) as one page; `prefix` marks the target's."""

    entity: str
    fetch: Callable[[], Awaitable[list[dict[str, Any]]]]
    id_key: str = "id"
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        rows = await self.fetch()
        named = [row for row in rows if _identity(row, self.id_key)]
        # an item without its identity cannot be staged (nothing would name it): the listing
        # has a problem of its own, which haul failures lists, until it comes whole again
        listing = (self.entity, f"{self.entity} listing")
        lacking = len(rows) - len(named)
        why = f"the tracker listed {lacking} {self.entity}(s) without their {self.id_key}"
        problems = [(*listing, why)] if lacking else []
        settled = [] if lacking else [listing]
        staged = [{"source_id": str(row[self.id_key]), "raw": row} for row in named]
        yield Page(staged, None, problems, settled)


def _identity(row: Any, key: str) -> bool:
    return isinstance(row, dict) and row.get(key) not in (None, "")


def dictionary_streams(client: TrackerClient, prefix: str = "") -> list[ListStream]:
    """One org's dictionaries, queues and users (the target's under the `target.` prefix)."""

    async def queues() -> list[dict[str, Any]]:
        return [queue async for queue in client.iter_queues()]

    async def users() -> list[dict[str, Any]]:
        return [user async for user in client.iter_users()]

    return [
        ListStream(prefix + "status", client.list_statuses),
        ListStream(prefix + "issuetype", client.list_issue_types),
        ListStream(prefix + "priority", client.list_priorities),
        ListStream(prefix + "resolution", client.list_resolutions),
        ListStream(prefix + "linktype", client.list_link_types),
        ListStream(prefix + "queue", queues, id_key="key"),
        ListStream(prefix + "user", users, id_key="uid"),
    ]


@dataclass
class RowsStream:
    """Rows built whole by `fetch` (source id, parent, raw), staged as one page."""

    entity: str
    fetch: Callable[[], Awaitable[list[dict[str, Any]]]]
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        yield Page(await self.fetch())


def structure_streams(
    client: TrackerClient, queues: Sequence[str]
) -> list[ListStream | RowsStream]:
    """The source org's structure the issues of `queues` point to: fields and their
    categories, the queues' local fields, components and versions, boards with their columns
    and sprints."""

    async def per_queue(
        listing: Callable[[str], Awaitable[list[dict[str, Any]]]],
    ) -> list[dict[str, Any]]:
        rows = []
        for queue in queues:
            try:
                listed = await listing(queue)
            except NotFoundError as exc:  # a typo in the config, not an empty queue: exit 2
                problem = f"{queue} is not a queue of the tracker source org ({exc.server_message})"
                raise ConfigError("scope.queues", problem) from exc
            for item in listed:
                source_id = f"{queue}/{item['key']}" if "key" in item else str(item["id"])
                rows.append({"source_id": source_id, "parent": queue, "raw": item})
        return rows

    async def columns() -> list[dict[str, Any]]:
        rows = []
        for board in await client.list_boards():
            for position, column in enumerate(await client.list_board_columns(board["id"])):
                raw = {**column, "position": position}
                source_id = f"{board['id']}/{column['id']}"
                rows.append({"source_id": source_id, "parent": str(board["id"]), "raw": raw})
        return rows

    async def sprints() -> list[dict[str, Any]]:
        return [
            {"source_id": str(sprint["id"]), "parent": str(board["id"]), "raw": sprint}
            for board in await client.list_boards()
            for sprint in await client.list_board_sprints(board["id"])
        ]

    return [
        ListStream("field_category", client.list_field_categories),
        ListStream("field", client.list_fields),
        RowsStream("local_field", lambda: per_queue(client.list_local_fields)),
        RowsStream("component", lambda: per_queue(client.list_queue_components)),
        RowsStream("version", lambda: per_queue(client.list_queue_versions)),
        ListStream("board", client.list_boards),
        RowsStream("board_column", columns),
        RowsStream("sprint", sprints),
    ]


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


def format_time(moment: datetime) -> str:
    """An instant in the tracker's query format (UTC, milliseconds)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


def checkpoint_name(queue: str) -> str:
    """The checkpoint of one queue's issue scroll."""
    return f"extract.issues.{queue}"


@dataclass
class IssueScroll:
    """One queue's issues, scrolled oldest update first from the watermark."""

    client: TrackerClient
    queue: str
    narrowing: str | None = None
    per_scroll: int = 500
    ttl_ms: int = 300_000
    lookback: timedelta = timedelta(minutes=10)
    restarts: int = 0
    entity: str = "issue"

    @property
    def checkpoint(self) -> str:
        return checkpoint_name(self.queue)

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        """Scroll to the end; an expired scroll restarts from the last committed watermark."""
        stalled = 0
        while stalled < MAX_SCROLL_RESTARTS:
            checkpoint = saved()
            since = since_watermark(checkpoint, self.lookback)
            log.info("scroll_started", queue=self.queue, since=since)
            scroll = self.client.scroll_issues(
                query=scroll_query(self.queue, since, self.narrowing),
                per_scroll=self.per_scroll,
                ttl_ms=self.ttl_ms,
                expand="attachments",
            )
            try:
                async with aclosing(scroll):
                    async for issues in scroll:
                        if issues:
                            yield self._page(issues)
                return
            except ScrollExpiredError:
                self.restarts += 1
                moved = saved() != checkpoint
                stalled = 0 if moved else stalled + 1
                log.warning(
                    "scroll_expired", queue=self.queue, restart_from=since, progressed=moved
                )
        raise ScrollStalled(
            f"the scroll of queue {self.queue} expired {MAX_SCROLL_RESTARTS} times without "
            "progress: raise [tuning] scroll_ttl_ms or lower per_scroll"
        )

    def _page(self, issues: list[dict[str, Any]]) -> Page:
        """Rows for the issues that have a key; the watermark of the last readable update time.

        An issue without a key cannot be staged (nothing would name it): it is kept as a
        problem under its queue and id, and left out. An update time in another form is staged as it came; the watermark is
        written in the tracker's own form, so a later run can always read it back.
        """
        rows, problems, watermark = [], [], None
        for issue in issues:
            if not issue.get("key"):
                name = f"{self.queue}:id={issue.get('id', '?')}"
                problems.append(("issue", name, "the tracker listed an issue without a key"))
                continue
            rows.append(
                {
                    "source_id": issue["key"],
                    "parent": self.queue,
                    "updated_at": issue.get("updatedAt"),
                    "raw": issue,
                }
            )
            try:
                moment = parse_time(str(issue.get("updatedAt")))
            except ValueError:
                log.warning(
                    "unreadable_time", issue=issue["key"], updated_at=issue.get("updatedAt")
                )
                continue
            watermark = {"updated_at": format_time(moment), "key": issue["key"]}
        return Page(rows, watermark, problems)
