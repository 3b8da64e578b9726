"""for_each's places: a request waiting to be sent again lends its item's place, and the
bounds hold (at most `concurrency` items active, twice that started and unfinished); and
`prefetched`: a listing's next page asked for while its reader works on the last one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from haul.connectors.http import HttpCore
from haul.connectors.retrying import waiting_aside
from haul.pipelines.concurrency import for_each, prefetched

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

PATIENCE = 10  # seconds a test waits for what it expects before it fails, rather than hang


async def test_a_request_waiting_out_a_429_lends_its_place_to_the_next_item() -> None:
    """One place: item a's import is refused with Retry-After; item b loads while a waits,
    and a takes the place back (after b) and is sent again."""
    events: list[str] = []
    b_done = asyncio.Event()
    refused_once: set[str] = set()

    def handler(request: httpx.Request) -> httpx.Response:
        item = request.url.params["item"]
        events.append(f"{item} sent")
        if item == "a" and item not in refused_once:
            refused_once.add(item)
            return httpx.Response(429, headers={"Retry-After": "1"}, json={})
        return httpx.Response(200, json={"key": item})

    async def retry_wait(seconds: float) -> None:  # the Retry-After ends once b is loaded
        await asyncio.wait_for(b_done.wait(), PATIENCE)

    core = HttpCore.of(
        service="tracker",
        base_url="https://tracker.test/v3",
        token="t",
        org_id="1",
        transport=httpx.MockTransport(handler),
        sleep=retry_wait,
        write_rate=1000,
    )

    async def load(item: str) -> None:
        await core.post_json("/issues/_import", params={"item": item}, json={})
        events.append(f"{item} done")
        if item == "b":
            b_done.set()

    async with core:
        await for_each(["a", "b"], load, concurrency=1, lend=True)
    assert events == ["a sent", "b sent", "b done", "a sent", "a done"]


@pytest.mark.parametrize("lend", [True, False])
async def test_at_most_concurrency_active_and_twice_that_started(lend: bool) -> None:
    """Every item waits aside once: with lending, the waiting ones let others start (up to
    twice `concurrency` started) yet never more than `concurrency` run at once; without,
    a waiting item keeps its place."""
    concurrency, active, started = 2, 0, 0
    most_active, most_started = 0, 0
    open_gate = asyncio.Event()

    async def work(item: int) -> None:
        nonlocal active, started, most_active, most_started
        started += 1
        most_started = max(most_started, started)
        if started == (2 * concurrency if lend else concurrency):
            open_gate.set()  # as many started as may be: the waits end
        for phase in ("before", "after"):
            active += 1
            most_active = max(most_active, active)
            await asyncio.sleep(0)
            active -= 1
            if phase == "before":
                async with waiting_aside():
                    await asyncio.wait_for(open_gate.wait(), PATIENCE)
        started -= 1

    await for_each(range(10), work, concurrency, lend=lend)
    assert most_active <= concurrency
    assert most_started == (2 * concurrency if lend else concurrency)


async def test_the_first_error_is_raised_as_it_is() -> None:
    """An item's exception stops the others and comes out unwrapped, lending or not."""

    async def work(item: int) -> None:
        if item == 3:
            raise ValueError("item 3")
        async with waiting_aside():
            await asyncio.sleep(0)

    with pytest.raises(ValueError, match="item 3"):
        await for_each(range(10), work, 2, lend=True)


async def test_the_next_page_is_asked_for_while_the_reader_works_on_the_last() -> None:
    """Page 2's request goes out while page 1 is with the reader (who waits for it to be
    asked), and only one page is read ahead: page 3 is not asked for until page 2 is taken."""
    events: list[str] = []
    asked = {n: asyncio.Event() for n in (1, 2, 3)}

    async def listing() -> AsyncIterator[int]:
        for n in (1, 2, 3):
            events.append(f"ask {n}")
            asked[n].set()
            await asyncio.sleep(0)
            yield n

    async for page in prefetched(listing()):
        events.append(f"stage {page}")
        if page < 3:
            await asyncio.wait_for(asked[page + 1].wait(), PATIENCE)
            events.append(f"staged {page}")
    assert events == [
        "ask 1", "stage 1", "ask 2", "staged 1", "stage 2", "ask 3", "staged 2", "stage 3",
    ]  # fmt: skip


async def test_a_failed_page_is_raised_in_its_place_and_an_early_stop_cancels_the_next() -> None:
    """The error of page 2's request comes out where page 2 would have; a reader that stops
    after page 1 leaves no request under way and the listing closed."""
    closed: list[str] = []
    hanging = asyncio.Event()

    async def listing(fail: bool) -> AsyncIterator[int]:
        try:
            yield 1
            if fail:
                raise ValueError("page 2")
            hanging.set()
            await asyncio.Event().wait()  # a request that never answers
            yield 2
        finally:
            closed.append("closed")

    taken = []
    with pytest.raises(ValueError, match="page 2"):
        async for page in prefetched(listing(fail=True)):
            taken.append(page)
    assert taken == [1]

    pages = prefetched(listing(fail=False))
    assert await anext(pages) == 1
    await asyncio.wait_for(hanging.wait(), PATIENCE)
    await pages.aclose()  # what a reader stopping early leads to
    assert closed == ["closed", "closed"]


async def test_a_few_items_start_a_few_workers() -> None:
    """Three siblings under a concurrency of 32 start three workers, not 32 (a page's two
    files would otherwise cost thirty idle tasks)."""
    tasks: list[int] = []

    async def work(item: int) -> None:
        tasks.append(len(asyncio.all_tasks()))
        await asyncio.sleep(0)

    await for_each([1, 2, 3], work, 32)
    assert max(tasks) <= 1 + 3  # this test's own task and the workers
