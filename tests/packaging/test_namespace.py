"""haul installs under one namespace: no generic top-level module such as `state` or `sandbox`."""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
from pathlib import Path

import pytest

GENERIC = ("connectors", "state", "pipelines", "sandbox", "orchestrate")


@pytest.mark.parametrize("name", GENERIC)
def test_generic_names_are_not_importable_outside_the_checkout(name: str, tmp_path: Path) -> None:
    """Run from elsewhere, `import state` fails while `import haul.state` works."""
    bare = subprocess.run(
        [sys.executable, "-c", f"import {name}"], cwd=tmp_path, capture_output=True, text=True
    )
    assert bare.returncode != 0
    assert f"No module named '{name}'" in bare.stderr
    namespaced = subprocess.run(
        [sys.executable, "-c", f"import haul.{name}"], cwd=tmp_path, capture_output=True, text=True
    )
    assert namespaced.returncode == 0, namespaced.stderr


def test_the_console_script_runs_outside_the_checkout(tmp_path: Path) -> None:
    """The installed `haul` entry point resolves to the namespaced CLI."""
    haul = Path(sys.executable).with_name("haul")
    reply = subprocess.run([haul, "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert reply.returncode == 0, reply.stderr
    assert "Commands:" in reply.stdout


def test_starting_the_cli_leaves_pandas_and_numpy_unloaded(tmp_path: Path) -> None:
    """sqlite-utils would load both at import (0.6 s, 80 MB); haul never needs them, and they
    still import afterwards."""
    script = (
        "import sys, haul.pipelines.cli, sqlite_utils\n"
        "print(sorted(m for m in ('pandas', 'numpy') if m in sys.modules))\n"
        "import pandas\n"
        "db = sqlite_utils.Database(memory=True)\n"
        "db['t'].insert({'id': 1, 'at': pandas.Timestamp('2020-01-01').isoformat()})\n"
        "print(db.execute('select at from t').fetchone()[0])\n"
    )
    reply = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    assert reply.returncode == 0, reply.stderr
    assert reply.stdout.splitlines() == ["[]", "2020-01-01T00:00:00"]


EXPORT_ONLY = ("duckdb", "pyarrow", "openpyxl", "holidays", "pandas", "numpy")


@pytest.mark.fast
def test_starting_the_cli_leaves_the_export_libraries_unloaded(tmp_path: Path) -> None:
    """Every command starts by importing the CLI: what only the export draws its tables and
    pages with (duckdb alone was 40 ms of CPU a process) is imported where the export uses it."""
    script = (
        "import sys, haul.pipelines.cli\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:])))\n"
    )
    reply = subprocess.run(
        [sys.executable, "-c", script, *EXPORT_ONLY], cwd=tmp_path, capture_output=True, text=True
    )
    assert reply.returncode == 0, reply.stderr
    assert reply.stdout.strip() == "[]"


def test_no_bench_script_hides_an_installed_module() -> None:
    """A bench runs with bench/ first on sys.path: a script named like a module the
    environment installs (bench/requests.py did) is what `import requests` then finds, and
    the official SDK the tracker bench compares against broke on it."""
    root = Path(__file__).parents[2]
    bench = root / "bench"
    # the checkout's own folders install as haul.*: a bench never imports them bare
    ours = {bench.resolve(), root.resolve()}
    elsewhere = [entry for entry in sys.path if Path(entry or ".").resolve() not in ours]
    hidden = []
    for script in sorted(bench.glob("*.py")):
        finder = importlib.machinery.PathFinder.find_spec(script.stem, elsewhere)
        if finder is not None or script.stem in sys.builtin_module_names:
            hidden.append(script.name)
    assert hidden == []
