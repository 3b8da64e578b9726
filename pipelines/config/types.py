"""The config's value types (durations, rates, slugs, templates) and its error wording.

pydantic reports a problem as a location and an error type; `describe_errors` turns each
into a dotted key path (`backfill[1].queue`) and a short sentence, naming the valid keys of a
table when one is unknown.
"""

from __future__ import annotations

import re
import string
from datetime import time
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ValidationError

DEFAULT_PROVENANCE = "_Migrated from {source_slug}; written by {author} on {date}._"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: Any) -> float:
    """Seconds from `90`, `"90s"`, `"15m"`, `"1h"`, `"500ms"`, `"1d"`."""
    if isinstance(value, bool):
        raise ValueError("must be a duration such as 90s, 15m or 1h")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration such as 90s, 15m or 1h")
        seconds = float(match[1]) * _UNITS[match[2]]
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    return seconds


def _rate(value: Any) -> float | str:
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError('must be a positive number (requests per second) or "auto"')
    return float(value)


def _slug(value: str) -> str:
    if not value or value != value.strip("/ ") or "//" in value:
        raise ValueError(f"{value!r} is not a slug: no leading or trailing '/', e.g. team/handbook")
    return value


def _survey_id(value: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{24}", value):
        raise ValueError(f"{value!r} is not a survey id (24 hexadecimal digits)")
    return value


def _template(value: str) -> str:
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a template: {exc}") from None
    if any(not name or not name.isidentifier() for name in fields):
        raise ValueError(f"{value!r}: placeholders are question slugs, e.g. {{subject}}")
    return value


def placeholders(template: str) -> list[str]:
    """The `{slug}` names a template uses, in order."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def http_url(value: str, suffix: str | None = None) -> str:
    """An http(s) URL without its trailing slash; `suffix` is the API version it must end in."""
    value = value.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise ValueError("must be an http(s) URL")
    if "@" in urlsplit(value).netloc:  # never echoed: the part before @ is a password
        raise ValueError(
            "must not hold a user name or password (user:...@host): remove them from the "
            "URL; a service's token comes from the variable token_env names"
        )
    if suffix and not value.endswith(suffix):
        raise ValueError(f"must end in {suffix} (the API version)")
    return value


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # date.weekday() order
_HOURS = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def _weekday(value: str) -> str:
    day = value.strip().lower()[:3]
    if day not in WEEKDAYS:
        raise ValueError(f"{value!r} is not a day of the week: one of {', '.join(WEEKDAYS)}")
    return day


def _work_hours(value: str) -> str:
    match = _HOURS.match(value)
    if match is None:
        raise ValueError(f"{value!r} is not a span of hours, e.g. 09:00-18:00")
    start, end = work_hours_span(value)
    if start >= end:
        raise ValueError(f"{value!r}: the day's work must end after it starts, e.g. 09:00-18:00")
    return value.strip().replace(" ", "")


def work_hours_span(value: str) -> tuple[time, time]:
    """The start and end of a `HH:MM-HH:MM` span (`24:00` is the end of the day, as midnight)."""
    match = _HOURS.match(value)
    if match is None:
        raise ValueError(f"{value!r} is not a span of hours, e.g. 09:00-18:00")
    hours = [int(part) for part in match.groups()]
    if hours[2:] == [24, 0]:
        return time(hours[0], hours[1]), time.max
    try:
        return time(hours[0], hours[1]), time(hours[2], hours[3])
    except ValueError:
        raise ValueError(f"{value!r} is not a span of hours, e.g. 09:00-18:00") from None


def _timezone(value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{value!r} is not a time zone name, e.g. UTC or Europe/Berlin") from None
    return value


Duration = Annotated[float, BeforeValidator(parse_duration)]
Rate = Annotated[float | Literal["auto"], BeforeValidator(_rate)]
Slug = Annotated[str, AfterValidator(_slug)]
SurveyId = Annotated[str, AfterValidator(_survey_id)]
Template = Annotated[str, AfterValidator(_template)]
Weekday = Annotated[str, AfterValidator(_weekday)]
WorkHours = Annotated[str, AfterValidator(_work_hours)]
TimeZoneName = Annotated[str, AfterValidator(_timezone)]

_WORDING = {
    "missing": "is required",
    "string_type": "must be a string",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "string_too_short": "must not be empty",
    "too_short": "must not be empty",
    "date_parsing": "must be a date, e.g. 2024-05-01",
    "date_from_datetime_parsing": "must be a date, e.g. 2024-05-01",
}


def describe_errors(error: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    """Each problem as (key path, sentence); unknown keys first (a typo explains the rest)."""
    problems = []
    items = error.errors(include_url=False)
    for item in sorted(items, key=lambda item: item["type"] != "extra_forbidden"):
        where, what = _key_path(item["loc"]), _sentence(item, model)
        if item["type"] == "value_error" and ": " in what and what.split(": ", 1)[0].isidentifier():
            field, what = what.split(": ", 1)  # a table's own check names the key it is about
            where = f"{where}.{field}" if where else field
        problems.append((where or "(file)", what))
    return problems


def _key_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after[_slug(), str]", "literal['all']") or "[" in str(part):
            continue  # a branch of a union or an annotated type, not a key of the file
        else:
            path += f".{part}" if path else str(part)
    return path


def _sentence(item: Any, model: type[BaseModel]) -> str:
    kind = item["type"]
    if kind == "extra_forbidden":
        return f"unknown key (expected one of: {', '.join(_keys_at(item['loc'][:-1], model))})"
    if kind == "missing" and len(item["loc"]) == 1:
        return f"missing section [{item['loc'][0]}]"
    if kind == "literal_error":
        return f"must be one of {item['ctx']['expected']}"
    if kind in ("greater_than", "greater_than_equal", "less_than_equal"):
        bound = {"greater_than": "> ", "greater_than_equal": ">= ", "less_than_equal": "<= "}
        limit = next(iter(item["ctx"].values()))
        return f"must be {bound[kind]}{limit}"
    if kind == "value_error":
        return str(item["msg"]).removeprefix("Value error, ")
    return _WORDING.get(kind, str(item["msg"]))


def _keys_at(loc: tuple[int | str, ...], model: type[BaseModel]) -> list[str]:
    """The keys a table at `loc` may have."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (
            isinstance(current, type) and issubclass(current, BaseModel)
        ):
            continue
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        current = _model_in(field.annotation)
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return []
    return sorted(name for name, field in current.model_fields.items() if not field.exclude)


def _model_in(annotation: Any) -> Any:
    """The model class inside `X | None` or `tuple[X, ...]`, else the annotation itself."""
    for arg in getattr(annotation, "__args__", ()) or ():
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return annotation
