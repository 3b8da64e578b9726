"""Rate budgets: a fixed cap, or one that finds the service's limit by itself ("auto").

Both hand out send slots at the current rate (a slot every 1/rate seconds, reserved in turn,
so concurrent callers never burst past it; a caller woken well after its slot, the process
busy meanwhile, takes a new one rather than go out with the others woken late with it).

A service may **state** its limit: ``RateLimit-Policy`` (the IETF drafts' quota per window),
read from any reply that carries it. Then the rate goes straight to ``PACE`` of it (from the
cold start, or down from an overshoot) and never past it: sends are paced at the limit
instead of bursting into a refusal. A 429 to a request sent within it is a bunch of requests
that met on the way, not the rate; the 429s of one ``BUNCH_SPAN`` are judged as one: a step
back, and a pause of one slot (the stated quota gives a request back in it), not of the whole
seconds ``RateLimit-Reset`` is rounded up to. A limit met under the stated one all the same (a
share past noise: another client shares the quota) is learned as below, and the statement is
no longer taken as what this budget gets, until the service states another.

Otherwise the adaptive budget tells a rate limit from noise. A busy service refuses a thin
share of requests at any rate; a limit refuses a share that grows as the rate passes it, and
often says so. So a 429 is a **limit** when it carries ``RateLimit-Remaining: 0``, or when the
429s among the replies since the rate was last cut (the last ``WINDOW`` of them, or of the
last ``WINDOW_SECONDS`` when more) are more than random refusals of ``NOISE`` (3%) would
give but once in a thousand windows (4 of 10, 10 of 100, 33 of 600); any other 429 is
**noise**: its request is retried (see ``retrying``) and the rate stays. Then:

- before any limit: a slow start from ``AUTO_START`` (or where the last run against the same
  service left off: `found` and `resume`), growing with each reply while the rate binds
  (about x20 a second: the first limit is found within the first second or two);
- a limit met while the rate rises: the limit is there. The last good rate becomes what the
  service let through lately (replies but 429s per second of sending), and the rate falls
  to ``DECREASE`` of it;
- a limit met again while the rate falls (the refusals did not stop when it did): a storm,
  not the rate. Cut again; what was learned before it holds;
- below the last good rate: recovering, x2 a second up to ``RETURN_TO`` of it (seconds,
  not minutes, after a storm); from there, probing: back towards the rate that met the
  limit (at most 10% past the last good rate), ``APPROACH`` of the gap a second, slowing as
  it nears, and on past the last good rate by 0.5% of it a second, a step that doubles every
  ``PROBE_DOUBLING`` seconds used without a 429 (never more than x2 a second): a limit that
  rose, or a quota another client stopped sharing, is found within seconds. There, a 429 too
  few to cut on steps the rate back by that first step and holds it for ``WINDOW_SECONDS``:
  bare 429s settle it just under a limit, not a few percent over.

The rate only grows while it is what holds the caller back (a send waited for its slot, and
the slots of the last moments were mostly used: a caller whose replies come in bursts, each
429 holding its request a second, does not pull the rate far past what it sends), never
above ``ceiling`` nor a stated limit, and falls at most once per ``COOL_DOWN`` (a burst of
429s from one overshoot is one cut). When the service says its budget is spent
(``RateLimit-Remaining: 0`` with ``RateLimit-Reset``) past a stated limit, or states none,
nothing is sent until the reset; the 429s of requests sent before the pause began do not
lengthen it, and the callers it held go after it one slot apart. Every change of rate is
logged (``rate_changed`` with its ``reason``) and kept in ``history`` for the run report
(growth at most once a second).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from haul.connectors.retrying import is_throttle

log = structlog.get_logger("haul.connectors")

AUTO_START = 100.0  # requests per second before anything is known of the service
PACE = 0.99  # of a limit the service states: the rate never goes past it (a margin for
# jitter: at the limit itself, a limiter's burst once spent by a bunch never fills again)
SLOW_START_GROWTH = 3.0  # of the rate, per second of use, until the first limit
RECOVERY_GROWTH = 2.0  # times per second, back up to the last good rate
RETURN_TO = 0.95  # the recovery's multiplicative climb stops at this share of it
BEYOND_GOOD = 1.1  # the rate that met a limit is returned to up to this much past the good
APPROACH = 0.25  # of the gap to the rate that met the limit, closed per second
PROBE_GROWTH = 0.005  # of the last good rate per second, at least: where is the limit now?
PROBE_DOUBLING = 3.0  # seconds used past the last good rate, no 429, in which that step doubles
DECREASE = 0.8
COOL_DOWN = 1.0  # seconds during which further 429s do not cut again
FLOOR = 1.0
NOISE = 0.03  # the share of 429s a busy service may answer at random, at any rate
SIGNIFICANCE = 0.001  # how unlikely under NOISE a share of 429s must be to mean a limit
WINDOW = 100  # replies the share is judged over, at least (fewer since the last cut)
WINDOW_SECONDS = 2.0  # and those of the last seconds, when more
MAX_WINDOW = 2000
MEASURED_OVER = 4.0  # seconds of replies that say what the service let through
SATURATED = 0.5  # of the rate's slots the last moments must have used for it to grow
EXERCISED = 0.9  # and for the probe's step to keep doubling
HORIZON = 0.25  # seconds ahead send slots are reserved, at most
BUNCHED = 0.05  # seconds late a send wakes past its slot, at most, and still goes in it
BUNCH_SPAN = 0.25  # seconds of 429s within a stated limit judged as one (a bunch, not a rate)
SENT_OVER = 0.2  # seconds those moments are, at least (else the time of 5 slots at the rate)


class Slotted(Protocol):
    """A budget that hands out send slots: `reserve` one from a time of its `clock`."""

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def sleep(self) -> Callable[[float], Awaitable[None]]: ...

    def reserve(self, now: float) -> tuple[float, bool]: ...


async def take_slot(budget: Slotted) -> None:
    """Reserve the budget's next send slot (asking again while it is further ahead than the
    budget reserves), then wait until it comes. A caller woken more than BUNCHED after its
    slot (the process was busy: the callers of the slots around it woke late too) takes a
    new one, once: sent together, they would be the burst the rate never meant (and a
    process late all the time wastes at most a slot a send)."""
    late_once = False
    while True:
        now = budget.clock()
        at, reserved = budget.reserve(now)
        if not reserved:
            await budget.sleep(at - now)
            continue
        if at <= now:
            return
        await budget.sleep(at - now)
        if late_once or budget.clock() - at <= BUNCHED:
            return
        late_once = True


@dataclass
class FixedBudget:
    """At most `rate` sends per second: a hard cap, as a number in the config gives."""

    rate: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    horizon: float | None = None  # reserve no slot further ahead (a shared budget: see there)
    _next_slot: float = 0.0

    async def acquire(self) -> None:
        """Wait for the next free send slot."""
        await take_slot(self)

    def reserve(self, now: float) -> tuple[float, bool]:
        """The next free send slot from `now`: (its time, True) once taken, or (when to ask
        again, False) while it is more than `horizon` ahead."""
        slot = max(now, self._next_slot)
        if self.horizon is not None and slot - now > self.horizon:
            return slot - self.horizon, False
        self._next_slot = slot + 1.0 / self.rate
        return slot, True

    def on_reply(self, status: int, headers: Mapping[str, str]) -> None:
        """A fixed budget learns nothing from replies."""

    def found(self) -> dict[str, float]:
        """Nothing to keep for a next run: its number says where it starts."""
        return {}

    def resume(self, found: Mapping[str, float]) -> None:
        """A fixed budget starts at its number, whatever a run before found."""

    @property
    def history(self) -> list[tuple[float, float]]:
        return [(0.0, self.rate)]


def is_beyond_noise(refused: int, replies: int, noise: float = NOISE) -> bool:
    """Whether `refused` 429s in `replies` are more than random refusals at `noise` would
    give, but once in 1/SIGNIFICANCE windows: the binomial tail P(X >= refused)."""
    if refused <= 0:
        return False
    term = (1 - noise) ** replies  # P(X = 0), then P(X = k) from P(X = k - 1)
    below = 0.0
    for k in range(refused):
        below += term
        term *= (replies - k) / (k + 1) * noise / (1 - noise)
    return 1.0 - below < SIGNIFICANCE


class RefusalWindow:
    """The replies since the rate was last cut, 429 or not: the last WINDOW of them, or
    those of the last WINDOW_SECONDS when more (a fast sender judges on more replies)."""

    def __init__(self) -> None:
        self._replies: deque[tuple[float, bool]] = deque()
        self.refused = 0

    def add(self, now: float, refused: bool) -> None:
        self._replies.append((now, refused))
        self.refused += refused
        while len(self._replies) > WINDOW and (
            self._replies[0][0] < now - WINDOW_SECONDS or len(self._replies) > MAX_WINDOW
        ):
            self.refused -= self._replies.popleft()[1]

    @property
    def replies(self) -> int:
        return len(self._replies)

    def clear(self) -> None:
        self._replies.clear()
        self.refused = 0


@dataclass
class AdaptiveBudget:
    """The "auto" budget; see the module docstring."""

    service: str
    direction: str
    ceiling: float | None = None
    rate: float = AUTO_START
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    history: list[tuple[float, float]] = field(default_factory=list)
    share: int = 1  # processes splitting the token's budget: this one keeps to 1/share of it
    good: float | None = None  # the last good rate: None until a limit was first met
    _met_at: float = 0.0  # the rate that last met the limit, rising
    _beyond_since: float | None = None  # when the rate passed `good`, used, no 429 since
    _next_slot: float = 0.0
    _paused_until: float = 0.0
    _pauses: deque[list[float]] = field(default_factory=deque)  # [began, ends] of each lately
    _last_cut: float = float("-inf")
    _stepped_back: float = float("-inf")  # when a 429 near the last good rate last held it
    _bunch_began: float = float("-inf")  # when the last bunch of 429s within a stated limit did
    _stated: float | None = None  # the limit the service states, per second, if it does
    _trusted: bool = False  # and no limit was met under it since it was stated
    _rising: bool = True  # the rate grew since it was last cut
    _waited_since: float | None = None
    _window: RefusalWindow = field(default_factory=RefusalWindow)
    _answered: deque[float] = field(default_factory=deque)  # when replies other than 429 came
    _first_reply: float | None = None
    _slots: deque[float] = field(default_factory=deque)  # the send slots handed out lately

    def __post_init__(self) -> None:
        self.rate /= self.share
        if self.ceiling is not None:
            self.rate = min(self.rate, self.ceiling)
        self.history.append((self.clock(), self.rate))

    def found(self) -> dict[str, float]:
        """What this budget found of the service, for the next run to start from (`resume`):
        the rate it ended at, the limit it met (``limit``) and the one the service stated
        (``stated``) when it did; requests per second of the whole token (a share undone).
        Nothing, for a budget that heard no reply and knows no limit."""
        if self._first_reply is None and self.good is None and self._stated is None:
            return {}
        found = {"rate": self.rate * self.share}
        for name, value in (("limit", self.good), ("stated", self._stated)):
            if value is not None:
                found[name] = value * self.share
        return found

    def resume(self, found: Mapping[str, float]) -> None:
        """Start where a run before left off (what its `found` gave): at the limit it met,
        probing on from there (the first limit met is learned anew: it may have moved), or
        at the rate it reached before it met one; within a limit the service stated (then,
        or in this run's replies so far) and the ceiling."""
        limit, rate, stated = (found.get(name) for name in ("limit", "rate", "stated"))
        if limit is not None and limit > 0:
            self.good = self._met_at = limit / self.share
            self._rising = True
            self.rate = self.good
        elif rate is not None and rate > 0:
            self.rate = max(self.rate, rate / self.share)
        if stated is not None and stated > 0 and self._stated is None:
            self._stated, self._trusted = stated / self.share, True
            if self.good is None:
                self.good = self._met_at = self._stated
        if self._stated is not None:
            self.rate = min(self.rate, PACE * self._stated)
        if self.ceiling is not None:
            self.rate = min(self.rate, self.ceiling)
        self._record(self.clock(), self.history[-1][1], "resumed")

    async def acquire(self) -> None:
        """Wait for the next send slot at the current rate (and past any pause). Slots are
        reserved at most HORIZON ahead: a caller further back waits until the queue before it
        is that near, so a change of rate paces the queue within HORIZON (reserved at the old
        rate, seconds of queue would go on at it after a cut)."""
        await take_slot(self)

    def reserve(self, now: float) -> tuple[float, bool]:
        """The next send slot from `now`: (its time, True) once taken, or (when to ask
        again, False) while the queue before it is more than HORIZON ahead."""
        slot = max(now, self._next_slot, self._paused_until)
        if slot <= now:
            self._waited_since = None
        else:  # the rate (not the caller's own pace) is the bound: it may grow
            self._waited_since = self._waited_since or now
            if slot - now > HORIZON:
                return slot - HORIZON, False
        self._next_slot = slot + 1.0 / self.rate
        self._slots.append(slot)
        return slot, True

    def on_reply(self, status: int, headers: Mapping[str, str]) -> None:
        """Learn from one reply: a limit cuts the rate, a spent budget pauses, noise is
        let be, success grows the rate while it binds."""
        now = self.clock()
        self._first_reply = self._first_reply if self._first_reply is not None else now
        remaining, reset = (
            _number(headers, "RateLimit-Remaining"),
            _number(headers, "RateLimit-Reset"),
        )
        spent = remaining is not None and remaining <= 0
        # whether the request was sent within the limit the service states, while that is
        # what this budget gets: judged before this reply's news (a slow start's overshoot
        # was not)
        within = self._stated is not None and self._trusted and self.rate <= self._stated
        stated = stated_limit(headers)
        if stated is not None:
            self._told(now, stated / self.share)
        bunched = False
        if is_throttle(status):  # a 420 is a 429 in a sister API's words
            bunched = self._judge(now, spent, within)
        else:
            self._window.add(now, False)
            if now >= self._paused_until:  # those sent before a pause say nothing of it
                self._answered.append(now)
            while self._answered and self._answered[0] < now - MEASURED_OVER:
                self._answered.popleft()
            if status < 400 and self._waited_since is not None:
                self._grow(now)
        if spent and reset is not None:  # bunched: the stated quota gives one back in a slot
            self._pause(now, now + (1.0 / self.rate if bunched else reset))

    def _told(self, now: float, stated: float) -> None:
        """The service states its limit (``RateLimit-Policy``, on any reply): the rate goes
        no further than PACE of it from now on, and one still searching for the limit (the
        slow start), or past it, goes there at once (a cut, if it falls: the 429s of what was
        sent before are one overshoot). A changed limit is taken at its word in turn, up or
        down, unless a limit was met under the one before (another client shares it)."""
        if stated == self._stated:
            return
        moved = self._stated is not None and self._trusted
        self._stated, self._trusted = stated, True
        limit = min(stated, self.ceiling or stated)
        cap = min(PACE * stated, limit)
        if self.good is None or self.rate > cap or moved:
            if cap < self.rate:
                self._last_cut = now
                self._window.clear()
            self.good = self._met_at = limit
            self._rising = False
            self._change(cap, "limit_stated", f"RateLimit-Policy {stated:g}/s")

    def _pause(self, now: float, until: float) -> None:
        """Send nothing until `until`; the 429s of requests sent before it began say nothing
        new, so a pause is never made longer (it lasts what the first reset said)."""
        if now < self._paused_until:
            return
        self._pauses.append([now, until])
        while self._pauses[0][1] < now - MEASURED_OVER:
            self._pauses.popleft()
        self._paused_until = until

    def _judge(self, now: float, spent: bool, within: bool) -> bool:
        """A 429: a limit (said so, or a share past noise) or noise, let be. Whether it is
        **bunched**: sent `within` the limit the service states and too few to be a limit,
        a burst of requests bunched on the way, not the rate (a step back, and a pause of
        one slot, not of the whole seconds a reset is rounded up to)."""
        if within and now - self._bunch_began < BUNCH_SPAN:
            return True  # one more of a bunch already judged
        if within:
            self._bunch_began = now
        self._window.add(now, True)
        self._beyond_since = None  # the probe's step starts small again
        beyond = is_beyond_noise(self._window.refused, self._window.replies)
        cooling = now - self._last_cut < COOL_DOWN  # the 429s of one overshoot: one cut
        if spent and not within:
            self._limit_met(now, "RateLimit-Remaining: 0")
        elif beyond:
            self._limit_met(now, f"{self._window.refused} of {self._window.replies} 429")
        elif not cooling and self.good is not None and self.rate >= RETURN_TO * self.good:
            # near a limit met before, a 429 too few to cut on is a step back all the same
            self.rate = max(FLOOR, self.rate - PROBE_GROWTH * self.good)
            self._stepped_back = now
            self._record_small(now, "stepped_back")
        return within and not beyond

    def _limit_met(self, now: float, evidence: str) -> None:
        if now - self._last_cut < COOL_DOWN:
            return
        self._last_cut = now
        self._stepped_back = float("-inf")
        self._window.clear()
        self._trusted = False  # a limit met under the stated one: another client shares it
        if self._rising:  # the limit is where the rate rose to: learn it
            self.good = self._let_through(now)
            # the rate that met it, but a slow start's overshoot is no place to return to
            self._met_at = min(self.rate, self.good * BEYOND_GOOD)
            self._rising = False
            self._change(max(FLOOR, DECREASE * self.good), "limit_met", evidence)
        else:  # refused while the rate falls: a storm, not the rate; the rate before it holds
            self._change(max(FLOOR, DECREASE * self.rate), "still_limited", evidence)

    def _let_through(self, now: float) -> float:
        """Replies other than 429 per second of sending lately (a pause sends nothing): the
        service's limit, when it binds; between half the rate and the rate."""
        while self._answered and self._answered[0] < now - MEASURED_OVER:
            self._answered.popleft()  # a storm may have answered nothing lately
        since = max(now - MEASURED_OVER, self._first_reply or now)
        paused = sum(max(0.0, min(end, now) - max(began, since)) for began, end in self._pauses)
        span = now - since - paused
        measured = self._answered_rate(len(self._answered), span)
        return min(self.rate, max(measured, self.rate / 2))

    def _answered_rate(self, answered: int, span: float) -> float:
        """Replies other than 429 per second of sending (a shared budget adds its sharers')."""
        return answered / span if span > 0 else self.rate

    def _used(self, now: float) -> float:
        """The slots of the last moments (those reserved ahead too) over what the rate
        hands out in them."""
        span = max(SENT_OVER, 5.0 / self.rate)
        while self._slots and self._slots[0] < now - span:
            self._slots.popleft()
        return len(self._slots) / (self.rate * span)

    def _grow(self, now: float) -> None:
        used = self._used(now)
        if used < SATURATED:
            return
        if used < EXERCISED:  # a rate the caller hardly uses says little of the limit
            self._beyond_since = None
        # Replies come `rate` times a second, so each adds its share of a second's growth.
        if self.good is None:
            target, reason = self.rate + SLOW_START_GROWTH, "slow_start"
        elif self.rate < RETURN_TO * self.good:
            target, reason = self.rate * RECOVERY_GROWTH ** (1 / self.rate), "recovering"
        elif now - self._stepped_back < WINDOW_SECONDS:
            return  # a 429 lately near the last good rate: a limit in sight, or noise
        else:  # back towards the rate that met the limit, slowing as it nears; then past it
            step = max(APPROACH * (self._met_at - self.rate), self._probe_step(now))
            step = min(step, (RECOVERY_GROWTH - 1) * self.rate)
            target, reason = self.rate + step / self.rate, "probing"
        if self.ceiling is not None:
            target = min(target, self.ceiling)
        if self._stated is not None:  # never past the limit the service states
            target = min(target, PACE * self._stated)
        if target <= self.rate:
            return
        self.rate, self._rising = target, True
        if self.good is not None and reason == "probing":
            self.good = max(self.good, target)
        self._record_small(now, reason)

    def _probe_step(self, now: float) -> float:
        """Growth per second past the last good rate: small at first, doubling every
        PROBE_DOUBLING seconds it is used beyond it without a 429."""
        assert self.good is not None  # probing follows a limit
        if self.rate < self.good:
            return PROBE_GROWTH * self.good
        if self._beyond_since is None:
            self._beyond_since = now
        return PROBE_GROWTH * self.good * 2 ** ((now - self._beyond_since) / PROBE_DOUBLING)

    def _record_small(self, now: float, reason: str) -> None:
        """Small steps (growth, a step back) are logged and kept at most once a second."""
        if now - self.history[-1][0] >= 1.0:
            self._record(now, self.history[-1][1], reason)

    def _change(self, rate: float, reason: str, evidence: str) -> None:
        old, self.rate = self.rate, rate
        self._record(self.clock(), old, reason, evidence=evidence)

    def _record(self, now: float, old: float, reason: str, **details: str) -> None:
        self.history.append((now, self.rate))
        log.info(
            "rate_changed",
            service=self.service,
            direction=self.direction,
            old=round(old, 1),
            new=round(self.rate, 1),
            reason=reason,
            **details,
        )


Budget = FixedBudget | AdaptiveBudget


def budget_for(
    rate: float | str,
    *,
    service: str,
    direction: str,
    ceiling: float | None = None,
    share: int = 1,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Budget:
    """A fixed budget for a number, an adaptive one for "auto"; with `share` N, this
    process's 1/N of it (the static split of a token among N processes: the number, the
    ceiling, and the limit an adaptive budget is told, each divided by N)."""
    if rate == "auto":
        ceiling = ceiling / share if ceiling is not None else None
        return AdaptiveBudget(
            service, direction, ceiling=ceiling, share=share, sleep=sleep, clock=clock
        )
    if isinstance(rate, str) or rate <= 0:
        raise ValueError(f'a rate is a positive number or "auto", not {rate!r}')
    return FixedBudget(float(rate) / share, clock=clock, sleep=sleep)


def stated_limit(headers: Mapping[str, str]) -> float | None:
    """The requests per second the service says it allows: the first policy of
    ``RateLimit-Policy``, as the IETF drafts write it (``40;w=1``, or ``"name";q=40;w=1``),
    None when it states no quota and window."""
    policy = headers.get("RateLimit-Policy")
    if not policy:
        return None
    first, *items = policy.split(",")[0].split(";")
    parameters = dict(item.strip().lower().partition("=")[::2] for item in items)
    try:
        quota = float(parameters.get("q") or first)
        window = float(parameters.get("w", ""))
    except ValueError:
        return None
    return quota / window if quota > 0 and window > 0 else None


def _number(headers: Mapping[str, str], name: str) -> float | None:
    value = headers.get(name)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
