"""The docs site's pages as the tests read them: their code blocks, and each page as the site
builds it (its generated parts filled in by `docs/hooks.py`, the hook mkdocs runs)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# an HTML comment on the line before a ```toml fence: the block is only part of a config
PARTIAL = "<!-- partial config"


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # where its fence opens, 1-based
    language: str
    body: str
    partial: bool  # marked as only part of a config

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """Every Markdown page of the docs, and the README."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path, language: str | None = None) -> list[Block]:
    """The fenced blocks of `page` (of one language when given), in order; indented fences
    (inside a list item) are dedented."""
    found = []
    lines = page.read_text(encoding="utf-8").split("\n")
    index = 0
    while index < len(lines):
        opening = re.match(r"^(\s*)```(\w*)\s*$", lines[index])
        if not opening:
            index += 1
            continue
        indent, lang = opening.group(1), opening.group(2)
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        body = "\n".join(line.removeprefix(indent) for line in lines[index + 1 : end]) + "\n"
        partial = index > 0 and lines[index - 1].strip().startswith(PARTIAL)
        if language is None or lang == language:
            found.append(Block(page, index + 1, lang, body, partial))
        index = end + 1
    return found


def doc(path: str) -> Path:
    """A page of the docs by its path under docs/ (`how-to/exports.md`)."""
    return DOCS / path


def hooks() -> ModuleType:
    """docs/hooks.py, the module mkdocs loads from mkdocs.yml's `hooks:`."""
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def built_markdown(path: str) -> str:
    """The Markdown of a page as the site builds it: its generated parts filled in."""
    return str(hooks().filled(doc(path).read_text(encoding="utf-8"), path))
