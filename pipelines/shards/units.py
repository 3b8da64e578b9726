"""What a manifest's shards are cut from: units of work a service counts, balanced by records.

A service that can be sharded offers `shard_units(config, client)`: one `Unit` per piece of its
scope that can move alone (a tracker queue, a wiki subtree, a survey) with its record count,
and, where a piece can be cut further (a large queue into creation-time windows), a `split`
that cuts it into `pieces` units of about equal count. `balance` deals the units into shards.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from haul.pipelines.shards.manifest import PartScope


@dataclass(frozen=True)
class Unit:
    """One piece of the scope that moves alone, and how many records it holds."""

    scope: PartScope
    records: int
    split: Callable[[int], Awaitable[list[Unit]]] | None = field(default=None, compare=False)

    @property
    def narrowed(self) -> bool:
        """A unit whose query narrows its queues: it shares its shard with no other queue."""
        return self.scope.query is not None


async def cut_large(units: Sequence[Unit], shards: int) -> list[Unit]:
    """Every unit larger than a shard's share cut into windows (at most `shards` windows in
    all, one shard kept for the other queues when there are some)."""
    total = sum(unit.records for unit in units)
    share = max(1, math.ceil(total / max(1, shards)))
    large = sorted((u for u in units if u.split is not None and u.records > share),
                   key=lambda u: -u.records)  # fmt: skip
    others_need_one = any(u.scope.queues for u in units if u not in large)
    budget = shards - (1 if others_need_one else 0)
    cut: list[Unit] = [unit for unit in units if unit not in large]
    for unit in large:
        pieces = min(max(1, round(unit.records / share)), budget)
        assert unit.split is not None
        if pieces >= 2:
            cut += await unit.split(pieces)
            budget -= pieces
        else:
            cut.append(unit)
            budget -= 1 if budget > 1 else 0
    return cut


def balance(units: Sequence[Unit], shards: int) -> list[list[Unit]]:
    """Deal `units` into at most `shards` shards, largest first to the lightest shard (ties: the
    lower shard, then the unit listed first), so the same units always give the same shards.
    A narrowed unit (a window of one queue) has its own shard; shards left empty are dropped."""
    bins: list[list[Unit]] = [[] for _ in range(shards)]
    loads = [0] * shards
    narrowed = [unit for unit in units if unit.narrowed]
    for index, unit in enumerate(narrowed[:shards]):
        bins[index].append(unit)
        loads[index] += unit.records
    order = sorted((u for u in units if not u.narrowed), key=lambda u: (-u.records, units.index(u)))
    for unit in order:
        allowed = [
            i for i in range(shards) if not (unit.scope.queues and any(u.narrowed for u in bins[i]))
        ] or list(range(shards))
        lightest = min(allowed, key=lambda i: (loads[i], i))
        bins[lightest].append(unit)
        loads[lightest] += unit.records
    return [shard for shard in bins if shard]


def merged(shard: Sequence[Unit]) -> PartScope:
    """One shard's scope: its units' queues, wiki roots and surveys (and its window)."""
    return PartScope(
        queues=tuple(q for unit in shard for q in unit.scope.queues),
        query=next((unit.scope.query for unit in shard if unit.scope.query), None),
        wiki_roots=tuple(r for unit in shard for r in unit.scope.wiki_roots),
        surveys=tuple(s for unit in shard for s in unit.scope.surveys),
    )
