"""The working calendar business seconds count: working days and hours in one time zone,
less the days off (a country's public holidays through the `holidays` library, or a file of
dates)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from haul.pipelines.config.types import WEEKDAYS, work_hours_span

SECOND = timedelta(seconds=1)


class DaysOff:
    """Dates not worked: a country's public holidays (fetched a year at a time, as asked
    for) and any dates given."""

    def __init__(self, country: str | None = None, dates: Iterable[date] = ()) -> None:
        self.country = country
        self._given = frozenset(dates)
        self._years: dict[int, tuple[date, ...]] = {}

    def __bool__(self) -> bool:
        return self.country is not None or bool(self._given)

    def _year(self, year: int) -> tuple[date, ...]:
        if year not in self._years:
            days = set(day for day in self._given if day.year == year)
            if self.country is not None:
                import holidays  # only when a country is configured

                from haul.pipelines.config.model import split_country

                country, subdivision = split_country(self.country)
                days |= set(holidays.country_holidays(country, subdiv=subdivision, years=year))
            self._years[year] = tuple(sorted(days))
        return self._years[year]

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and day in self._year(day.year)

    def between(self, first: date, last: date) -> list[date]:
        """The days off in [first, last], in order."""
        found: list[date] = []
        for year in range(first.year, last.year + 1):
            days = self._year(year)
            found += days[bisect.bisect_left(days, first) : bisect.bisect_right(days, last)]
        return found

    @classmethod
    def read(cls, country: str | None, path: Path | None) -> DaysOff:
        """The days off of `[model] holidays` and `holidays_file` (one YYYY-MM-DD a line, `#`
        comments); ValueError naming the file and line of a date it cannot read."""
        dates = []
        if path is not None:
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                text = line.split("#", 1)[0].strip()
                if not text:
                    continue
                try:
                    dates.append(date.fromisoformat(text))
                except ValueError:
                    raise ValueError(
                        f"{path}, line {number}: {text!r} is not a date (YYYY-MM-DD)"
                    ) from None
        return cls(country, dates)


@dataclass(frozen=True)
class WorkCalendar:
    """Working days and hours in one time zone, less days off: what business seconds count."""

    days: frozenset[int]  # date.weekday(): Monday is 0
    start: time
    end: time  # time.max: the end of the day
    zone: ZoneInfo
    off: DaysOff = field(default_factory=DaysOff)

    @classmethod
    def of(
        cls,
        work_days: Iterable[str],
        work_hours: str,
        timezone: str,
        off: DaysOff | None = None,
    ) -> WorkCalendar:
        """The calendar of the config's keys (`mon`..., `09:00-18:00`, `UTC`), less `off`."""
        start, end = work_hours_span(work_hours)
        days = frozenset(WEEKDAYS.index(day) for day in work_days)
        return cls(days, start, end, ZoneInfo(timezone), off or DaysOff())

    def local_day(self, moment: datetime) -> date:
        """The calendar day `moment` falls on in this zone."""
        return moment.astimezone(self.zone).date()

    def day_start(self, day: date) -> datetime:
        """The first instant of `day` in this zone, in UTC."""
        return datetime.combine(day, time(0), self.zone).astimezone(UTC)

    def _window(self, day: date) -> tuple[datetime, datetime]:
        opening = datetime.combine(day, self.start, self.zone).astimezone(UTC)
        if self.end == time.max:
            return opening, self.day_start(day + timedelta(days=1))
        return opening, datetime.combine(day, self.end, self.zone).astimezone(UTC)

    def works(self, day: date) -> bool:
        """Whether `day` is a working day: its weekday worked, and not a day off."""
        return day.weekday() in self.days and day not in self.off

    def business_seconds(self, start: datetime, end: datetime) -> int:
        """Whole working seconds in [start, end): the working hours of working days, local
        time. Whole weeks count as a week's hours less their days off (a summer-time switch
        inside working hours is then off by its hour)."""
        if end <= start:
            return 0
        total = timedelta(0)
        first, last = self.local_day(start), self.local_day(end)
        day = first
        while day <= last:
            # whole weeks strictly between the first and the last day: a week's hours each
            if day > first and day.weekday() == 0 and (weeks := (last - day).days // 7) > 0:
                after = day + timedelta(weeks=weeks)
                total += weeks * self._week() - self._off_hours(day, after - timedelta(days=1))
                day = after
                continue
            if self.works(day):
                opening, closing = self._window(day)
                overlap = min(end, closing) - max(start, opening)
                total += max(overlap, timedelta(0))
            day += timedelta(days=1)
        return total // SECOND

    def _day_hours(self) -> timedelta:
        day = datetime.combine(date(2001, 1, 1), time(0))  # any day: naive, no switch
        end = day + timedelta(days=1) if self.end == time.max else datetime.combine(day, self.end)
        return end - datetime.combine(day, self.start)

    def _week(self) -> timedelta:
        return len(self.days) * self._day_hours()

    def _off_hours(self, first: date, last: date) -> timedelta:
        """The working hours the days off in [first, last] would have had."""
        if not self.off:
            return timedelta(0)
        off = [day for day in self.off.between(first, last) if day.weekday() in self.days]
        return len(off) * self._day_hours()
