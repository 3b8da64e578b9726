"""The commands a docs page gives, read from its marked code blocks, so that a test runs what
the page says and the two cannot drift apart. A block is marked by an HTML comment on the line
before its fence (the site shows nothing of it)::

    <!-- tested as: dagster -->
    ```bash
    dagster asset materialize -f definitions.py --select haul/first
    ```

`block(page, "dagster")` is that block's text; `commands(page, "dagster")` its lines as argv
lists (comments and blank lines left out); `exported(page, "dagster environment")` the names
its `export NAME=value` lines set (a test sets its own values: its temporary folders)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.helpers.docs_pages import blocks, doc

ORCHESTRATORS = doc("how-to/orchestrators.md")
MARK = re.compile(r"^<!-- tested as: (?P<name>[^>]+?) -->$")


def block(page: Path, name: str) -> str:
    """The text of the block marked `name`; AssertionError when the page has none."""
    lines = page.read_text(encoding="utf-8").split("\n")
    marked = {}
    for found in blocks(page):
        mark = MARK.match(lines[found.line - 2].strip()) if found.line > 1 else None
        if mark:
            marked[mark["name"]] = found.body
    assert name in marked, f"{page} has no block marked {name!r} (it has {list(marked)})"
    return marked[name]


def commands(page: Path, name: str) -> list[list[str]]:
    """The block's command lines, each split as a shell would (no expansion)."""
    lines = (line.strip() for line in block(page, name).splitlines())
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def exported(page: Path, name: str) -> set[str]:
    """The names the block's `export NAME=value` lines set."""
    return {argv[1].split("=", 1)[0] for argv in commands(page, name) if argv[0] == "export"}
