"""The extractor runs a few streams at once, never all: each running stream holds a page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.streams import Extractor, Page
from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


@dataclass
class Gauge:
    running: int = 0
    most: int = 0


@dataclass
class QueueStream:
    """A stream of two pages, as a queue's scroll would give them (slow to answer)."""

    name: str
    gauge: Gauge
    entity: str = "issue"
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        self.gauge.running += 1
        self.gauge.most = max(self.gauge.most, self.gauge.running)
        try:
            for n in range(2):
                await asyncio.sleep(0.01)
                rows = [{"source_id": f"{self.name}-{n}", "parent": self.name, "raw": {"n": n}}]
                yield Page(rows)
        finally:
            self.gauge.running -= 1


async def test_every_stream_is_staged_a_few_at_a_time(tmp_path: Path) -> None:
    gauge = Gauge()
    streams = [QueueStream(f"Q{n}", gauge) for n in range(7)]
    with StagingStore.open(tmp_path / "haul.db") as store:
        stats = await Extractor(store, streams, streams_at_once=3).run()
        staged = {record.source_id for record in store.iter_records("issue")}
    assert gauge.most == 3
    assert stats.staged["issue"] == 14
    assert staged == {f"Q{q}-{n}" for q in range(7) for n in range(2)}
