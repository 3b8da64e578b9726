"""The store's notion of "now": UTC ISO-8601 strings, injectable so tests control time."""

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], str]


def utc_now() -> str:
    """Now in UTC as ISO-8601 with milliseconds, e.g. 2024-05-01T12:00:00.000+00:00."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
