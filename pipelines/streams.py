"""The extract contract: streams list records page by page, drains fetch each parent's children.

A **stream** yields pages; the engine stages each page's rows in the same transaction as the
checkpoint that follows them, so a killed run restarts from the last committed page::

    stream.entity                      the staged entity of its rows
    stream.checkpoint                  the checkpoint's name (None: nothing to resume from)
    stream.pages(saved)                async iterator of Page(rows, checkpoint); `saved()` reads
                                       the last committed checkpoint (a stream that must restart
                                       mid-listing, like an expired scroll, asks it again)

A **drain** fetches the children of one staged parent (an issue's comments, worklogs, ...); the
engine stages them with the parent's "drained" mark in one transaction, so a parent is either
wholly drained as of its `updated_at` or drained again by the next run::

    drain.parent                       the staged entity whose records it drains
    drain.fetch(parent_record)         -> {child entity: rows}

Rows are the dicts `StagingStore.upsert_records` takes. A child row that could not be fetched
whole carries a `"problem"` (why): it is staged as far as it came, its problem is kept in the
store's problems (`haul failures` lists them), and the parent is left undrained so the next
run fetches it again. Drains run concurrently in bounded workers fed by the streams; parents
left undrained by an interrupted run go first.

Two generic streams serve any service whose listing comes whole: `ListStream` (a listing staged
as one page, each item under its id) and `RowsStream` (rows built whole by a fetch).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from haul.connectors.errors import RecordError
from haul.pipelines.concurrency import for_each
from haul.pipelines.progress import Progress
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

Row = dict[str, Any]


def child_rows(
    parent: str,
    records: list[dict[str, Any]],
    blobs: dict[str, str] | None = None,
    problems: dict[str, str] | None = None,
) -> list[Row]:
    """A listing's records as rows staged under `parent` (`parent/id`, when each was last
    changed: `updatedAt`, else `createdAt`), with their blobs and the problems of those that
    could not be fetched whole."""
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


# {entity: why} for what the last extract chose not to stage (an export warns about it)
NOT_STAGED = "extract:not_staged"


def not_staged(store: StagingStore) -> dict[str, str]:
    """What the last extract chose not to stage: entity -> the setting that said so."""
    return dict(store.get_checkpoint(NOT_STAGED) or {})


@dataclass(frozen=True)
class Page:
    """One page of a stream: rows to stage, and the checkpoint they bring the stream to."""

    rows: list[Row]
    checkpoint: dict[str, Any] | None = None
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # entity, id, why
    settled: list[tuple[str, str]] = field(default_factory=list)  # (entity, id): problems gone


class Stream(Protocol):
    """A listing staged page by page; see the module docstring."""

    @property
    def entity(self) -> str: ...

    @property
    def checkpoint(self) -> str | None: ...

    def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]: ...


class Drain(Protocol):
    """The children of one staged parent; see the module docstring."""

    @property
    def parent(self) -> str: ...

    async def fetch(self, parent: StagedRecord) -> dict[str, list[Row]]: ...


@dataclass
class ExtractStats:
    """What one extract staged."""

    staged: Counter[str] = field(default_factory=Counter)
    drained: Counter[str] = field(default_factory=Counter)
    problems: int = 0


@dataclass
class Extractor:
    """One extract run: the streams' pages feed the drains' workers through a bounded queue."""

    store: StagingStore
    streams: Sequence[Stream]
    drains: Sequence[Drain] = ()
    progress: Progress = field(default_factory=Progress)
    concurrency: int = 32
    stop_requested: Callable[[], bool] = lambda: False
    stats: ExtractStats = field(default_factory=ExtractStats)
    streams_at_once: int = 3
    _queued: set[tuple[str, str]] = field(default_factory=set, init=False, repr=False)

    async def run(self) -> ExtractStats:
        """Stage every stream to its end, draining each new or changed parent."""
        drains = {drain.parent: drain for drain in self.drains}
        pending: asyncio.Queue[tuple[Drain, str] | None] = asyncio.Queue(self.concurrency * 4)
        workers = [
            asyncio.create_task(self._drain_worker(pending)) for _ in range(self.concurrency)
        ]
        try:
            for drain in self.drains:  # left over by an interrupted run
                for key in list(self.store.needs_drain(drain.parent)):
                    await self._queue(pending, drain, key)
            # Several streams at once, so a wiki tree need not wait for the whole scroll; not
            # all at once, because each running stream holds its last page (a scroll page of
            # 1000 issues is tens of MB decoded): with one per queue, peak memory grew with
            # the number of queues (bench/memory.py).
            await for_each(
                self.streams,
                lambda s: self._stage_stream(s, drains.get(s.entity), pending),
                max(1, min(len(self.streams), self.streams_at_once)),
            )
            for _ in workers:
                await pending.put(None)
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        return self.stats

    async def _stage_stream(
        self, stream: Stream, drain: Drain | None, pending: asyncio.Queue[tuple[Drain, str] | None]
    ) -> None:
        if self.stop_requested():
            return
        task = self.progress.task(f"{stream.entity} staged")
        checkpoint = stream.checkpoint

        def saved() -> dict[str, Any] | None:
            return self.store.get_checkpoint(checkpoint) if checkpoint else None

        async for page in stream.pages(saved):
            keys = self._stage_page(stream, page)
            self.progress.advance(task, len(page.rows))
            if drain is not None:
                for key in self.store.needs_drain(stream.entity, keys=keys):
                    await self._queue(pending, drain, key)
            if self.stop_requested():
                return

    def _stage_page(self, stream: Stream, page: Page) -> list[str]:
        """Stage a page and move the checkpoint, together; return the page's source ids."""
        with self.store.transaction():
            self.store.upsert_records(stream.entity, page.rows)
            for entity, source_id in page.settled:
                self.store.problems.clear(entity, source_id)
            for entity, source_id, problem in page.problems:
                self.store.problems.record(entity, source_id, problem)
                log.warning("record_problem", entity=entity, record=source_id, error=problem)
            if stream.checkpoint and page.checkpoint is not None:
                self.store.set_checkpoint(stream.checkpoint, page.checkpoint)
        self.stats.problems += len(page.problems)
        self.stats.staged[stream.entity] += len(page.rows)
        log.info(
            "page_staged", entity=stream.entity, rows=len(page.rows), checkpoint=page.checkpoint
        )
        return [str(row["source_id"]) for row in page.rows]

    async def _queue(
        self, pending: asyncio.Queue[tuple[Drain, str] | None], drain: Drain, key: str
    ) -> None:
        """Queue a parent to drain, unless it is queued or being drained already (one left
        over by an interrupted run comes again on its page: two workers would fetch it twice)."""
        if (drain.parent, key) not in self._queued:
            self._queued.add((drain.parent, key))
            await pending.put((drain, key))

    async def _drain_worker(self, pending: asyncio.Queue[tuple[Drain, str] | None]) -> None:
        while (item := await pending.get()) is not None:
            drain, key = item
            try:
                if not self.stop_requested():
                    await self.drain_one(drain, key)
            finally:
                self._queued.discard((drain.parent, key))

    async def drain_one(self, drain: Drain, key: str) -> None:
        """Fetch one parent's children, then stage them with its drained mark."""
        parent = self.store.get_record(drain.parent, key)
        # A key can be queued twice (left over from an interrupted run, then again from a
        # page): the second one finds the mark current and does nothing.
        if parent is None or parent.updated_at is None:
            return
        if self.store.drained_version(key, entity=drain.parent) == parent.updated_at:
            return
        try:
            children = await drain.fetch(parent)
        except RecordError as exc:  # this parent's listings came wrong: its problem, not the run's
            self.store.problems.record(drain.parent, key, str(exc))
            self.stats.problems += 1
            log.warning("record_problem", entity=drain.parent, record=key, error=str(exc))
            return
        troubled = 0
        with self.store.transaction():
            for entity, rows in children.items():
                self.store.replace_children(key, entity, rows)
                problems = {
                    str(row["source_id"]): row["problem"] for row in rows if row.get("problem")
                }
                for source_id, problem in problems.items():
                    self.store.problems.record(entity, source_id, problem, parent=key)
                    log.warning("record_problem", entity=entity, record=source_id, error=problem)
                self.store.problems.clear_under(key, entity, keep=set(problems))
                troubled += len(problems)
            if not troubled:  # else the next run drains this parent again
                self.store.mark_drained(key, parent.updated_at, entity=drain.parent)
                self.store.problems.clear(drain.parent, key)
        self.stats.drained[drain.parent] += 1
        self.stats.problems += troubled
        for entity, rows in children.items():
            self.stats.staged[entity] += len(rows)
        self.progress.advance(self.progress.task(f"{drain.parent} drained"))


@dataclass
class ListStream:
    """A whole listing (a dictionary: statuses, users, ...) staged as one page, each item under
    its `id_key`; `source` names who listed it in the problem of items without their id."""

    entity: str
    fetch: Callable[[], Awaitable[list[dict[str, Any]]]]
    id_key: str = "id"
    checkpoint: str | None = None
    source: str = "the service"

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        rows = await self.fetch()
        named = [row for row in rows if _identity(row, self.id_key)]
        # an item without its identity cannot be staged (nothing would name it): the listing
        # has a problem of its own, which haul failures lists, until it comes whole again
        listing = (self.entity, f"{self.entity} listing")
        lacking = len(rows) - len(named)
        why = f"{self.source} listed {lacking} {self.entity}(s) without their {self.id_key}"
        problems = [(*listing, why)] if lacking else []
        settled = [] if lacking else [listing]
        staged = [{"source_id": str(row[self.id_key]), "raw": row} for row in named]
        yield Page(staged, None, problems, settled)


def _identity(row: Any, key: str) -> bool:
    return isinstance(row, dict) and row.get(key) not in (None, "")


@dataclass
class RowsStream:
    """Rows built whole by `fetch` (source id, parent, raw), staged as one page."""

    entity: str
    fetch: Callable[[], Awaitable[list[dict[str, Any]]]]
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        yield Page(await self.fetch())
