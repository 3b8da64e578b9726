"""The commands a docs page gives, read from its titled code blocks, so that a test runs what
the page says and the two cannot drift apart::

    ```bash title="dagster"
    dagster asset materialize -f definitions.py --select haul/first
    ```

`block(page, "dagster")` is that block's text; `commands(page, "dagster")` its lines as argv
lists (comments and blank lines left out); `exported(page, "dagster environment")` the names
its `export NAME=value` lines set (a test sets its own values: its temporary folders)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
ORCHESTRATORS = DOCS / "how-to" / "orchestrators.md"
FENCE = re.compile(r'^```\w*\s+title="(?P<title>[^"]+)"\n(?P<body>.*?)^```$', re.M | re.S)


def block(page: Path, title: str) -> str:
    """The text of the code block titled `title`; AssertionError when the page has none."""
    blocks = {m["title"]: m["body"] for m in FENCE.finditer(page.read_text(encoding="utf-8"))}
    assert title in blocks, f"{page} has no code block titled {title!r} (it has {list(blocks)})"
    return blocks[title]


def commands(page: Path, title: str) -> list[list[str]]:
    """The block's command lines, each split as a shell would (no expansion)."""
    lines = (line.strip() for line in block(page, title).splitlines())
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def exported(page: Path, title: str) -> set[str]:
    """The names the block's `export NAME=value` lines set."""
    return {argv[1].split("=", 1)[0] for argv in commands(page, title) if argv[0] == "export"}
