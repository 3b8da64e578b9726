"""Worklogs in bulk for a first migration: the organisation's worklog records read by
``createdAt`` windows (``POST /worklog/_search``) instead of one listing per issue with time
spent.

A reply holds at most 10 000 records (the service refuses a wider window): a window that
holds more is cut in two until each half fits. A window that still does not fit at a single
millisecond is not covered, and neither is an issue whose life (created .. last updated)
overlaps it: such an issue is listed on its own. So is one updated since the search began
(less `margin`, for the clocks of two machines): a worklog added, edited or removed touches
its issue. Everything else the search covered exactly, so the drain takes an issue's records
from here (`worklogs_of`) and asks nothing. Only the records of the queues in scope are kept
(a shard's extract holds its own), each handed over once and held until then packed
(`Packed`): its compact JSON deflated against a dictionary of the first records kept. The
search reads the whole organisation before the drain begins: the 100 000-issue org's 145 000
worklogs took 486 MB parsed (most of its extract's 560 MB peak), 144 MB as JSON text, and about
a fifth of that packed (930 bytes of text a record, 190 packed, 25 us to pack).

A later run (a sync) drains only the issues that changed and lists their worklogs per issue:
the search would read the whole organisation for a few of them.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.timefmt import parse_time

log = structlog.get_logger(__name__)

Record = dict[str, Any]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TICK = timedelta(milliseconds=1)  # the finest the search's bounds tell apart


@dataclass(frozen=True)
class Window:
    """Records created from `start` to `end`, both included."""

    start: datetime
    end: datetime

    def halves(self) -> tuple[Window, Window] | None:
        """Two windows that share no instant, or None when this one is a single tick."""
        if self.end - self.start < TICK:
            return None
        middle = self.start + (self.end - self.start) // 2
        middle -= timedelta(microseconds=middle.microsecond % 1000)  # on a whole millisecond
        return Window(self.start, middle), Window(middle + TICK, self.end)

    def bounds(self) -> tuple[str, str]:
        return _wire(self.start), _wire(self.end)


class Packed:
    """Records held small: each one's compact JSON deflated (raw deflate, small window and
    memory) against a preset dictionary, the tail of the first records' text (records of one
    kind share most of it: field names, the org's people and URLs). The dictionary is set by
    the first `pack` and kept for every `unpack`."""

    DICTIONARY = 8192  # bytes: a larger one packs a little smaller and costs more per record

    def __init__(self) -> None:
        self._dictionary: bytes | None = None

    def pack(self, records: list[Record]) -> list[bytes]:
        texts = [json.dumps(record, separators=(",", ":")).encode() for record in records]
        if self._dictionary is None:
            self._dictionary = b"".join(texts[:64])[-self.DICTIONARY :]
        out = []
        for text in texts:
            deflate = zlib.compressobj(6, zlib.DEFLATED, -15, 5, zlib.Z_DEFAULT_STRATEGY,
                                       self._dictionary)  # fmt: skip
            out.append(deflate.compress(text) + deflate.flush())
        return out

    def unpack(self, packed: bytes) -> Record:
        assert self._dictionary is not None  # set by the pack that made `packed`
        inflate = zlib.decompressobj(-15, zdict=self._dictionary)
        found: Record = json.loads(inflate.decompress(packed) + inflate.flush())
        return found


@dataclass
class BulkWorklogs:
    """The organisation's worklogs by issue, searched once per run on the first need."""

    client: TrackerClient
    queues: frozenset[str] | None = None  # keep only these queues' records (None: every one)
    margin: timedelta = timedelta(minutes=10)
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    requests: int = 0
    served: int = 0  # records handed to the drain from the search
    listed_alone: int = 0  # issues the search did not cover, listed on their own
    uncovered: list[Window] = field(default_factory=list)
    _by_issue: dict[str, list[bytes]] = field(default_factory=dict)  # key -> records, packed
    _packed: Packed = field(default_factory=Packed)
    _began: datetime | None = None
    _searching: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def worklogs_of(self, issue: Record) -> list[Record] | None:
        """The issue's worklog records from the search, or None when it does not cover the
        issue (then list them per issue)."""
        await self._search_once()
        if not self._covers(issue):
            self.listed_alone += 1
            return None
        found = [self._packed.unpack(one) for one in self._by_issue.pop(str(issue["key"]), [])]
        self.served += len(found)
        return found

    def figures(self) -> dict[str, Any]:
        return {
            "worklog_search_requests": self.requests,
            "worklogs_from_search": self.served,
            "worklog_issues_listed_alone": self.listed_alone,
            "worklog_windows_uncovered": len(self.uncovered),
        }

    def _covers(self, issue: Record) -> bool:
        assert self._began is not None  # set by the search
        updated = _moment(issue.get("updatedAt"))
        if updated is None or updated >= self._began - self.margin:
            return False
        created = _moment(issue.get("createdAt")) or EPOCH
        return not any(w.start <= updated and created <= w.end for w in self.uncovered)

    async def _search_once(self) -> None:
        async with self._searching:
            if self._began is None:
                began = self.clock()
                await self._search(Window(EPOCH, began))
                self._began = began
                log.info("worklogs_searched", requests=self.requests, issues=len(self._by_issue))

    async def _search(self, whole: Window) -> None:
        """Every window, halved until its reply fits (depth first: few windows held)."""
        waiting = [whole]
        while waiting:
            window = waiting.pop()
            self.requests += 1
            found = await self.client.search_worklogs(*window.bounds())
            if found is not None:
                self._keep(found)
                continue
            halves = window.halves()
            if halves is None:
                log.warning("worklog_window_uncovered", start=_wire(window.start))
                self.uncovered.append(window)
            else:
                waiting.extend(reversed(halves))

    def _keep(self, records: list[Record]) -> None:
        kept: list[tuple[str, Record]] = []
        for record in records:
            issue = record.get("issue")
            key = str(issue.get("key") or "") if isinstance(issue, dict) else ""
            if key and (self.queues is None or key.rsplit("-", 1)[0] in self.queues):
                kept.append((key, record))
        packed = self._packed.pack([record for _, record in kept])  # the first reply primes it
        for (key, _), one in zip(kept, packed, strict=True):
            self._by_issue.setdefault(key, []).append(one)


def _wire(moment: datetime) -> str:
    """The search's bound format (the documentation's example: no zone, UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def _moment(value: Any) -> datetime | None:
    try:
        return parse_time(str(value)) if value else None
    except ValueError:
        return None
