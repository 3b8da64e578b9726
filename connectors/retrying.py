"""When to send a request again, and how long to wait first.

Safe to repeat: a reply of 429 or 500/502/503/504, and any failure before the request left
this machine (connect error, connect timeout, no free pooled connection). A read may also
repeat after a failure *after* sending (read timeout, reset connection); a write may not,
because the server may have applied it: the core turns that into AmbiguousWriteError.

Waits honour the server's ``Retry-After`` (seconds or an HTTP date); without a usable one
they grow exponentially with full jitter (a uniform draw below the exponential bound,
capped), so that many clients backing off together do not return in lock-step.
"""

from __future__ import annotations

import email.utils
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_base, wait_random_exponential

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

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


class RetryableStatus(Exception):
    """Raised inside an attempt for a reply the retry policy repeats (429, 5xx)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"status {response.status_code}")
        self.response = response


def parse_retry_after(value: str | None, now: Callable[[], datetime]) -> float | None:
    """Seconds to wait from a ``Retry-After`` value, or None when absent or unusable.

    Accepts delta-seconds (``"3"``, ``"1.5"``) and HTTP dates; zero, negative or
    unparseable values count as absent, so the caller falls back to its backoff.
    """
    if not value or not value.strip():
        return None
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


class WaitRetryAfter(wait_base):
    """Wait as long as the last reply's ``Retry-After`` asks, else use ``fallback``."""

    def __init__(self, fallback: wait_base, now: Callable[[], datetime]) -> None:
        self.fallback = fallback
        self.now = now

    def __call__(self, retry_state: RetryCallState) -> float:
        error = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(error, RetryableStatus):
            asked = parse_retry_after(error.response.headers.get("Retry-After"), self.now)
            if asked is not None:
                return asked
        return self.fallback(retry_state)


def full_jitter_backoff(max_backoff: float) -> wait_base:
    """Uniform in [0, min(max_backoff, 0.5 * 2 ** (attempt - 1))] seconds."""
    return wait_random_exponential(multiplier=BACKOFF_MULTIPLIER, max=max_backoff)


def retrying(
    *,
    write: bool,
    max_attempts: int,
    max_backoff: float,
    sleep: Callable[[float], Awaitable[None]],
    before_sleep: Callable[[RetryCallState], Any] | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> AsyncRetrying:
    """The tenacity controller for one request; it re-raises the last failure when done."""
    retry_on = (RetryableStatus, *CONNECT_STAGE_ERRORS)
    if not write:
        retry_on = (*retry_on, *AFTER_SEND_ERRORS)
    return AsyncRetrying(
        stop=stop_after_attempt(max_attempts),
        wait=WaitRetryAfter(full_jitter_backoff(max_backoff), now),
        retry=retry_if_exception_type(retry_on),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
