"""The configuration reference, made from the config model: every key of every section with its
type, default and description, as Markdown.

The docs site puts it into its configuration page when it is built (`docs/hooks.py`), so the
page says what the model accepts and cannot drift from it:

    .venv/bin/python -m haul.pipelines.config.reference    # print it
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from haul.pipelines.config import Config
from haul.pipelines.config.types import (
    Duration,
    Rate,
    Slug,
    SurveyId,
    Template,
    TimeZoneName,
    Weekday,
    WorkHours,
)

# the config's own value types, by what they accept (their base type says too little: a
# duration is a float to the model, "15m" to the person writing the file)
NAMED_TYPES: tuple[tuple[Any, str], ...] = (
    (Duration, 'duration ("30s", "15m", "2h"; a bare number is seconds)'),
    (Rate, 'requests per second, or "auto"'),
    (Slug, "wiki slug"),
    (SurveyId, "survey id (24 hex digits)"),
    (Template, "template ({question slugs})"),
    (Weekday, "weekday (mon..sun)"),
    (WorkHours, 'hours ("09:00-18:00")'),
    (TimeZoneName, 'IANA time zone ("Europe/Berlin")'),
)
BASE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
BASE_NAMES[date] = "date (2024-01-01)"

# which sections share one model, and how the file spells a section that is a list of tables
SECTION_TITLES = {"source": "[source] and [target]", "backfill": "[[backfill]]"}
SAME_AS = {"target": "source"}


def reference_markdown() -> str:
    """Every section of the file, in the model's order, as a table of its keys."""
    parts = []
    for name, field in Config.model_fields.items():
        if name in SAME_AS:
            continue
        section = section_model(field.annotation)
        title = SECTION_TITLES.get(name, f"[{name}]")
        required = "required" if field.is_required() else "optional"
        doc = " ".join((section.__doc__ or "").split())
        parts += [f"## {title}", "", f"{doc} ({required})", "", *section_table(section), ""]
    return "\n".join(parts)


def section_table(section: type[BaseModel]) -> list[str]:
    """The Markdown table of one section's keys."""
    rows = ["| key | type | default | what it does |", "|---|---|---|---|"]
    for key, field in config_keys(section):
        cells = [f"`{key}`", type_name(field), default_text(field), field.description or ""]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return rows


def config_keys(section: type[BaseModel]) -> Iterator[tuple[str, FieldInfo]]:
    """The keys a file may give in `section` (a field the loader fills in is none)."""
    for key, field in section.model_fields.items():
        if not field.exclude:
            yield key, field


def section_model(annotation: Any) -> type[BaseModel]:
    """The model of a section, through `X | None` and `tuple[X, ...]`."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    raise TypeError(f"{annotation!r} is not a section")


def type_name(field: FieldInfo) -> str:
    """What a key takes, in words: its type with the model's constraints."""
    annotation: Any = field.annotation
    if field.metadata:  # the model keeps a top-level Annotated's metadata apart
        annotation = Annotated[(annotation, *field.metadata)]
    return _spell(annotation)


def _spell(annotation: Any) -> str:
    named = _named(annotation)
    if named:
        return named
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        base, *metadata = args
        return ", ".join([_spell(base), *filter(None, map(_constraint, metadata))])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_spell(arg) for arg in args if arg is not type(None))
    if origin is Literal:
        return " or ".join(f'"{arg}"' if isinstance(arg, str) else str(arg) for arg in args)
    if origin in (tuple, list):
        return f"list of {_spell(args[0])}"
    if origin is dict:
        return f"table of {_spell(args[0])} = {_spell(args[1])}"
    return BASE_NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _named(annotation: Any) -> str | None:
    """The name of one of the config's own types, whatever constraints a key adds to it."""
    if typing.get_origin(annotation) is not Annotated:
        return None
    base, *metadata = typing.get_args(annotation)
    for alias, name in NAMED_TYPES:
        alias_base, *alias_metadata = typing.get_args(alias)
        if alias_base == base and all(item in metadata for item in alias_metadata):
            rest = [_constraint(item) for item in metadata if item not in alias_metadata]
            return ", ".join([name, *filter(None, rest)])
    return None


def _constraint(item: Any) -> str | None:
    bounds = (
        (annotated_types.Gt, "gt", ">"),
        (annotated_types.Ge, "ge", "≥"),
        (annotated_types.Lt, "lt", "<"),
        (annotated_types.Le, "le", "≤"),
        (annotated_types.MinLen, "min_length", "at least"),
    )
    for kind, attribute, word in bounds:
        if isinstance(item, kind):
            return f"{word} {getattr(item, attribute)}"
    return None


def default_text(field: FieldInfo) -> str:
    """The default as the file would write it; "required" when there is none."""
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "not set"
    if _is_duration(field):
        return f"`{toml_text(duration_text(value))}`"
    return f"`{toml_text(value)}`"


def _is_duration(field: FieldInfo) -> bool:
    base, *validators = typing.get_args(Duration)
    return field.annotation is base and all(item in field.metadata for item in validators)


def duration_text(seconds: float) -> str:
    """900 -> "15m": a duration's default as a person writes it."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def toml_text(value: Any) -> str:
    """A default value written as TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | Path):
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(toml_text(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{key} = {toml_text(item)}" for key, item in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is PydanticUndefined:  # pragma: no cover: is_required() answered first
        return "required"
    return str(value)


if __name__ == "__main__":
    print(reference_markdown())
