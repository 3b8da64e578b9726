"""The tracker's units of a shard manifest: one per queue in scope, counted by the source.

A queue larger than a shard's share is cut into creation-time windows: the query of window i
is ``Created: >= "b(i)" AND Created: < "b(i+1)"`` (the first has no lower bound, the last no
upper one, so an issue created after the plan still falls in one). The bounds are found by
bisecting the creation time with counts (`/issues/_count`), to the second: about 35 counts a
bound, whatever the queue's size.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.shards.manifest import PartScope
from haul.pipelines.shards.units import Unit
from haul.pipelines.tracker.timefmt import format_time

EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)  # before any tracker's first issue


def _query(queue: str, *terms: str | None) -> str:
    return " AND ".join([f"Queue: {queue}", *(term for term in terms if term)])


def window(lower: datetime | None, upper: datetime | None) -> str:
    """The creation-time window [lower, upper) as a query."""
    terms = []
    if lower is not None:
        terms.append(f'Created: >= "{format_time(lower)}"')
    if upper is not None:
        terms.append(f'Created: < "{format_time(upper)}"')
    return " AND ".join(terms)


async def tracker_units(config: Config, client: TrackerClient) -> list[Unit]:
    """One unit per queue in scope (its issues under the scope's query), each cut on demand."""
    units = []
    for queue in config.scope.queues:
        count = await client.count_issues(query=_query(queue, config.scope.query))
        units.append(Unit(PartScope(queues=(queue,)), count, _splitter(client, queue, config)))
    return units


def _splitter(
    client: TrackerClient, queue: str, config: Config
) -> Callable[[int], Awaitable[list[Unit]]]:
    async def split(pieces: int) -> list[Unit]:
        total = await client.count_issues(query=_query(queue, config.scope.query))
        bounds: list[datetime | None] = [None]
        for index in range(1, pieces):
            bounds.append(await _bound(client, queue, config.scope.query, total * index // pieces))
        bounds.append(None)
        units = []
        for lower, upper in itertools.pairwise(bounds):
            query = window(lower, upper)
            count = await client.count_issues(query=_query(queue, config.scope.query, query))
            units.append(Unit(PartScope(queues=(queue,), query=query), count))
        return units

    return split


async def _bound(client: TrackerClient, queue: str, narrowing: str | None, before: int) -> datetime:
    """The earliest instant (to the second) with at least `before` issues created before it."""
    low, high = EARLIEST, datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        middle = middle.replace(microsecond=0)
        counted = await client.count_issues(query=_query(queue, narrowing, window(None, middle)))
        if counted >= before:
            high = middle
        else:
            low = middle
    return high
