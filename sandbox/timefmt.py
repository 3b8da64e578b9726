"""Wire time formats of the tracker, over integer milliseconds since the epoch (UTC).

The sandbox keeps every instant as an ``int`` of milliseconds: cheap to compare and sort for
100 000 issues.  On the wire an instant is ``YYYY-MM-DDThh:mm:ss.sss+0000``; clients may send
any UTC offset, a space instead of ``T``, no fraction, or a bare date.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

_INSTANT = re.compile(
    r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?"
    r"(Z|[+-]\d{2}:?\d{2})?)?$"
)
_DURATION = re.compile(
    r"^P(?!$)(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def now_ms() -> int:
    """The current instant in milliseconds."""
    return time.time_ns() // 1_000_000


def format_ms(ms: int) -> str:
    """``1704067200000`` -> ``"2024-01-01T00:00:00.000+0000"``."""
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}+0000"


def format_date(ms: int) -> str:
    """``1704067200000`` -> ``"2024-01-01"``."""
    return (_EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%d")


def parse_instant(text: object) -> int | None:
    """Parse a wire timestamp into milliseconds; ``None`` when it is not one.

    Accepts ``2024-01-01T10:00:00.000+0300``, ``...Z``, ``2024-01-01 10:00:00`` (UTC) and a
    bare ``2024-01-01`` (midnight UTC).
    """
    if not isinstance(text, str):
        return None
    match = _INSTANT.match(text.strip())
    if not match:
        return None
    day, hour, minute, second, fraction, offset = match.groups()
    try:
        moment = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None
    if hour is not None:
        if int(hour) > 23 or int(minute) > 59 or int(second or 0) > 59:
            return None
        moment += timedelta(hours=int(hour), minutes=int(minute), seconds=int(second or 0))
        moment += timedelta(microseconds=int((fraction or "0").ljust(6, "0")))
        moment -= _offset(offset)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _offset(text: str | None) -> timedelta:
    if not text or text == "Z":
        return timedelta(0)
    digits = text[1:].replace(":", "")
    size = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return size if text[0] == "+" else -size


def parse_duration_ms(text: object) -> int | None:
    """Parse an ISO-8601 duration (``P1W``, ``P2DT3H``, ``PT1H30M``) into ms; ``None`` if invalid."""
    if not isinstance(text, str):
        return None
    match = _DURATION.match(text)
    if not match:
        return None
    weeks, days, hours, minutes, seconds = (float(part or 0) for part in match.groups())
    total_seconds = (((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds
    return int(total_seconds * 1000)


def format_duration(ms: int) -> str:
    """Milliseconds as an ISO-8601 duration the way the tracker echoes it: ``PT1H30M``, ``P1D``."""
    minutes_total = ms // 60_000
    days, rest = divmod(minutes_total, 24 * 60)
    hours, minutes = divmod(rest, 60)
    text = "P" + (f"{days}D" if days else "")
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if clock:
        text += "T" + clock
    return text if text != "P" else "PT0M"
