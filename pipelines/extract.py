"""Extract: scroll-search issues into the staging store and drain each issue's sub-records.

Issues are scrolled per queue, sorted by update time; each page is staged in the same
transaction as the queue's watermark (update time and key of its last issue), so a crash or
an expired scroll restarts from the watermark, not from the beginning. Pages feed a bounded
queue of drain workers: an issue's comments, worklogs, changelog, links, attachments (with
their bytes) and checklist are staged together with its "drained" mark, in one transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from haul.connectors.errors import ScrollExpiredError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.progress import Progress
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

DICTIONARIES = {
    "status": "list_statuses",
    "issuetype": "list_issue_types",
    "priority": "list_priorities",
    "resolution": "list_resolutions",
    "linktype": "list_link_types",
}
TRACKER_TIME = "%Y-%m-%dT%H:%M:%S.%f"
MAX_SCROLL_RESTARTS = 20


class ScrollStalled(Exception):
    """Scrolls keep expiring before a page is staged: the run cannot make progress."""


@dataclass
class ExtractStats:
    issues_staged: int = 0
    issues_drained: int = 0
    sub_records: dict[str, int] = field(default_factory=dict)
    attachment_bytes: int = 0
    scroll_restarts: int = 0


def checkpoint_name(queue: str) -> str:
    return f"extract.issues.{queue}"


async def stage_dictionaries(
    client: TrackerClient, store: StagingStore, prefix: str = ""
) -> dict[str, int]:
    """Stage one org's dictionaries, queues and users (the target's under the `target.` prefix)."""
    counts: dict[str, int] = {}
    for entity, method in DICTIONARIES.items():
        rows = await getattr(client, method)()
        counts[prefix + entity] = _stage_flat(store, prefix + entity, rows, "id")
    queues = [queue async for queue in client.iter_queues()]
    counts[prefix + "queue"] = _stage_flat(store, prefix + "queue", queues, "key")
    users = [user async for user in client.iter_users()]
    counts[prefix + "user"] = _stage_flat(store, prefix + "user", users, "uid")
    log.info(
        "dictionaries_staged",
        org=prefix.rstrip(".") or "source",
        **{k.replace(".", "_"): v for k, v in counts.items()},
    )
    return counts


def _stage_flat(store: StagingStore, entity: str, rows: list[dict[str, Any]], id_key: str) -> int:
    with store.transaction():
        return store.upsert_records(
            entity,
            (
                {"source_id": str(row[id_key]), "parent": None, "updated_at": None, "raw": row}
                for row in rows
            ),
        )


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
    moment = parse_time(checkpoint["updated_at"]) - lookback
    return format_time(moment)


def parse_time(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f%z")


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TRACKER_TIME)[:-3] + "+0000"


@dataclass
class IssueExtractor:
    """One extract run: scroll producers feed drain workers through a bounded queue."""

    client: TrackerClient
    store: StagingStore
    progress: Progress
    concurrency: int = 16
    per_scroll: int = 500
    scroll_ttl_ms: int = 300_000
    lookback: timedelta = timedelta(minutes=10)
    stats: ExtractStats = field(default_factory=ExtractStats)

    async def run(self, queues: tuple[str, ...], narrowing: str | None = None) -> ExtractStats:
        pending: asyncio.Queue[str | None] = asyncio.Queue(maxsize=self.concurrency * 4)
        self._drain_task = self.progress.task("issues drained")
        workers = [
            asyncio.create_task(self._drain_worker(pending)) for _ in range(self.concurrency)
        ]
        try:
            for key in list(self.store.needs_drain("issue")):  # left over by an interrupted run
                await pending.put(key)
            for queue in queues:
                await self._scroll_queue(queue, narrowing, pending.put)
            for _ in workers:
                await pending.put(None)
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()
        return self.stats

    async def _scroll_queue(
        self, queue: str, narrowing: str | None, enqueue: Callable[[str], Awaitable[None]]
    ) -> None:
        """Scroll one queue to its end; an expired scroll restarts from the watermark."""
        staged = self.progress.task(f"issues staged ({queue})")
        stalled = 0
        while stalled < MAX_SCROLL_RESTARTS:
            checkpoint = self.store.get_checkpoint(checkpoint_name(queue))
            since = since_watermark(checkpoint, self.lookback)
            log.info("scroll_started", queue=queue, since=since)
            pages = self.client.scroll_issues(
                query=scroll_query(queue, since, narrowing),
                per_scroll=self.per_scroll,
                ttl_ms=self.scroll_ttl_ms,
            )
            try:
                async with aclosing(pages):
                    async for page in pages:
                        for key in self._stage_page(queue, page):
                            await enqueue(key)
                        self.progress.advance(staged, len(page))
                return
            except ScrollExpiredError:
                self.stats.scroll_restarts += 1
                moved = self.store.get_checkpoint(checkpoint_name(queue)) != checkpoint
                stalled = 0 if moved else stalled + 1
                log.warning("scroll_expired", queue=queue, restart_from=since, progressed=moved)
        raise ScrollStalled(
            f"the scroll of queue {queue} expired {MAX_SCROLL_RESTARTS} times without progress: "
            "raise [tuning] scroll_ttl_ms or lower per_scroll"
        )

    def _stage_page(self, queue: str, page: list[dict[str, Any]]) -> list[str]:
        """Stage a page and move the watermark, together; return the keys that need draining."""
        if not page:
            return []
        rows = [
            {
                "source_id": issue["key"],
                "parent": queue,
                "updated_at": issue["updatedAt"],
                "raw": issue,
            }
            for issue in page
        ]
        last = page[-1]
        with self.store.transaction():
            self.store.upsert_records("issue", rows)
            self.store.set_checkpoint(
                checkpoint_name(queue), {"updated_at": last["updatedAt"], "key": last["key"]}
            )
        self.stats.issues_staged += len(page)
        log.info(
            "page_staged", stage="issues", queue=queue, rows=len(page), watermark=last["updatedAt"]
        )
        return list(self.store.needs_drain("issue", keys=[issue["key"] for issue in page]))

    async def _drain_worker(self, pending: asyncio.Queue[str | None]) -> None:
        while (key := await pending.get()) is not None:
            await self.drain_issue(key)
            self.progress.advance(self._drain_task)

    async def drain_issue(self, key: str) -> None:
        """Fetch every sub-record of one issue, then stage them with its drained mark."""
        issue = self.store.get_record("issue", key)
        # A key can be queued twice (left over from an interrupted run, then again from a
        # page): the second one finds the mark current and does nothing.
        if issue is None or self.store.drained_version(key) == issue.updated_at:
            return
        listings = (
            _collect(self.client.iter_comments(key)),
            _collect(self.client.iter_worklogs(key)),
            _collect(self.client.iter_changelog(key)),
            self.client.list_links(key),
            self.client.list_attachments(key),
            self.client.list_checklist(key),
        )
        if self.concurrency > 1:
            results = await asyncio.gather(*listings)
        else:  # concurrency 1 means one request at a time: the benchmark's baseline
            results = [await listing for listing in listings]
        comments, worklogs, changelog, links, attachments, checklist = results
        blobs = await self._fetch_blobs(key, attachments)
        children = {
            "comment": _rows(key, comments),
            "worklog": _rows(key, worklogs),
            "changelog": _rows(key, changelog),
            "link": _rows(key, links),
            "attachment": _rows(key, attachments, blobs),
            "checklist": _checklist_rows(key, checklist),
        }
        with self.store.transaction():
            for entity, rows in children.items():
                self.store.replace_children(key, entity, rows)
            self.store.mark_drained(key, issue.updated_at)
        self.stats.issues_drained += 1
        for entity, rows in children.items():
            self.stats.sub_records[entity] = self.stats.sub_records.get(entity, 0) + len(rows)
        log.debug("issue_drained", issue=key, **{e: len(r) for e, r in children.items()})

    async def _fetch_blobs(self, key: str, attachments: list[dict[str, Any]]) -> dict[str, str]:
        """Download each attachment not staged yet (same id, same size); return id -> sha256."""
        blobs: dict[str, str] = {}
        for attachment in attachments:
            source_id = f"{key}/{attachment['id']}"
            staged = self.store.get_record("attachment", source_id)
            if (
                staged
                and staged.blob
                and self.store.blobs.exists(staged.blob)
                and (staged.raw.get("size") == attachment.get("size"))
            ):
                blobs[str(attachment["id"])] = staged.blob
                continue
            with self.store.blobs.writer() as sink:
                await self.client.download_attachment(
                    key, attachment["id"], attachment["name"], sink
                )
            blobs[str(attachment["id"])] = sink.sha256
            self.stats.attachment_bytes += sink.size
        return blobs


def _checklist_rows(parent: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
    parent: str, records: list[dict[str, Any]], blobs: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    return [
        {
            "source_id": f"{parent}/{record['id']}",
            "parent": parent,
            "updated_at": record.get("updatedAt") or record.get("createdAt"),
            "raw": record,
            "blob": (blobs or {}).get(str(record["id"])),
        }
        for record in records
    ]
