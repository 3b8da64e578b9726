"""The tracker sandbox keeps the shape its package docstring draws: a few modules at the top,
one folder per part, no folder past ten files, each folder saying what it holds, and folders
importing only the parts before them, so no two parts import each other.

Read from the source files (nothing of the sandbox is imported or started here).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TRACKER = Path(__file__).resolve().parents[2] / "sandbox" / "tracker"
# the parts in the order they may import each other: a folder imports only those before it
ORDER = ("api", "search", "workflows", "structure", "issues", "planning", "entities", "seed")


def folders() -> list[Path]:
    return sorted(p for p in TRACKER.iterdir() if p.is_dir() and p.name != "__pycache__")


def parts_imported(path: Path) -> set[str]:
    """The tracker folders `path` imports from (absolute imports, in functions too)."""
    prefix = ("haul", "sandbox", "tracker")
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            dotted = tuple(name.split("."))
            if dotted[:3] == prefix and len(dotted) > 3 and dotted[3] in ORDER:
                found.add(dotted[3])
    return found


@pytest.mark.fast
def test_the_top_holds_at_most_eight_files_and_folders_at_most_ten() -> None:
    """A newcomer sees the parts first; no part is two rooms."""
    top = [p.name for p in TRACKER.glob("*.py")]
    crowded = {f.name: n for f in folders() if (n := len(list(f.glob("*.py")))) > 10}
    assert len(top) <= 8, top
    assert crowded == {}


@pytest.mark.fast
def test_every_folder_is_a_known_part_that_says_what_it_holds() -> None:
    """Each folder is in the import order and its ``__init__`` has a docstring."""
    assert [f.name for f in folders()] == sorted(ORDER)
    silent = [
        f.name
        for f in folders()
        if not ast.get_docstring(ast.parse((f / "__init__.py").read_text(encoding="utf-8")))
    ]
    assert silent == []


@pytest.mark.fast
def test_a_folder_imports_only_the_parts_before_it() -> None:
    """api <- search <- workflows <- structure <- issues <- planning <- entities <- seed: no circle."""
    backwards = {}
    for folder in folders():
        allowed = set(ORDER[: ORDER.index(folder.name) + 1])
        for path in sorted(folder.glob("*.py")):
            if wrong := parts_imported(path) - allowed:
                backwards[f"{folder.name}/{path.name}"] = sorted(wrong)
    assert backwards == {}
