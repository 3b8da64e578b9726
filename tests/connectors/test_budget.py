"""Rate budgets with an injected clock: a number is a hard cap; "auto" grows while the service
answers, tells a rate limit (a share of 429s that rises with the rate, or a spent
RateLimit-Remaining) from noise (a thin share at any rate), and climbs back after a storm."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from haul.connectors.budget import (
    DECREASE,
    PACE,
    AdaptiveBudget,
    FixedBudget,
    budget_for,
    is_beyond_noise,
    stated_limit,
)

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

Reply = tuple[int, Mapping[str, str]]
OK: Reply = (200, {})


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


class RateLimit:
    """A service's real limit on the fake clock: a token bucket of `rps` a second holding a
    fifth of a second's worth, as the sandbox's; beyond it 429, with or without headers."""

    def __init__(
        self, clock: Clock, rps: float, *, headers: bool = True, policy: bool = False
    ) -> None:
        self.clock, self.rps, self.headers, self.policy = clock, rps, headers, policy
        self.capacity = max(1.0, rps / 5)
        self.tokens, self.at = self.capacity, clock()

    def __call__(self) -> Reply:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rps)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return OK
        said = {"RateLimit-Policy": f"{self.rps:g};w=1"} if self.policy else {}
        if self.headers:
            spent = {"RateLimit-Remaining": "0", "RateLimit-Reset": "1"}
            return 429, {"Retry-After": "1", **spent, **said}
        return 429, {"Retry-After": "1"}


def noisy(answer: Callable[[], Reply], share: float, seed: int = 7) -> Callable[[], Reply]:
    """`answer`, but a busy service's 429 (no RateLimit headers) for `share` of requests."""
    dice = random.Random(seed)
    return lambda: (429, {"Retry-After": "1"}) if dice.random() < share else answer()


class Run:
    """What a caller that always has more to send saw: (time, status) of each reply, and
    the budget's rate after each."""

    def __init__(self) -> None:
        self.replies: list[tuple[float, int]] = []
        self.rates: list[tuple[float, float]] = []

    def answered_per_second(self, start: float, end: float) -> float:
        return sum(1 for t, s in self.replies if start <= t < end and s != 429) / (end - start)

    def refused_share(self, start: float, end: float) -> float:
        statuses = [s for t, s in self.replies if start <= t < end]
        return statuses.count(429) / len(statuses)

    def mean_rate(self, start: float, end: float) -> float:
        rates = [r for t, r in self.rates if start <= t < end]
        return sum(rates) / len(rates)


async def drive(
    budget: AdaptiveBudget, clock: Clock, seconds: float, answer: Callable[[], Reply]
) -> Run:
    run, end = Run(), clock() + seconds
    while clock() < end:
        await budget.acquire()
        status, headers = answer()
        budget.on_reply(status, headers)
        run.replies.append((clock(), status))
        run.rates.append((clock(), budget.rate))
    return run


def auto(clock: Clock, ceiling: float | None = None) -> AdaptiveBudget:
    return AdaptiveBudget("tracker", "write", ceiling=ceiling, clock=clock, sleep=clock.sleep)


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
    budget = auto(clock)
    start = budget.rate
    await drive(budget, clock, 1.0, lambda: OK)
    assert budget.rate > 3 * start
    assert [rate for _, rate in budget.history] == sorted(rate for _, rate in budget.history)


async def test_auto_does_not_grow_when_the_caller_is_the_bound() -> None:
    """Sends that never wait for a slot say nothing about the service's limit."""
    clock = Clock()
    budget = auto(clock)
    start = budget.rate
    for _ in range(200):
        clock.now += 1.0  # the caller itself is slow: a send a second
        await budget.acquire()
        budget.on_reply(200, {})
    assert budget.rate == start


def test_a_thin_share_of_429s_is_noise_and_a_thick_one_a_limit() -> None:
    """What random refusals of 3% would give but once in a thousand windows is a limit."""
    assert not is_beyond_noise(2, 100)
    assert not is_beyond_noise(1, 5)
    assert not is_beyond_noise(9, 100)
    assert is_beyond_noise(10, 100)
    assert is_beyond_noise(4, 10)
    assert not is_beyond_noise(25, 600) and is_beyond_noise(33, 600)


async def test_noise_at_a_steady_rate_keeps_the_rate() -> None:
    """2% of replies 429 at random, for two minutes at the cap: the rate stays within a few
    percent of it (the old budget cut at each 429 and crawled back by 2% a second)."""
    clock = Clock()
    budget = auto(clock, ceiling=40.0)
    await drive(budget, clock, 10.0, lambda: OK)
    assert budget.rate == 40.0
    start = clock()
    run = await drive(budget, clock, 120.0, noisy(lambda: OK, 0.02))
    assert run.refused_share(start, clock()) == pytest.approx(0.02, abs=0.01)
    assert run.mean_rate(start, clock()) >= 0.97 * 40.0
    assert run.answered_per_second(start, clock()) >= 0.95 * 40.0


@pytest.mark.parametrize("headers", [True, False], ids=["RateLimit headers", "bare 429s"])
async def test_a_real_limit_settles_just_under_it(headers: bool) -> None:
    """A token bucket of 40/s: once found (the first minute), the next uses most of it and
    is seldom refused; bare 429s are seen later (a share past noise), so more often, but near
    the limit each steps the rate back: it settles under it, not a few percent over."""
    clock = Clock()
    budget = auto(clock)
    limit = RateLimit(clock, 40.0, headers=headers)
    await drive(budget, clock, 60.0, limit)
    start = clock()
    run = await drive(budget, clock, 60.0, limit)
    assert run.answered_per_second(start, clock()) >= 0.85 * 40.0
    assert run.refused_share(start, clock()) <= (0.01 if headers else 0.025)
    assert max(rate for _, rate in run.rates) <= (1.1 if headers else 1.15) * 40.0


async def test_a_cut_paces_the_requests_already_waiting() -> None:
    """Two hundred callers queue at 200/s (a second of queue); the rate is cut to 50/s a
    tenth of a second in: within the quarter second reserved ahead, the queue goes at the
    new rate, not on at the old one for the rest of its second. Real time, loose bounds."""
    budget = AdaptiveBudget("tracker", "read", rate=200.0)
    started = time.monotonic()
    sent: list[float] = []

    async def caller() -> None:
        await budget.acquire()
        sent.append(time.monotonic() - started)

    callers = asyncio.gather(*(caller() for _ in range(200)))
    await asyncio.sleep(0.1)
    budget.rate = 50.0
    await callers
    paced = [t for t in sent if 0.45 <= t < 0.95]  # after the slots reserved at 200/s
    assert len(paced) <= 0.5 * 50.0 + 5  # at 200/s it would be about 100


async def test_a_limit_that_rises_is_found_within_seconds() -> None:
    """Bare 429s at 20/s for a minute (another client shares the quota), then 40/s (it
    stopped): twenty seconds later the budget uses most of the new limit, not the old one
    plus a few percent."""
    clock = Clock()
    budget = auto(clock)
    limit = RateLimit(clock, 20.0, headers=False)
    await drive(budget, clock, 60.0, limit)
    assert budget.rate <= 1.15 * 20.0
    limit.rps, limit.capacity = 40.0, 8.0
    start = clock()
    run = await drive(budget, clock, 25.0, limit)
    assert run.answered_per_second(start + 17.0, clock()) >= 0.8 * 40.0
    assert run.refused_share(start, clock()) <= 0.06


def test_the_limit_a_service_states_is_read_per_second() -> None:
    """``RateLimit-Policy`` in the IETF drafts' forms: quota over window, in seconds."""
    assert stated_limit({"RateLimit-Policy": "40;w=1"}) == 40
    assert stated_limit({"RateLimit-Policy": "600;w=60, 40;w=1"}) == 10
    assert stated_limit({"RateLimit-Policy": '"default";q=100;w=10'}) == 10
    for nonsense in ("40", "w=1", "0;w=1", "forty;w=1", "40;w=0"):
        assert stated_limit({"RateLimit-Policy": nonsense}) is None, nonsense
    assert stated_limit({}) is None


async def test_a_stated_limit_is_taken_at_its_word() -> None:
    """A service that states its limit on its 429s (``RateLimit-Policy``): the first one
    takes the rate straight to it, whatever the cold start overshot, and it settles there,
    never past it, seldom refused."""
    clock = Clock()
    budget = auto(clock)
    with capture_logs() as logs:
        run = await drive(budget, clock, 30.0, RateLimit(clock, 40.0, policy=True))
    cut = next(event for event in logs if event.get("reason") == "limit_stated")
    assert cut["old"] > 40.0 and cut["new"] == pytest.approx(PACE * 40.0)
    assert 0.97 * 40.0 <= run.answered_per_second(110.0, 130.0) <= 40.0
    assert run.refused_share(110.0, 130.0) < 0.01
    assert max(rate for t, rate in run.rates if t >= 102.0) <= 40.0


async def test_a_limit_under_noise_is_still_found() -> None:
    """A 40/s limit behind 2% of random 429s (bare): the share rises with the rate, so the
    budget settles near the limit instead of sending far past it."""
    clock = Clock()
    budget = auto(clock)
    answer = noisy(RateLimit(clock, 40.0, headers=False), 0.02)
    await drive(budget, clock, 60.0, answer)
    start = clock()
    run = await drive(budget, clock, 60.0, answer)
    assert run.answered_per_second(start, clock()) >= 0.85 * 40.0
    assert run.refused_share(start, clock()) <= 0.06
    assert max(rate for _, rate in run.rates) <= 1.15 * 40.0


async def test_the_rate_comes_back_within_seconds_after_a_storm() -> None:
    """Ten seconds of nothing but 429s drive the rate down; five seconds after the storm it
    is back to 90% of where it was."""
    clock = Clock()
    budget = auto(clock)
    limit = RateLimit(clock, 40.0)
    await drive(budget, clock, 60.0, limit)
    before = budget.rate
    await drive(budget, clock, 10.0, lambda: (429, {"Retry-After": "5"}))
    assert budget.rate < 0.2 * before
    await drive(budget, clock, 5.0, limit)
    assert budget.rate >= 0.9 * before


async def test_the_ceiling_holds_through_slow_start_noise_storm_and_recovery() -> None:
    """max_rps is never passed, whatever the budget is doing."""
    clock = Clock()
    budget = auto(clock, ceiling=30.0)
    runs = [
        await drive(budget, clock, 10.0, lambda: OK),
        await drive(budget, clock, 20.0, noisy(lambda: OK, 0.02)),
        await drive(budget, clock, 5.0, lambda: (429, {})),
        await drive(budget, clock, 20.0, RateLimit(clock, 100.0)),
    ]
    assert max(rate for run in runs for _, rate in run.rates) <= 30.0
    assert max(rate for _, rate in budget.history) <= 30.0
    assert budget.rate >= 0.9 * 30.0


async def test_a_burst_of_429s_is_one_cut() -> None:
    """Five limit 429s within the cool-down cut the rate once; the next, later, again."""
    clock = Clock()
    budget = auto(clock, ceiling=30.0)
    await drive(budget, clock, 10.0, lambda: OK)
    spent = {"RateLimit-Remaining": "0"}
    for _ in range(5):
        budget.on_reply(429, spent)
    assert budget.rate == pytest.approx(30.0 * DECREASE, rel=0.05)
    cut = budget.rate
    clock.now += 2.0  # past the cool-down
    budget.on_reply(429, spent)
    assert budget.rate == pytest.approx(cut * DECREASE)


async def test_a_spent_budget_pauses_until_its_reset() -> None:
    """RateLimit-Remaining: 0 with RateLimit-Reset: 7 — nothing is sent for seven seconds."""
    clock = Clock()
    budget = AdaptiveBudget("forms", "read", clock=clock, sleep=clock.sleep)
    budget.on_reply(200, {"RateLimit-Remaining": "0", "RateLimit-Reset": "7"})
    await budget.acquire()
    assert clock.now - 100.0 == pytest.approx(7.0)


async def test_each_change_of_rate_is_logged_with_its_reason() -> None:
    """rate_changed says why: slow_start, limit_met (with its evidence), recovering,
    probing; a noise 429 changes nothing and logs nothing."""
    clock = Clock()
    budget = auto(clock)
    with capture_logs() as logs:
        await drive(budget, clock, 1.0, lambda: OK)
        budget.on_reply(429, {})
        assert logs and {event["reason"] for event in logs} == {"slow_start"}
        logs.clear()
        await drive(budget, clock, 60.0, RateLimit(clock, 40.0))
    reasons = [event["reason"] for event in logs if event["event"] == "rate_changed"]
    assert {"limit_met", "recovering", "probing"} <= set(reasons)
    met = next(event for event in logs if event["reason"] == "limit_met")
    assert met["evidence"] == "RateLimit-Remaining: 0" and met["new"] < met["old"]


def test_budget_for_picks_the_kind_and_refuses_nonsense() -> None:
    """A number is fixed, "auto" adapts, anything else is an error."""
    assert isinstance(budget_for(50, service="t", direction="read"), FixedBudget)
    assert isinstance(budget_for("auto", service="t", direction="read"), AdaptiveBudget)
    with pytest.raises(ValueError):
        budget_for("fast", service="t", direction="read")


POLICY = {"RateLimit-Policy": "40;w=1"}
SPENT = {"Retry-After": "1", "RateLimit-Remaining": "0", "RateLimit-Reset": "1"}


class VirtualClock(Clock):
    """A clock for many callers at once: time moves, to the earliest sleeper's wake-up, only
    when every caller waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    async def sleep(self, seconds: float) -> None:
        woken = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, id(woken), woken))
        await woken

    async def run(self, *callers: Coroutine[Any, Any, None]) -> None:
        tasks = [asyncio.ensure_future(caller) for caller in callers]
        while not all(task.done() for task in tasks):
            for _ in range(5):  # every caller runs until it waits on the clock
                await asyncio.sleep(0)
            if self._sleepers:
                when, _, woken = heapq.heappop(self._sleepers)
                self.now = self.woken_at(when)
                woken.set_result(None)
        await asyncio.gather(*tasks)

    def woken_at(self, when: float) -> float:
        """When a sleeper due at `when` wakes: then (the process is never busy)."""
        return max(self.now, when)


class StallingClock(VirtualClock):
    """A process busy from `began` to `ended`: every sleeper due meanwhile wakes at its end."""

    def __init__(self, began: float, ended: float) -> None:
        super().__init__()
        self.began, self.ended = began, ended

    def woken_at(self, when: float) -> float:
        return max(super().woken_at(when), self.ended if self.began <= when < self.ended else 0)


async def sends_of(budget: AdaptiveBudget, clock: VirtualClock, callers: int) -> list[float]:
    """When each of `callers` asking at once got its send slot."""
    sent: list[float] = []

    async def caller() -> None:
        await budget.acquire()
        sent.append(clock())

    await clock.run(*(caller() for _ in range(callers)))
    return sorted(sent)


async def test_a_limit_stated_on_any_reply_paces_sends_at_it() -> None:
    """A reply that states 40 a second (``RateLimit-Policy``, a 200 too): the rate goes
    straight from the cold start's 100 to just under it, and eighty callers asking at once
    go one slot apart, never two together, never past it."""
    clock = VirtualClock()
    budget = AdaptiveBudget("tracker", "read", clock=clock, sleep=clock.sleep)
    budget.on_reply(200, POLICY)
    assert budget.rate == pytest.approx(PACE * 40.0)
    sent = await sends_of(budget, clock, 80)
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent)]
    assert min(gaps) == pytest.approx(1.0 / (PACE * 40.0))
    assert (len(sent) - 1) / (sent[-1] - sent[0]) <= 40.0


async def test_a_limit_stated_above_the_cold_start_is_where_the_rate_starts() -> None:
    """``RateLimit-Policy: 600;w=1`` on the first reply: no slow start up to it."""
    clock = Clock()
    budget = auto(clock)
    budget.on_reply(200, {"RateLimit-Policy": "600;w=1"})
    assert budget.rate == pytest.approx(PACE * 600.0)


async def test_a_slow_start_grows_no_further_than_the_stated_limit() -> None:
    """Stated once, on a 429 of the cold start's overshoot: the rate never passes it again,
    however long the service answers."""
    clock = Clock()
    budget = auto(clock)
    budget.on_reply(429, {**SPENT, **POLICY})
    run = await drive(budget, clock, 30.0, lambda: OK)
    assert max(rate for _, rate in run.rates) <= 40.0


async def test_the_callers_a_reset_releases_go_one_slot_apart() -> None:
    """The cold start's overshoot spends the service's budget (a 429 saying the reset is a
    second away): nothing goes until then, and the forty callers waiting go after it one
    slot apart, over the next second, not in a burst at its instant."""
    clock = VirtualClock()
    budget = AdaptiveBudget("tracker", "read", clock=clock, sleep=clock.sleep)
    budget.on_reply(429, {**SPENT, **POLICY})
    sent = await sends_of(budget, clock, 40)
    assert sent[0] >= 101.0
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent)]
    assert min(gaps) == pytest.approx(1.0 / (PACE * 40.0))
    assert sum(1 for t in sent if t < 101.25) <= 0.25 * 40.0 + 1


async def test_a_bunch_of_429s_within_the_stated_limit_waits_a_slot_not_the_reset() -> None:
    """Sending within a stated limit, a bunch of 429s in a tenth of a second (requests that
    bunched on the way: the reset says a whole second, rounded up): the next send waits a
    slot or two, not the second, and the rate stays at the limit."""
    clock = Clock()
    budget = auto(clock)
    budget.on_reply(200, POLICY)
    await drive(budget, clock, 5.0, lambda: OK)
    for _ in range(5):
        budget.on_reply(429, {**SPENT, **POLICY})
        clock.now += 0.02
    before = clock()
    await budget.acquire()
    assert clock() - before <= 2.0 / budget.rate
    assert budget.rate >= 0.98 * PACE * 40.0


async def test_the_429s_of_requests_sent_before_a_pause_do_not_lengthen_it() -> None:
    """A spent budget's reset says one second; the 429 of another request already on its
    way, half a second later, says one second too: the pause still ends at the first reset."""
    clock = Clock()
    budget = auto(clock)
    budget.on_reply(429, SPENT)
    clock.now += 0.5
    budget.on_reply(429, SPENT)
    await budget.acquire()
    assert clock() == pytest.approx(101.0)


async def test_a_sharer_of_the_stated_quota_is_still_found() -> None:
    """The service states 40 a second, but another client takes half of it: the budget,
    within the stated limit, still finds the 20 it gets, seldom refused."""
    clock = Clock()
    budget = auto(clock)
    limit = RateLimit(clock, 20.0)
    shared = lambda: (lambda reply: (reply[0], {**reply[1], **POLICY}))(limit())  # noqa: E731
    await drive(budget, clock, 30.0, shared)
    start = clock()
    run = await drive(budget, clock, 30.0, shared)
    assert run.answered_per_second(start, clock()) >= 0.85 * 20.0
    assert run.refused_share(start, clock()) <= 0.05


async def test_a_budget_resumed_starts_where_the_last_run_left_off() -> None:
    """What a run's budget found of a limit (bare 429s: found, not told) starts the next
    run's there, not at the cold start's 100; a stated limit is kept as stated."""
    clock = Clock()
    first = auto(clock)
    await drive(first, clock, 60.0, RateLimit(clock, 40.0, headers=False))
    found = first.found()
    assert 0.85 * 40.0 <= found["limit"] <= 1.1 * 40.0
    again = auto(clock)
    again.resume(found)
    assert again.rate == pytest.approx(found["limit"])
    told = auto(clock)
    told.resume({"rate": 39.0, "stated": 40.0})
    assert told.rate == pytest.approx(PACE * 40.0)


async def test_a_resumed_budget_keeps_to_its_share_and_ceiling() -> None:
    """What was found is the whole token's: a budget of one of two processes starts at half
    of it, and never above its ceiling."""
    clock = Clock()
    half = AdaptiveBudget("tracker", "read", share=2, clock=clock, sleep=clock.sleep)
    half.resume({"rate": 40.0, "limit": 40.0})
    assert half.rate == pytest.approx(20.0)
    assert half.found()["limit"] == pytest.approx(40.0)
    capped = auto(clock, ceiling=10.0)
    capped.resume({"rate": 40.0, "limit": 40.0})
    assert capped.rate == pytest.approx(10.0)


async def test_a_budget_resumed_after_a_reply_stated_the_limit_keeps_within_it() -> None:
    """A command's first request (its probe) already told the limit; what the last run found
    (that very limit) resumes the budget just under it, not at it."""
    clock = Clock()
    budget = auto(clock)
    budget.on_reply(200, POLICY)
    budget.resume({"rate": 40.0, "limit": 40.0, "stated": 40.0})
    assert budget.rate == pytest.approx(PACE * 40.0)


async def test_callers_woken_late_by_a_busy_process_go_one_slot_apart() -> None:
    """The process is busy for 0.3 s while a dozen callers' slots come: woken together at its
    end, they do not all go at once (a burst a limiter with a fifth of a second's allowance
    would refuse) but take new slots, one apart."""
    clock = StallingClock(100.2, 100.5)
    budget = AdaptiveBudget("tracker", "read", clock=clock, sleep=clock.sleep)
    budget.on_reply(200, POLICY)
    sent = await sends_of(budget, clock, 40)
    assert sum(1 for t in sent if 100.5 <= t < 100.55) <= 3
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent) if earlier >= 100.5]
    assert min(gaps) >= 0.9 / 40.0


async def test_a_stated_limit_that_changes_is_taken_at_its_word() -> None:
    """The service states 40, then 80, then 20 a second: the rate follows each at once."""
    clock = Clock()
    budget = auto(clock)
    for limit in (40.0, 80.0, 20.0):
        budget.on_reply(200, {"RateLimit-Policy": f"{limit:g};w=1"})
        assert budget.rate == pytest.approx(PACE * limit)
