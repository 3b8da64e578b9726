"""The tracker's extract streams: dictionaries, each queue's issue scroll, and the issue drain.

Issues are scrolled per queue, sorted by update time; each page is staged with the queue's
watermark (update time and key of its last issue), so a crash or an expired scroll restarts
from the watermark, not from the beginning. The drain fetches an issue's comments, worklogs,
changelog, links, attachments (with their bytes) and checklist.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from haul.connectors.errors import BodyMismatch, HaulError, RecordError, ScrollExpiredError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.streams import Page, Row
from haul.pipelines.tracker.probes import parse_time
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

MAX_SCROLL_RESTARTS = 20
DOWNLOAD_ATTEMPTS = 3


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
        yield Page([{"source_id": str(row[self.id_key]), "raw": row} for row in rows])


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


@dataclass
class IssueDrain:
    """An issue's sub-records, fetched together; attachment bytes go to the blob store."""

    client: TrackerClient
    store: StagingStore
    concurrent: bool = True
    attachment_bytes: int = 0
    parent: str = "issue"
    counts: dict[str, int] = field(default_factory=dict)

    async def fetch(self, issue: StagedRecord) -> dict[str, list[Row]]:
        """Ask only for what the issue says it has (see `listings_needed`)."""
        key = issue.source_id
        needed = listings_needed(issue.raw)
        listings: dict[str, Callable[[], Awaitable[list[dict[str, Any]]]]] = {
            "comment": lambda: _collect(self.client.iter_comments(key)),
            "worklog": lambda: _collect(self.client.iter_worklogs(key)),
            "changelog": lambda: _collect(self.client.iter_changelog(key)),
            "link": lambda: self.client.list_links(key),
            "attachment": lambda: self.client.list_attachments(key),
        }
        asked = {entity: listings[entity] for entity in needed}
        if self.concurrent:
            replies = await asyncio.gather(*(listing() for listing in asked.values()))
            results = dict(zip(asked, replies, strict=True))
        else:  # one request at a time: the benchmark's baseline
            results = {entity: await listing() for entity, listing in asked.items()}
        attachments = results.get("attachment") or embedded_attachments(issue.raw) or []
        blobs, problems = await self._fetch_blobs(key, attachments)
        return {
            "comment": _rows(key, results.get("comment", [])),
            "worklog": _rows(key, results.get("worklog", [])),
            "changelog": _rows(key, results.get("changelog", [])),
            "link": _rows(key, results.get("link", [])),
            "attachment": _rows(key, attachments, blobs, problems),
            "checklist": _checklist_rows(key, checklist_of(issue.raw)),
        }

    async def _fetch_blobs(
        self, key: str, attachments: list[dict[str, Any]]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Download each attachment not staged yet (same id, same size).

        Returns id -> sha256 of the staged bytes, and id -> problem for those whose bytes
        could not be had whole.
        """
        blobs: dict[str, str] = {}
        problems: dict[str, str] = {}
        for attachment in attachments:
            staged = self.store.get_record("attachment", f"{key}/{attachment['id']}")
            if (
                staged
                and staged.blob
                and self.store.blobs.exists(staged.blob)
                and staged.raw.get("size") == attachment.get("size")
            ):
                blobs[str(attachment["id"])] = staged.blob
                continue
            try:
                blobs[str(attachment["id"])] = await self._download(key, attachment)
            except DownloadProblem as exc:
                problems[str(attachment["id"])] = str(exc)
        return blobs, problems

    async def _download(self, key: str, attachment: dict[str, Any]) -> str:
        """The attachment's bytes into the blob store, checked against the listed size."""
        expected = attachment.get("size")
        problem = ""
        for _ in range(DOWNLOAD_ATTEMPTS):
            try:
                with self.store.blobs.writer() as sink:
                    await self.client.download_attachment(
                        key, attachment["id"], attachment["name"], sink
                    )
                    if expected is not None and sink.size != int(expected):
                        # raised inside the writer's block: the short file is discarded
                        raise _WrongSize(f"expected {expected} bytes, got {sink.size}")
            except (_WrongSize, BodyMismatch) as exc:  # a fresh file, a fresh try
                problem = f"download of {attachment['name']!r} came short or long: {exc}"
                log.warning(
                    "download_wrong_size", issue=key, attachment=attachment["id"], error=str(exc)
                )
                continue
            except RecordError as exc:
                raise DownloadProblem(f"download of {attachment['name']!r} failed: {exc}") from exc
            self.attachment_bytes += sink.size
            return sink.sha256
        raise DownloadProblem(f"{problem} ({DOWNLOAD_ATTEMPTS} attempts)")


class _WrongSize(Exception):
    pass


class DownloadProblem(Exception):
    """An attachment's bytes could not be had whole; the message says why."""


def listings_needed(issue: dict[str, Any]) -> list[str]:
    """The listings an issue needs, from what the service already told about it.

    Changelog and links always (nothing on the issue counts them). Comments unless both comment
    counters say zero; worklogs only when time was spent; attachments only when the issue does
    not carry them with their metadata (``expand=attachments``). The checklist arrives inside
    the issue (`checklistItems`) and needs no request at all.
    """
    needed = ["changelog", "link"]
    counters = [issue.get(name) for name in COMMENT_COUNTERS]
    if any(count is None or count for count in counters):
        needed.append("comment")
    if issue.get("spent"):
        needed.append("worklog")
    if embedded_attachments(issue) is None:
        needed.append("attachment")
    return needed


def embedded_attachments(issue: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The attachments embedded in the issue with their metadata (``expand=attachments``),
    or None when they are not all there (bare refs without a size: list them)."""
    embedded = issue.get("attachments")
    if not isinstance(embedded, list):
        return None
    if all(isinstance(a, dict) and {"id", "name", "size"} <= a.keys() for a in embedded):
        return [{k: v for k, v in a.items() if k != "display"} for a in embedded]
    return None


def checklist_of(issue: dict[str, Any]) -> list[dict[str, Any]]:
    """The checklist the issue carries (empty when it has none)."""
    items = issue.get("checklistItems")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


COMMENT_COUNTERS = ("commentWithoutExternalMessageCount", "commentWithExternalMessageCount")


def _checklist_rows(parent: str, items: list[dict[str, Any]]) -> list[Row]:
    """An issue's checklist is one record: its order matters and it loads in one request."""
    if not items:
        return []
    return [
        {
            "source_id": f"{parent}/checklist",
            "parent": parent,
            "updated_at": None,
            "raw": {"items": items},
        }
    ]


async def _collect(listing: Any) -> list[dict[str, Any]]:
    return [item async for item in listing]


def _rows(
    parent: str,
    records: list[dict[str, Any]],
    blobs: dict[str, str] | None = None,
    problems: dict[str, str] | None = None,
) -> list[Row]:
    rows = []
    for record in records:
        row = {
            "source_id": f"{parent}/{record['id']}",
            "parent": parent,
            "updated_at": record.get("updatedAt") or record.get("createdAt"),
            "raw": record,
            "blob": (blobs or {}).get(str(record["id"])),
        }
        if problems and str(record["id"]) in problems:
            row["problem"] = problems[str(record["id"])]
        rows.append(row)
    return rows
