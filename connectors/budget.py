"""Rate budgets: a fixed cap, or one that finds the service's limit by itself ("auto").

Both hand out send slots at the current rate (a slot every 1/rate seconds, reserved in turn,
so concurrent callers never burst past it). The adaptive budget raises its rate while the
service answers without 429 (by half per second of use until the first 429: a slow start;
then by 2% of the rate that met the 429, per second: additive increase) and cuts it on a 429 (to half the first time, ending the slow start; to 80% after), at most once
per cool-down, so a burst of 429s from one overshoot is one cut (multiplicative decrease).
It only raises the rate while the rate is what holds the caller back, never above `ceiling`,
and when the service says its budget is spent (`RateLimit-Remaining: 0` with
`RateLimit-Reset`) it sends nothing until the reset. A 429's own `Retry-After` is honoured by
the retry of that request (see `retrying`). Every change of rate is logged (`rate_changed`)
and kept in `history` for the run report.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import structlog

log = structlog.get_logger("haul.connectors")

AUTO_START = 50.0  # requests per second before anything is known of the service
SLOW_START_GROWTH = 0.5  # per second of use, until the first 429: doubling in under 2 s
STEADY_GROWTH = 0.02  # per second of use, after it
DECREASE = 0.8
SLOW_START_CUT = 0.5
COOL_DOWN = 1.0  # seconds during which further 429s do not cut again
FLOOR = 1.0


@dataclass
class FixedBudget:
    """At most `rate` sends per second: a hard cap, as a number in the config gives."""

    rate: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _next_slot: float = 0.0

    async def acquire(self) -> None:
        """Wait for the next free send slot."""
        now = self.clock()
        slot = max(now, self._next_slot)
        self._next_slot = slot + 1.0 / self.rate
        if slot > now:
            await self.sleep(slot - now)

    def on_reply(self, status: int, headers: Mapping[str, str]) -> None:
        """A fixed budget learns nothing from replies."""

    @property
    def history(self) -> list[tuple[float, float]]:
        return [(0.0, self.rate)]


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
    _next_slot: float = 0.0
    _paused_until: float = 0.0
    _last_cut: float = float("-inf")
    _throttled: bool = False
    _limit_seen: float = AUTO_START
    _waited_since: float | None = None

    def __post_init__(self) -> None:
        if self.ceiling is not None:
            self.rate = min(self.rate, self.ceiling)
        self.history.append((self.clock(), self.rate))

    async def acquire(self) -> None:
        """Wait for the next send slot at the current rate (and past any pause)."""
        now = self.clock()
        slot = max(now, self._next_slot, self._paused_until)
        self._next_slot = slot + 1.0 / self.rate
        if slot > now:
            # the rate (not the caller's own pace) is the bound: it may grow
            self._waited_since = self._waited_since or now
            await self.sleep(slot - now)
        else:
            self._waited_since = None

    def on_reply(self, status: int, headers: Mapping[str, str]) -> None:
        """Learn from one reply: a 429 cuts the rate, a spent budget pauses, success grows it."""
        now = self.clock()
        remaining, reset = (
            _number(headers, "RateLimit-Remaining"),
            _number(headers, "RateLimit-Reset"),
        )
        if remaining is not None and remaining <= 0 and reset is not None:
            self._paused_until = max(self._paused_until, now + reset)
        if status == 429:
            self._cut(now)
        elif status < 400 and self._waited_since is not None:
            self._grow(now)

    def _cut(self, now: float) -> None:
        if now - self._last_cut < COOL_DOWN:
            return
        # the slow start overshoots by up to half: its first 429 halves, later ones trim
        factor = DECREASE if self._throttled else SLOW_START_CUT
        self._throttled = True
        self._last_cut = now
        self._limit_seen = self.rate * factor / DECREASE if factor != DECREASE else self.rate
        self._change(max(FLOOR, self.rate * factor), "429")

    def _grow(self, now: float) -> None:
        # Replies come `rate` times a second, so each adds its share of a second's growth:
        # +10% a second in slow start; after a 429, +2% of the rate that met it, a second.
        if self._throttled:
            step = STEADY_GROWTH * self._limit_seen / self.rate
        else:
            step = SLOW_START_GROWTH
        target = self.rate + step
        if self.ceiling is not None:
            target = min(target, self.ceiling)
        if target > self.rate:
            self.rate = target
            if not self.history or now - self.history[-1][0] >= 1.0:
                self.history.append((now, self.rate))
                log.info(
                    "rate_changed",
                    service=self.service,
                    direction=self.direction,
                    rate=round(self.rate, 1),
                    reason="no 429",
                )

    def _change(self, rate: float, reason: str) -> None:
        old, self.rate = self.rate, rate
        self.history.append((self.clock(), rate))
        log.info(
            "rate_changed",
            service=self.service,
            direction=self.direction,
            old=round(old, 1),
            new=round(rate, 1),
            reason=reason,
        )


Budget = FixedBudget | AdaptiveBudget


def budget_for(
    rate: float | str,
    *,
    service: str,
    direction: str,
    ceiling: float | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Budget:
    """A fixed budget for a number, an adaptive one for "auto"."""
    if rate == "auto":
        return AdaptiveBudget(service, direction, ceiling=ceiling, sleep=sleep, clock=clock)
    if isinstance(rate, str) or rate <= 0:
        raise ValueError(f'a rate is a positive number or "auto", not {rate!r}')
    return FixedBudget(float(rate), clock=clock, sleep=sleep)


def _number(headers: Mapping[str, str], name: str) -> float | None:
    value = headers.get(name)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
