"""pytest imports test modules by basename (no `__init__.py` under tests/): two modules with one
name in different folders stop the collection of the whole suite. This names them first."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_basename() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        by_name[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    shared.pop("conftest.py", None)  # conftests are per folder by design
    assert shared == {}, f"rename one of each: {shared}"
