"""Bounded concurrency for stages: N workers pull from one iterator, the first error stops all."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
_END = object()


async def for_each(
    items: Iterable[T],
    work: Callable[[T], Awaitable[None]],
    concurrency: int,
    stop_requested: Callable[[], bool] = lambda: False,
) -> None:
    """Run `work(item)` for every item, at most `concurrency` at once.

    Items are pulled lazily, so a long iterator (a database cursor) is never materialised.
    Once `stop_requested()` is true no new item starts; the ones under way finish.
    The first exception cancels the other workers and is re-raised as it is (not wrapped).
    """
    iterator = iter(items)

    async def worker() -> None:
        # next() runs between awaits, so workers never share an item
        while not stop_requested() and (item := next(iterator, _END)) is not _END:
            await work(item)  # type: ignore[arg-type]

    workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
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
