"""A survey's answers as values by question slug, and what back-fill rules make of them.

The service sends an answer's cells positionally, aligned to the page's ``columns``; staged,
an answer is ``{id, created, survey_id, values: {slug: value}}`` where a value is a string, a
list of strings, a list of files, or None when the answer lacks it. Templates name question
slugs (``"{subject} ({email})"``); a template that names a slug the survey does not have is a
config error before any write, listing the survey's slugs.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Values = dict[str, Any]

# question type -> grid column type (anything else: a string column holding text)
GRID_TYPES = {
    "string": "string",
    "integer": "number",
    "boolean": "checkbox",
    "date": "date",
    "enum": "select",
}


def answer_values(columns: Sequence[Mapping[str, Any]], data: Sequence[Any]) -> Values:
    """Positional cells -> {slug: value}; a missing cell is None."""
    values: Values = {}
    for index, column in enumerate(columns):
        cell = data[index] if index < len(data) else None
        slug = str(column.get("slug") or column.get("id"))
        values[slug] = cell.get("value") if isinstance(cell, Mapping) else cell
    return values


def placeholders(template: str) -> list[str]:
    """The slugs a template names, in order."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def unknown_slugs(templates: Iterable[str | None], slugs: Iterable[str]) -> list[str]:
    """The placeholders of `templates` that are not question slugs of the survey."""
    known = set(slugs)
    return sorted({name for t in templates if t for name in placeholders(t)} - known)


def as_text(value: Any) -> str:
    """A value as a person reads it in an issue: lists joined, files by name, None as ''."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(as_text(item) for item in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def render(template: str, values: Values) -> str:
    """A template filled from an answer's values (every placeholder is a known slug)."""
    return template.format_map({slug: as_text(value) for slug, value in values.items()})


def default_description(questions: Sequence[Mapping[str, Any]], values: Values) -> str:
    """Every question and its answer, as a markdown list."""
    lines = []
    for question in questions:
        slug = str(question.get("slug") or question.get("id"))
        label = question.get("label") or slug
        lines.append(f"- **{label}**: {as_text(values.get(slug))}")
    return "\n".join(lines)


def files_of(columns: Sequence[Mapping[str, Any]], values: Values) -> list[dict[str, Any]]:
    """The files an answer carries: each path a files question's value lists, with its name."""
    files = []
    for column in columns:
        if column.get("type") != "files":
            continue
        value = values.get(str(column.get("slug") or column.get("id")))
        for path in value if isinstance(value, list) else [value] if value else []:
            name = str(path).rpartition("/")[2]
            _, underscore, rest = name.partition("_")
            files.append({"path": str(path), "name": rest if underscore and rest else name})
    return files


def grid_column(question: Mapping[str, Any]) -> dict[str, Any]:
    """A question as a grid column: typed after the question, named by its slug."""
    slug = str(question.get("slug") or question.get("id"))
    kind = GRID_TYPES.get(str(question.get("type")), "string")
    column: dict[str, Any] = {
        "slug": slug,
        "title": str(question.get("label") or slug)[:255],
        "type": kind,
        "required": False,
    }
    if kind == "select":
        options = [
            as_text(o.get("label") or o.get("slug") or o.get("id")) for o in _options(question)
        ]
        if not options or question.get("multiple"):
            column["type"] = "string"
        else:
            column["select_options"] = options
    return column


def grid_cell(column: Mapping[str, Any], value: Any) -> Any:
    """An answer's value as a cell of its column's type."""
    if value is None:
        return None
    kind = column.get("type")
    if kind == "number":
        try:
            number = float(str(value))
        except ValueError:
            return None
        return int(number) if number.is_integer() else number
    if kind == "checkbox":
        return value if isinstance(value, bool) else str(value).lower() in ("true", "yes", "1")
    if kind == "date":
        return str(value)[:10]
    return as_text(value)


def _options(question: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = question.get("options") or question.get("items") or []
    return [option if isinstance(option, Mapping) else {"label": option} for option in raw]
