"""A config file as a person reads it: each table under comments that say what it is for, a
note beside a setting that needs one, a hint written as a commented line; values in TOML.

`haul init` and the sandbox's config writer (`config.sandbox`) write their files with it; what
they write is then read back by `load_config`, so a file that would not load is never left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NOTE_COLUMN = 32  # where a setting's note starts, as in the README's reference


@dataclass(frozen=True)
class Setting:
    """`key = value`, with a note beside it; a hint is written commented out."""

    key: str
    value: Any
    note: str = ""
    hint: bool = False

    def lines(self) -> list[str]:
        """The setting's line, its note beside it, or above it when the value is long."""
        text = f"{'# ' if self.hint else ''}{self.key} = {toml_value(self.value)}"
        if not self.note:
            return [text]
        if len(text) < NOTE_COLUMN - 1:
            return [f"{text.ljust(NOTE_COLUMN - 1)} # {self.note}"]
        return [f"# {self.note}", text]


@dataclass(frozen=True)
class Table:
    """One `[name]` table: comment lines above it, its settings, comment lines after them."""

    name: str
    about: Sequence[str]
    settings: Sequence[Setting]
    after: Sequence[str] = ()

    def lines(self) -> list[str]:
        lines = [f"# {line}".rstrip() for line in self.about]
        lines.append(f"[{self.name}]")
        lines += [line for setting in self.settings for line in setting.lines()]
        lines += [f"# {line}".rstrip() for line in self.after]
        return lines


def commented_toml(header: Sequence[str], tables: Sequence[Table]) -> str:
    """The file's text: the header's comment lines, then each table, a blank line between."""
    blocks = [[f"# {line}".rstrip() for line in header], *(table.lines() for table in tables)]
    return "\n\n".join("\n".join(block) for block in blocks if block) + "\n"


def toml_value(value: Any) -> str:
    """A value as TOML writes it: a string quoted and escaped, a list, a table inline."""
    if isinstance(value, Mapping):
        return toml_table(value)
    if isinstance(value, list | tuple):
        return toml_list(list(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)  # JSON's escapes are TOML's too


def toml_list(values: list[Any]) -> str:
    """`["a", "b"]`."""
    return "[" + ", ".join(toml_value(value) for value in values) + "]"


def toml_table(mapping: Mapping[str, Any]) -> str:
    """`{ "a" = "b" }`: an inline table."""
    pairs = ", ".join(f"{toml_value(key)} = {toml_value(value)}" for key, value in mapping.items())
    return "{ " + pairs + " }"
