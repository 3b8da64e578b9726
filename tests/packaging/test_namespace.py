"""haul installs under one namespace: no generic top-level module such as `state` or `sandbox`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GENERIC = ("connectors", "state", "pipelines", "sandbox")


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
