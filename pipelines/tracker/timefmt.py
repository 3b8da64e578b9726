"""The tracker's time format, written once: `2024-01-01T10:00:00.000+0000` (UTC, milliseconds).

The extract (a scroll's watermark and query), the load (import bodies, back-filled answers) and
find and verify (times compared as instants) all read and write it through these functions;
this module imports nothing of haul, so every layer may use it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_time(value: str) -> datetime:
    """A timestamp as an aware datetime: the tracker's `2024-01-01T10:00:00.000+0000`, or any
    other ISO 8601 form (`Z`, `+00:00`, no fraction); one without a zone is taken as UTC.

    ValueError for anything else.
    """
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    """An instant in the tracker's format (UTC, milliseconds)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


def tracker_time(value: Any) -> str:
    """A timestamp written elsewhere (a form's answer: any ISO 8601 form, no zone taken as
    UTC) in the tracker's format."""
    return format_time(parse_time(str(value).replace("Z", "+00:00")))


def same_time(left: str | None, right: str | None) -> bool:
    """Two timestamps name the same instant (written in any zone)."""
    if not left or not right:
        return False
    try:
        return parse_time(left) == parse_time(right)
    except ValueError:
        return left == right


def instant(value: Any) -> str | None:
    """A time as one spelling of its instant (None stays None), for comparing times."""
    if not value:
        return None
    try:
        return parse_time(str(value)).isoformat()
    except ValueError:
        return str(value)
