"""Column helpers for the conventions every export table follows.

- ids are strings (some services' ids are hex, some are numbers too long for a spreadsheet);
- instants are UTC timestamps; calendar dates are dates;
- a person is two columns, `<prefix>_login` and `<prefix>_name` (the display name);
- a dictionary value is two columns, `<prefix>_key` and `<prefix>_name`;
- an ISO-8601 duration is whole seconds (`<name>_s`);
- JSON only where nothing flat fits (a list of tags, a changelog entry's changes).

Each helper takes the column's name, what it means (for `haul export --describe`), and the
path to its value in the item's JSON (`"queue", "key"`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haul.pipelines.export.tables import Column, ColumnType, Item
from haul.pipelines.export.values import parse_duration_seconds

LoginOf = Callable[[Item, dict[str, Any]], Any]


def value(name: str, kind: ColumnType, doc: str, *path: str) -> Column:
    """The value at `path`, as a `kind` column."""
    return Column(name, kind, doc, lambda item: item.get(*path))


def identifier(name: str, doc: str, *path: str) -> Column:
    """An id, always a string column."""
    return value(name, "string", doc, *path)


def timestamp(name: str, doc: str, *path: str) -> Column:
    """An instant, as a UTC timestamp."""
    return value(name, "timestamp", doc, *path)


def day(name: str, doc: str, *path: str) -> Column:
    """A calendar date (`2024-01-31`)."""
    return value(name, "date", doc, *path)


def seconds(name: str, doc: str, *path: str) -> Column:
    """An ISO-8601 duration (`P1DT2H`, `PT30M`) in whole seconds."""
    return Column(name, "int", doc, lambda item: parse_duration_seconds(item.get(*path)))


def as_json(name: str, doc: str, *path: str) -> Column:
    """Nested data kept whole, as a JSON string."""
    return value(name, "json", doc, *path)


def parent(name: str, doc: str) -> Column:
    """The id of the staged record's parent (the issue of a comment, the page of a file)."""
    return Column(name, "string", doc, lambda item: item.record.parent)


def blob_sha256(name: str = "sha256") -> Column:
    """The sha256 of the bytes haul stored for the record (they stay in the blob store)."""
    return Column(
        name,
        "string",
        "sha256 of the bytes in the staging store's blob folder (empty: not downloaded)",
        lambda item: item.record.blob,
    )


def own_login(item: Item, ref: dict[str, Any]) -> Any:
    """The login a reference to a person carries itself, if any."""
    return ref.get("login") or ref.get("username")


def user(prefix: str, doc: str, *path: str, login: LoginOf = own_login) -> tuple[Column, Column]:
    """A person at `path`: `<prefix>_login` (through `login`, given the item and the
    reference) and `<prefix>_name` (the display name the service showed)."""

    def ref_of(item: Item) -> dict[str, Any] | None:
        ref = item.get(*path)
        return ref if isinstance(ref, dict) else None

    def read_login(item: Item) -> Any:
        ref = ref_of(item)
        return None if ref is None else login(item, ref)

    def read_name(item: Item) -> Any:
        ref = ref_of(item)
        return None if ref is None else display_text(ref.get("display") or ref.get("name"))

    return (
        Column(f"{prefix}_login", "string", f"{doc}: login", read_login),
        Column(f"{prefix}_name", "string", f"{doc}: display name", read_name),
    )


def dictionary(prefix: str, doc: str, *path: str) -> tuple[Column, Column]:
    """A dictionary value at `path` (a status, a type): `<prefix>_key` and `<prefix>_name`."""
    return (
        Column(f"{prefix}_key", "string", f"{doc}: key", lambda item: item.get(*path, "key")),
        Column(
            f"{prefix}_name",
            "string",
            f"{doc}: name",
            lambda item: display_text(item.get(*path, "display") or item.get(*path, "name")),
        ),
    )


def display_text(value: Any) -> str | None:
    """A name as the service gave it: a string, or a localised one (`{"en": ..., "ru": ...}`)
    read in English, else in its first language."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and value:
        chosen = value.get("en") or next(iter(value.values()))
        return None if chosen is None else str(chosen)
    return str(value)
