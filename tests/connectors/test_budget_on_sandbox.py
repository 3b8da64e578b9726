"""The "auto" budget against the sandbox over real sockets: it settles near a real limit
with few 429s, lets a busy service's thin share of 429s be, and with no limit climbs until
our own concurrency is the bound. Nothing here is timed: see bench/budget.py for speeds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from haul.connectors.http import HttpCore
from haul.sandbox.server import RunningSandbox, start_sandbox

LIMIT = 40  # requests per second the sandbox allows each org on each service


@pytest.fixture(scope="module")
def sandbox() -> Iterator[RunningSandbox]:
    with start_sandbox(size="tiny", seed=3) as running:
        yield running


def auto_core(info: dict[str, Any], **options: Any) -> HttpCore:
    """A core on the sandbox's source org with an "auto" read budget."""
    return HttpCore.of(
        service="tracker",
        base_url=info["tracker"],
        token=info["tokens"]["admin"],
        org_id=info["orgs"]["source"],
        read_rate="auto",
        **options,
    )


async def hammer(core: HttpCore, seconds: float, workers: int = 16) -> int:
    """Reads from `workers` tasks for `seconds`; how many succeeded."""
    done = 0
    started = time.monotonic()

    async def worker() -> None:
        nonlocal done
        while time.monotonic() - started < seconds:
            await core.get_json("/myself")
            done += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return done


@pytest.mark.slow  # the shared budget's processes on the sandbox stay in the default run
async def test_auto_settles_near_a_real_limit_with_few_429s(sandbox: RunningSandbox) -> None:
    """Once found (the first seconds), the limit is seldom passed: under 3% of requests
    answered 429 (the sandbox counts), and the rate stays around the limit."""
    sandbox.set_faults(f"ratelimit:{LIMIT}")
    try:
        async with auto_core(sandbox.info) as core:
            await hammer(core, 8.0)
            settled_from = len(core.rate_history()["read"])
            before = sandbox.stats()["requests"]
            ok = await hammer(core, 8.0)
            sent = sandbox.stats()["requests"] - before
    finally:
        sandbox.set_faults("")
    assert (sent - ok) / sent < 0.03, (sent, ok)
    history = core.rate_history()["read"]
    rates = [rate for _, rate in history]
    first_cut = next(i for i in range(1, len(rates)) if rates[i] < rates[i - 1])
    assert max(rates[first_cut:]) <= 1.6 * LIMIT, history  # the cold start aside
    settled = [rate for _, rate in history[settled_from - 1 :]]  # in force, and each change
    assert settled and max(settled) <= 1.2 * LIMIT and settled[-1] >= 0.6 * LIMIT, history


# the budget's unit tests (tests/connectors/test_budget.py) cover noise and the climb with an
# injected clock; over the wire, the real limit below is the default run's representative
@pytest.mark.slow
async def test_a_busy_services_thin_share_of_429s_is_not_a_limit(sandbox: RunningSandbox) -> None:
    """2% of requests 429 at random, no RateLimit headers: at most one cut of the rate
    (the old budget cut at every one of them)."""
    sandbox.set_faults("429:0.02")
    try:
        with capture_logs() as logs:
            async with auto_core(sandbox.info, max_rate=60) as core:
                await hammer(core, 8.0, workers=8)
    finally:
        sandbox.set_faults("")
    cuts = [event for event in logs if event.get("reason") in ("limit_met", "still_limited")]
    assert len(cuts) <= 1, cuts


@pytest.mark.slow  # see above
async def test_auto_without_a_limit_climbs_to_what_concurrency_allows(
    sandbox: RunningSandbox,
) -> None:
    """No limit at all: the rate keeps rising while the budget is what holds the caller back."""
    async with auto_core(sandbox.info) as core:
        await hammer(core, 6.0)
    rates = [rate for _, rate in core.rate_history()["read"]]
    assert rates[-1] > 2 * rates[0]
