"""The suite's layout rules: every test folder is a package (so two modules or conftests of one
name in two folders never meet, and any order of folders collects alike); what tests share
lives in `tests.helpers`, never in a conftest or another test module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

TESTS = Path(__file__).resolve().parents[1]


def python_files() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts)


def imported_modules(path: Path) -> list[str]:
    """Every module `path` imports, as written (`from x import y` gives x; relative ones keep
    their dots)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append("." * node.level + (node.module or ""))
    return found


def is_test_module_or_conftest(module: str) -> bool:
    last = module.rpartition(".")[2]
    return last == "conftest" or last.startswith("test_")


def test_every_test_folder_is_a_package() -> None:
    folders = {path.parent for path in python_files()}
    missing = [
        str(f.relative_to(TESTS.parent)) for f in folders if not (f / "__init__.py").exists()
    ]
    assert missing == [], f"add an __init__.py to: {sorted(missing)}"


def test_no_module_of_the_suite_imports_a_conftest_or_a_test_module() -> None:
    """A helper two tests share goes to tests/helpers/ (a conftest holds fixtures only)."""
    offenders = {
        str(path.relative_to(TESTS)): wrong
        for path in python_files()
        if (wrong := [m for m in imported_modules(path) if is_test_module_or_conftest(m)])
    }
    assert offenders == {}, f"move what they import to tests/helpers/: {offenders}"


def test_the_suite_imports_its_helpers_by_their_package_name() -> None:
    """`from tests.helpers.x import y`, not a bare `x` found through a folder put on sys.path:
    a bare name resolves only when that folder happens to be on the path."""
    helpers = {path.stem for path in (TESTS / "helpers").glob("*.py")} - {"__init__"}
    bare = {
        str(path.relative_to(TESTS)): found
        for path in python_files()
        if (found := [m for m in imported_modules(path) if m.partition(".")[0] in helpers])
    }
    assert bare == {}, f"import them as tests.helpers.<name>: {bare}"


# the sandbox started or imported, a test or fixture taking a `sandbox` fixture, haul run
SANDBOX_OR_PROCESS = re.compile(
    r"start_sandbox|haul\.sandbox|run_haul|start_haul|def \w+\([^)]*\bsandbox\b"
)


def test_a_module_marked_fast_starts_no_sandbox_and_no_haul_process() -> None:
    """`make test-fast` runs the modules marked fast: they stay out of the sandbox."""
    others = [p for p in python_files() if p != Path(__file__).resolve()]  # this one names them
    fast = [p for p in others if "pytestmark = pytest.mark.fast" in p.read_text("utf-8")]
    assert fast, "no module is marked fast: make test-fast would run nothing"
    offenders = {
        str(path.relative_to(TESTS)): sorted(set(found))
        for path in fast
        if (found := SANDBOX_OR_PROCESS.findall(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, f"unmark them or move those tests out: {offenders}"
