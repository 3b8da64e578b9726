"""Reading the services' values as typed ones: instants, dates, ISO-8601 durations.

Each returns None for a value it cannot read (the cell stays empty) rather than guessing.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

# P1W, P2DT3H, PT30M, PT1.5S, and the tracker's own "P1H" (hours without the T).
_DURATION = re.compile(
    r"^P(?!$)(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T?(?=\d)(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)
_SECONDS = {"weeks": 7 * 86_400, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}


def parse_timestamp(value: object) -> datetime | None:
    """An instant as an aware UTC datetime: `2024-01-01T10:00:00.000+0300`, `...Z`,
    `...+03:00`, or without a zone (taken as UTC); None when it is not one."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_date(value: object) -> date | None:
    """A calendar date from `2024-01-31` (or the date part of an instant); None otherwise."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return date.fromisoformat(text[:10]) if len(text) >= 10 else None
    except ValueError:
        return None


def parse_duration_seconds(value: object) -> int | None:
    """An ISO-8601 duration in whole seconds (rounded): `P1DT2H` is 93 600, `PT30M` 1 800.

    Days are 24 hours and weeks 7 days, as ISO-8601 has them; the tracker's `P1H` (no T) is
    an hour. Years and months have no fixed length: None, as for anything unreadable.
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = _DURATION.match(text)
    if match is None or (match["minutes"] and "T" not in text):  # P1M: a month, not a minute
        return None
    total = sum(float(part) * _SECONDS[name] for name, part in match.groupdict().items() if part)
    return round(total)
