"""The service's own clock, as its replies tell it (the `Date` header).

A watermark must never move past "now" at the source: an issue stamped in the future (a clock
that ran ahead, then was corrected) would otherwise carry it there, and every later change
would be skipped. The local clock cannot say what "now" is over there (hosts drift), so each
reply's `Date` is kept with the local monotonic instant it came at; `now()` is that date plus
the time gone since. `Date` has whole seconds and is stamped before the reply leaves, so the
estimate errs early, never late: a watermark capped by it is read again, never skipped.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class ServerClock:
    """The last `Date` a service sent, and when it came (see the module docstring)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._raw: str | None = None
        self._date: datetime | None = None
        self._at = 0.0

    def observe(self, date_header: str | None) -> None:
        """A reply came with this `Date` (None or unreadable: nothing learnt)."""
        # the same second as the last reply: no parse, and its first sighting is kept (the
        # earliest local instant of that second, so the estimate stays early)
        if date_header is None or date_header == self._raw:
            return
        date = _parse(date_header)
        if date is not None:
            self._raw, self._date, self._at = date_header, date, self._monotonic()

    def now(self) -> datetime | None:
        """The service's "now", or None when no reply has told it yet."""
        if self._date is None:
            return None
        return self._date + timedelta(seconds=self._monotonic() - self._at)


def _parse(value: str) -> datetime | None:
    try:
        date = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return date if date.tzinfo is not None else date.replace(tzinfo=UTC)
