"""The issue scroll against the sandbox over sockets: a scroll that expires mid-queue
restarts past what it staged instead of re-reading its first page until it stalls."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from haul.pipelines.tracker.issues.scroll import IssueScroll
from tests.helpers.haul_fixtures import client_for, source_queues


async def test_an_expired_scroll_restarts_past_the_issues_it_staged(sandbox: Any) -> None:
    """Every issue changed inside the lookback, a scroll page of two, and a scroll that
    expires after each page: each restart goes on past what was staged, so the queue is
    staged whole, each issue once, instead of re-reading its first page until it stalls."""
    info = sandbox.info
    queue = source_queues(info)[0]
    committed: dict[str, Any] = {}  # the checkpoint as the extract would commit it
    staged: list[str] = []
    async with client_for(info, "source") as client:
        everyone = [i["key"] async for i in client.search_issues(query=f"Queue: {queue}")]
        scroll = IssueScroll(client, queue, per_scroll=2, ttl_ms=1, lookback=timedelta(days=9999))
        async for page in scroll.pages(lambda: committed.get("checkpoint")):
            staged += [row["source_id"] for row in page.rows]
            committed["checkpoint"] = page.checkpoint or committed.get("checkpoint")
            await asyncio.sleep(0.02)  # slower than the scroll's TTL: it expires meanwhile

    assert sorted(staged) == sorted(everyone)
    assert scroll.restarts >= len(everyone) // 2 - 1
