"""Rate budgets with an injected clock: a number is a hard cap; "auto" grows while the service
answers, cuts on a 429 (once per cool-down), pauses when the service says its budget is spent."""

from __future__ import annotations

import pytest

from haul.connectors.budget import (
    DECREASE,
    SLOW_START_CUT,
    AdaptiveBudget,
    FixedBudget,
    budget_for,
)


class Clock:
    """A clock that only moves when the budget sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_a_fixed_budget_is_a_hard_cap() -> None:
    """Ten sends at 5 per second take two seconds, however eager the caller."""
    clock = Clock()
    budget = FixedBudget(5.0, clock=clock, sleep=clock.sleep)
    for _ in range(10):
        await budget.acquire()
        budget.on_reply(200, {})
    assert clock.now - 100.0 == pytest.approx(1.8)


async def test_auto_grows_while_the_service_answers_and_the_rate_binds() -> None:
    """No 429 for a while: the rate climbs well above where it started."""
    clock = Clock()
    budget = AdaptiveBudget("tracker", "read", clock=clock, sleep=clock.sleep)
    start = budget.rate
    for _ in range(2000):
        await budget.acquire()
        budget.on_reply(200, {})
    assert budget.rate > 3 * start
    assert [rate for _, rate in budget.history] == sorted(rate for _, rate in budget.history)


async def test_auto_does_not_grow_when_the_caller_is_the_bound() -> None:
    """Sends that never wait for a slot say nothing about the service's limit."""
    clock = Clock()
    budget = AdaptiveBudget("tracker", "read", clock=clock, sleep=clock.sleep)
    start = budget.rate
    for _ in range(200):
        clock.now += 1.0  # the caller itself is slow: a send a second
        await budget.acquire()
        budget.on_reply(200, {})
    assert budget.rate == start


async def test_a_burst_of_429s_is_one_cut_and_the_ceiling_holds() -> None:
    """Five 429s within the cool-down cut the rate once (the slow start's first cut halves,
    later ones trim to 80%); growth never passes max_rps."""
    clock = Clock()
    budget = AdaptiveBudget("tracker", "write", ceiling=30.0, clock=clock, sleep=clock.sleep)
    for _ in range(3000):
        await budget.acquire()
        budget.on_reply(200, {})
    assert budget.rate == 30.0
    for _ in range(5):
        budget.on_reply(429, {"Retry-After": "1"})
    assert budget.rate == pytest.approx(30.0 * SLOW_START_CUT)
    clock.now += 2.0  # past the cool-down
    budget.on_reply(429, {})
    assert budget.rate == pytest.approx(30.0 * SLOW_START_CUT * DECREASE)


async def test_a_spent_budget_pauses_until_its_reset() -> None:
    """RateLimit-Remaining: 0 with RateLimit-Reset: 7 — nothing is sent for seven seconds."""
    clock = Clock()
    budget = AdaptiveBudget("forms", "read", clock=clock, sleep=clock.sleep)
    budget.on_reply(200, {"RateLimit-Remaining": "0", "RateLimit-Reset": "7"})
    await budget.acquire()
    assert clock.now - 100.0 == pytest.approx(7.0)


def test_budget_for_picks_the_kind_and_refuses_nonsense() -> None:
    """A number is fixed, "auto" adapts, anything else is an error."""
    assert isinstance(budget_for(50, service="t", direction="read"), FixedBudget)
    assert isinstance(budget_for("auto", service="t", direction="read"), AdaptiveBudget)
    with pytest.raises(ValueError):
        budget_for("fast", service="t", direction="read")
