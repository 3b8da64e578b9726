"""The tracker's time format, written once (`pipelines/tracker/timefmt.py`): what the scroll's
watermark, the import bodies, the back-fill and verify all read and write."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from haul.pipelines.tracker.timefmt import format_time, instant, parse_time, tracker_time

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_an_instant_is_written_in_utc_with_milliseconds_and_read_back() -> None:
    """Any zone in, the tracker's `...T08:00:00.123+0000` out, and the same instant back."""
    moment = datetime(2024, 1, 1, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    written = format_time(moment)
    assert written == "2024-01-01T08:00:00.123+0000"
    assert parse_time(written) == moment.replace(microsecond=123000)


@pytest.mark.parametrize(
    ("answer", "tracker"),
    [
        ("2023-05-01T09:30:00Z", "2023-05-01T09:30:00.000+0000"),
        ("2023-05-01T09:30:00+03:00", "2023-05-01T06:30:00.000+0000"),
        ("2023-05-01T09:30:00", "2023-05-01T09:30:00.000+0000"),  # no zone: UTC
    ],
)
def test_a_form_answers_time_becomes_the_trackers(answer: str, tracker: str) -> None:
    assert tracker_time(answer) == tracker


def test_utc_times_compare_in_any_spelling_and_the_unreadable_as_written() -> None:
    """The tracker's `+0000`, `Z` and `+00:00` spell one instant."""
    assert instant("2024-01-01T10:00:00.000+0000") == instant("2024-01-01T10:00:00Z")
    assert instant("2024-01-01T10:00:00Z") == instant("2024-01-01T10:00:00+00:00")
    assert instant("yesterday") == "yesterday"
    assert instant(None) is None
    assert parse_time("2024-01-01T10:00:00").tzinfo == UTC
