"""When to send a request again, and how long to wait first.

Safe to repeat: a throttle (429, or 420, which sister APIs of the same vendor answer instead)
or 500/502/503/504, and any failure before the request left
this machine (connect error, connect timeout, no free pooled connection). A read may also
repeat after a failure *after* sending (read timeout, reset connection); a write may not,
because the server may have applied it: the core turns that into AmbiguousWriteError.

Waits honour the server's ``Retry-After`` (seconds or an HTTP date); a throttle without a
usable one waits for its ``RateLimit-Reset`` (the seconds until the quota is back), then a
uniform draw within the next ``RESET_SPREAD`` seconds: the requests refused together do not
all come back at the reset's instant. Without either, waits grow exponentially with full
jitter (a uniform draw below the exponential bound, capped), so that many clients backing off
together do not return in lock-step.

Every wait has a bound. A throttle is waited out for up to the rate-limit patience, a 5xx or a
connection failure for up to the outage patience; a ``Retry-After`` longer than what is left
of the patience stops at once. The patience counts the waits (as asked of the injected sleep,
so a fake sleep in tests counts as real) and the failed attempts' own time (`Stopwatch`):
each attempt ends at the request deadline, so a reply that trickles in a byte at a time
costs one deadline per attempt, and a request that keeps failing ends within its patience
plus one deadline, however many attempts that is. A reply that is not JSON is tried a few times only. ``max_attempts``, when
given, caps the attempts as well.

A caller holding one of a stage's few places (the load engine's trees) may lend it while its
request waits to be sent again: it sets ``LENDER`` in its context, and the core enters
``waiting_aside()`` around every wait (see ``haul.pipelines.concurrency``).
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type
from tenacity.stop import stop_base
from tenacity.wait import wait_base, wait_random_exponential

T = TypeVar("T")

# "slow down": 429, or 420 as sister APIs of the same vendor say it; both alike everywhere
THROTTLE_STATUSES = frozenset({420, 429})
RETRY_STATUSES = THROTTLE_STATUSES | {500, 502, 503, 504}

# Nothing reached the server: repeating is safe for every method.
CONNECT_STAGE_ERRORS: tuple[type[Exception], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
)
# The request (or part of it) was sent: only a read may be repeated.
AFTER_SEND_ERRORS: tuple[type[Exception], ...] = (
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
)

BACKOFF_MULTIPLIER = 0.5  # seconds: the first backoff window
RESET_SPREAD = 1.0  # seconds after a RateLimit-Reset over which refused requests come back


BAD_REPLY_ATTEMPTS = 3  # an HTML page where JSON belongs rarely mends itself


class Lender(Protocol):
    """What a caller lends while its request waits to be sent again (a place in a stage)."""

    def lent(self) -> AbstractAsyncContextManager[None]: ...


LENDER: ContextVar[Lender | None] = ContextVar("haul_retry_lender", default=None)


@asynccontextmanager
async def waiting_aside() -> AsyncIterator[None]:
    """Around a retry's wait: the context's lender lends what it holds meanwhile."""
    lender = LENDER.get()
    if lender is None:
        yield
        return
    async with lender.lent():
        yield


class RetryableStatus(Exception):
    """Raised inside an attempt for a reply the retry policy repeats (a throttle, 5xx)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"status {response.status_code}")
        self.response = response


class RetryableBadReply(Exception):
    """Raised inside an attempt for a 2xx reply whose body is not the JSON expected."""

    def __init__(self, response: httpx.Response, problem: str) -> None:
        super().__init__(problem)
        self.response = response
        self.problem = problem


def is_throttle(status: int) -> bool:
    """A reply that asks haul to slow down (429 or 420)."""
    return status in THROTTLE_STATUSES


def is_rate_limit(error: BaseException | None) -> bool:
    """A throttle reply (waited out under the rate-limit patience)."""
    return isinstance(error, RetryableStatus) and is_throttle(error.response.status_code)


@dataclass(frozen=True)
class Patience:
    """How long a request may wait in all for a service to come back (seconds)."""

    rate_limit: float = 900.0
    outage: float = 300.0

    def allows(self, retry_state: RetryCallState, busy: float = 0.0) -> bool:
        """Whether the wait now due still fits in the patience of this failure's kind, with
        the `busy` seconds the attempts themselves took."""
        error = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(error, RetryableBadReply):
            return retry_state.attempt_number < BAD_REPLY_ATTEMPTS
        budget = self.rate_limit if is_rate_limit(error) else self.outage
        return retry_state.idle_for + busy + (retry_state.upcoming_sleep or 0.0) <= budget


class Stopwatch:
    """The time a request's attempts took, in all (tenacity's `idle_for` holds the waits)."""

    def __init__(self, spent: float = 0.0) -> None:
        self.spent = spent

    async def timed(self, attempt: Callable[[], Awaitable[T]]) -> T:
        started = time.monotonic()
        try:
            return await attempt()
        finally:
            self.spent += time.monotonic() - started


class StopOnPatience(stop_base):
    """Stop when the next wait would go past the patience, or after ``max_attempts``."""

    def __init__(
        self, patience: Patience, max_attempts: int | None, busy: Stopwatch | None = None
    ) -> None:
        self.patience = patience
        self.max_attempts = max_attempts
        self.busy = busy

    def __call__(self, retry_state: RetryCallState) -> bool:
        if self.max_attempts is not None and retry_state.attempt_number >= self.max_attempts:
            return True
        busy = self.busy.spent if self.busy is not None else 0.0
        return not self.patience.allows(retry_state, busy)


def parse_retry_after(value: str | None, now: Callable[[], datetime]) -> float | None:
    """Seconds to wait from a ``Retry-After`` value, or None when absent or unusable.

    Accepts delta-seconds (``"3"``, ``"1.5"``) and HTTP dates; zero, negative or
    unparseable values count as absent, so the caller falls back to its backoff.
    """
    if not value or not value.strip():
        return None
    seconds: float | None
    try:
        seconds = float(value)
    except ValueError:
        seconds = _seconds_until(value, now)
    if seconds is None or seconds != seconds or seconds <= 0:  # NaN is not a wait
        return None
    return seconds


def _seconds_until(http_date: str, now: Callable[[], datetime]) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" parses naive; HTTP dates are GMT
        when = when.replace(tzinfo=UTC)
    return (when - now()).total_seconds()


def parse_reset(value: str | None) -> float | None:
    """Seconds until a quota is back from a ``RateLimit-Reset`` value (delta-seconds, as the
    IETF drafts write it), or None when absent or unusable."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    if seconds is None or seconds != seconds or seconds < 0:
        return None
    return seconds


class WaitRetryAfter(wait_base):
    """Wait as long as the last reply's ``Retry-After`` asks, or a throttle's
    ``RateLimit-Reset`` and a share of the second after it (`spread`), else use `fallback`."""

    def __init__(
        self,
        fallback: wait_base,
        now: Callable[[], datetime],
        spread: Callable[[], float] = lambda: random.uniform(0, RESET_SPREAD),
    ) -> None:
        self.fallback = fallback
        self.now = now
        self.spread = spread

    def __call__(self, retry_state: RetryCallState) -> float:
        error = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(error, RetryableStatus):
            headers = error.response.headers
            asked = parse_retry_after(headers.get("Retry-After"), self.now)
            if asked is not None:
                return asked
            reset = parse_reset(headers.get("RateLimit-Reset"))
            if reset is not None and is_throttle(error.response.status_code):
                return reset + self.spread()
        return self.fallback(retry_state)


def full_jitter_backoff(max_backoff: float) -> wait_base:
    """Uniform in [0, min(max_backoff, 0.5 * 2 ** (attempt - 1))] seconds."""
    return wait_random_exponential(multiplier=BACKOFF_MULTIPLIER, max=max_backoff)


def retrying(
    *,
    repeatable: bool,
    max_attempts: int | None,
    max_backoff: float,
    patience: Patience = Patience(),
    sleep: Callable[[float], Awaitable[None]],
    before_sleep: Callable[[RetryCallState], Any] | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    busy: Stopwatch | None = None,
) -> AsyncRetrying:
    """The tenacity controller for one request; it re-raises the last failure when done
    (`busy`: the attempts' own time, counted in the patience)."""
    retry_on = (RetryableStatus, RetryableBadReply, *CONNECT_STAGE_ERRORS)
    if repeatable:  # a lost reply may be asked again; a write's outcome must be looked up
        retry_on = (*retry_on, *AFTER_SEND_ERRORS)
    return AsyncRetrying(
        stop=StopOnPatience(patience, max_attempts, busy),
        wait=WaitRetryAfter(full_jitter_backoff(max_backoff), now),
        retry=retry_if_exception_type(retry_on),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
