"""Bounded concurrency for stages: N items under way at once, the first error stops all; and
a listing read one page ahead of its reader (`prefetched`).

With `lend=True` an item's place is lent while one of its requests waits to be sent again
(a 429's ``Retry-After``, a 5xx's backoff: the core's retry waits are entered in the
context's lender, see `haul.connectors.retrying.waiting_aside`): another item starts in the
meantime, and the waiter takes a place back before it sends again. A few refused requests
then cost their own wait, not a stage's worth of idle places. The rate budgets still pace
every send; what lending changes is how many items may be started and unfinished: at most
`concurrency` holding a place, and at most twice that in all (the ledger's `in_flight` rows
an interrupted load leaves are at most that many trees).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Sequence,
    Sized,
)
from contextlib import asynccontextmanager
from typing import TypeVar

from haul.connectors.retrying import LENDER

T = TypeVar("T")
_END = object()


class Place:
    """One item's hold on a stage's place: lent while a request of the item waits to be sent
    again, taken back (waiting for a free one) before that request is sent."""

    def __init__(self, places: asyncio.Semaphore) -> None:
        self._places = places
        self.held = True

    @asynccontextmanager
    async def lent(self) -> AsyncIterator[None]:
        if self.held:
            self.held = False
            self._places.release()
        yield  # a wait cut short (cancelled, failed) takes nothing back: the item is ending
        await self._take_back()

    async def _take_back(self) -> None:
        if self.held:  # a sibling request's wait ended first and took it
            return
        self.held = True
        try:
            await self._places.acquire()
        except BaseException:
            self.held = False
            raise

    def leave(self) -> None:
        """The item is over: free its place, unless it is lent."""
        if self.held:
            self.held = False
            self._places.release()


async def for_each(
    items: Iterable[T],
    work: Callable[[T], Awaitable[None]],
    concurrency: int,
    stop_requested: Callable[[], bool] = lambda: False,
    *,
    lend: bool = False,
) -> None:
    """Run `work(item)` for every item, at most `concurrency` at once (see the module
    docstring for `lend`).

    Items are pulled lazily, so a long iterator (a database cursor) is never materialised.
    Once `stop_requested()` is true no new item starts; the ones under way finish.
    The first exception cancels the other workers and is re-raised as it is (not wrapped).
    """
    iterator = iter(items)
    size = max(1, concurrency)
    if isinstance(items, Sized):  # a few siblings start a few workers, not `concurrency`
        size = max(1, min(size, len(items)))
    places = asyncio.Semaphore(size)

    async def worker() -> None:
        while True:
            await places.acquire()
            place = Place(places)
            try:
                # next() runs between awaits, so workers never share an item
                if stop_requested() or (item := next(iterator, _END)) is _END:
                    return
                if lend:  # each worker is a task: the lender is its own
                    LENDER.set(place)
                await work(item)  # type: ignore[arg-type]
            finally:
                place.leave()

    workers = [asyncio.create_task(worker()) for _ in range(2 * size if lend else size)]
    try:
        done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def prefetched(pages: AsyncIterable[T]) -> AsyncGenerator[T, None]:
    """The pages of a listing, the next one asked for while the reader works on this one.

    A listing whose next page needs the last one's cursor cannot be read in parallel, but its
    next request can be under way while the reader stages a page: the wait for a page then
    overlaps the work on the one before. At most one page is read ahead. An error reading a
    page is raised where that page would have been yielded; a reader that stops early (or is
    cancelled) cancels the request under way and closes the listing.
    """
    iterator = aiter(pages)
    ahead: asyncio.Task[T] | None = asyncio.create_task(_next(iterator))
    try:
        while ahead is not None:
            try:
                page = await ahead
            except StopAsyncIteration:
                return
            ahead = asyncio.create_task(_next(iterator))
            yield page
    finally:
        if ahead is not None and not ahead.done():
            ahead.cancel()
            await asyncio.gather(ahead, return_exceptions=True)
        closing = getattr(iterator, "aclose", None)
        if closing is not None:
            await closing()


async def _next(iterator: AsyncIterator[T]) -> T:
    return await anext(iterator)


async def gather_all(calls: Sequence[Awaitable[T]], concurrent: bool = True) -> list[T]:
    """Await every call at once (else, not `concurrent`, one after another: a benchmark's
    baseline) and return their results in order; the first error cancels the rest, or closes
    those not awaited yet, and is raised as it is (one call is simply awaited)."""
    if not concurrent:
        results: list[T] = []
        waiting = iter(calls)
        try:
            for call in waiting:
                results.append(await call)
        finally:
            for call in waiting:  # after an error: never awaited, so closed
                if inspect.iscoroutine(call):
                    call.close()
        return results
    if len(calls) == 1:
        return [await calls[0]]
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
