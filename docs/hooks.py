"""The docs site's build hook (mkdocs.yml `hooks:`): the reference pages that are made from the
code are filled in when the site is built, never committed, so neither can drift from it.

A page asks for a generated part with a marker line of its own:

    <!-- generated: configuration -->   every key of the config model (its type, default, meaning)
    <!-- generated: tables -->          every export table and its typed columns
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from haul.pipelines.config.reference import reference_markdown
from haul.pipelines.export.command import service_tables
from haul.pipelines.export.describe import describe_markdown
from haul.pipelines.registry import services


def tables_markdown() -> str:
    """Every table of every registered service, as `haul export --describe` prints it, each
    table's name a heading (so the page's contents list the tables)."""
    described = describe_markdown(service_tables(services()))
    return re.sub(r"^\*\*(\S+?)\*\* \((.*?)\): ", r"### `\1`\n\n(\2): ", described, flags=re.M)


GENERATED: dict[str, Callable[[], str]] = {
    "configuration": reference_markdown,
    "tables": tables_markdown,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs' hook: the page's Markdown with its generated parts filled in."""
    return filled(markdown, page.file.src_path)


def filled(markdown: str, where: str) -> str:
    """Replace each `<!-- generated: NAME -->` line with what NAME makes."""
    lines = []
    for line in markdown.split("\n"):
        marker = line.strip()
        if marker.startswith("<!-- generated:"):
            name = marker.removeprefix("<!-- generated:").removesuffix("-->").strip()
            if name not in GENERATED:
                raise ValueError(f"{where}: no generated part named {name!r}")
            line = GENERATED[name]()
        lines.append(line)
    return "\n".join(lines)
