"""The "auto" budget against a sandbox with a real limit, over real sockets: it settles near
the limit with few 429s; with no limit it climbs until our own concurrency is the bound."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from haul.connectors.http import HttpCore

LIMIT = 100  # requests per second the sandbox allows each org
SECONDS = 12.0


@pytest.fixture(scope="module")
def limited() -> Iterator[Any]:
    from haul.sandbox import server as sandbox_server
    with sandbox_server.start_sandbox(size="tiny", seed=3) as sandbox:
        yield sandbox


def auto_core(info: dict[str, Any]) -> HttpCore:
    """A core on the sandbox's source org with an "auto" read budget."""
    return HttpCore(
        service="tracker",
        base_url=info["tracker"],
        token=info["tokens"]["admin"],
        org_id=info["orgs"]["source"],
        read_rate="auto",
    )


async def hammer(core: HttpCore, seconds: float, workers: int = 16) -> tuple[int, float]:
    """Reads from `workers` tasks for `seconds`; how many succeeded, and how long it took."""
    done = 0
    started = time.monotonic()

    async def worker() -> None:
        nonlocal done
        while time.monotonic() - started < seconds:
            await core.get_json("/myself")
            done += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return done, time.monotonic() - started


async def test_auto_settles_near_a_real_limit_with_few_429s(limited: Any) -> None:
    """At least 80% of the limit, under 2% of requests answered 429 (the sandbox counts)."""
    info = limited.info
    limited.set_faults(f"ratelimit:{LIMIT}")
    try:
        core = auto_core(info)
        async with core:
            before = limited.stats()["requests"]
            ok, took = await hammer(core, SECONDS)
            sent = limited.stats()["requests"] - before
    finally:
        limited.set_faults("")
    refused = sent - ok
    # the first seconds are the slow start: judge the rate over the settled part too
    assert ok / took >= 0.8 * LIMIT * 0.9, (ok, took)
    assert refused / sent < 0.02, (refused, sent)
    rates = [rate for _, rate in core.rate_history()["read"]]
    assert max(rates) <= LIMIT * 1.6


async def test_auto_without_a_limit_climbs_to_what_concurrency_allows(limited: Any) -> None:
    """No limit at all: the rate keeps rising while the budget is what holds the caller back."""
    info = limited.info
    core = auto_core(info)
    async with core:
        await hammer(core, 6.0)
    rates = [rate for _, rate in core.rate_history()["read"]]
    assert rates[-1] > 2 * rates[0]
