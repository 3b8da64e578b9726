"""The config's `[model]`: the definitions the flow model follows (which statuses start and
finish work, how a reopened issue's cycle counts, the working calendar, how far
`issue_daily` reaches). Every key has the default the model had before it was a setting."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from haul.pipelines.config.types import TimeZoneName, Weekday, WorkHours

STARTED_TYPES = ("inProgress",)
FINISHED_TYPES = ("done", "cancelled")


class Model(BaseModel):
    """How the flow model measures work (`haul export`'s derived tables)."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)

    start_statuses: tuple[str, ...] = Field(
        (),
        description="Status keys whose entry starts work (commits it). When given, they alone "
        "decide; otherwise start_types does.",
    )
    start_types: tuple[str, ...] = Field(
        STARTED_TYPES, description="Status types whose entry starts work (default inProgress)."
    )
    finish_statuses: tuple[str, ...] = Field(
        (),
        description="Status keys that finish work. When given, they alone decide; otherwise "
        "finish_types does.",
    )
    finish_types: tuple[str, ...] = Field(
        FINISHED_TYPES, description="Status types that finish work (default done, cancelled)."
    )
    cycle: Literal["first", "last", "sum"] = Field(
        "first",
        description='How a reopened issue counts: "first" from the first start to the first '
        'finish after it; "last" from the first start to the last finish (the issue finished '
        'now); "sum" the sum of each start-to-finish cycle (time spent finished, or waiting '
        "to restart after a reopen, left out).",
    )
    work_days: tuple[Weekday, ...] | None = Field(
        None, min_length=1, description="Working days (mon..sun); default [export] work_days."
    )
    work_hours: WorkHours | None = Field(
        None, description='Working hours ("09:00-18:00"); default [export] work_hours.'
    )
    timezone: TimeZoneName | None = Field(
        None, description="The zone of days and hours (IANA name); default [export] timezone."
    )
    holidays: str | None = Field(
        None,
        description='A country\'s public holidays, not worked (ISO code, "DE", or with a '
        'subdivision, "US-CA"), through the holidays library.',
    )
    holidays_file: Path | None = Field(
        None,
        description="A text file of dates not worked (one YYYY-MM-DD a line, # comments), "
        "beside or instead of holidays; relative to the config's folder.",
    )
    daily_since: date | int | None = Field(
        None,
        description="issue_daily's first day (default: each issue's creation): a date, or a "
        "number of days before the export day (a nightly export's rolling window).",
    )
    daily_after_end_days: int = Field(
        30,
        ge=0,
        description="issue_daily's days after an issue finished (default a month); 0 stops at "
        "the day it finished.",
    )

    forecast_days: int = Field(
        30,
        gt=0,
        le=3650,
        description="flow_forecast: how many items are finished in this many days.",
    )
    forecast_items: int | None = Field(
        None,
        ge=0,
        description="flow_forecast: when this many items are finished (default: the issues "
        "not finished now).",
    )

    @field_validator("daily_since")
    @classmethod
    def _days_back(cls, value: date | int | None) -> date | int | None:
        if isinstance(value, int) and value < 0:
            raise ValueError("a number of days before the export day is 0 or more")
        return value

    @field_validator("holidays")
    @classmethod
    def _country(cls, value: str | None) -> str | None:
        if value is None:
            return None
        country, subdivision = split_country(value)
        import holidays  # only when a calendar is asked for

        try:
            holidays.country_holidays(country, subdiv=subdivision, years=2000)
        except NotImplementedError:
            raise ValueError(
                f"{value!r} is not a country (or subdivision) the holidays library knows: "
                'give an ISO code such as "DE" or "US-CA"'
            ) from None
        return value


def split_country(value: str) -> tuple[str, str | None]:
    """`DE` -> (DE, None); `US-CA` -> (US, CA)."""
    country, _, subdivision = value.strip().partition("-")
    return country.upper(), subdivision.upper() or None
