"""`haul demo` as a person reads it, stdout and stderr in the order they came: its verdict is
its last line, and its summary names the requests of the services it read and of those it
loaded into, never a target it loaded nothing into (the forms' answers go to the tracker and
the wiki)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.helpers.cli_fixtures import HAUL, haul_env

TRAFFIC = re.compile(r"^(\w+) (source|target): \d+ requests", re.M)


def test_the_demo_ends_on_its_verdict_and_names_only_the_targets_it_loaded(
    tmp_path: Path,
) -> None:
    """A tiny demo exits 0; its last line is the verdict; its summary gives the requests of
    the three sources and of the tracker's and the wiki's targets, not of a forms target."""
    ran = subprocess.run(
        [HAUL, "demo", "--size", "tiny", "--workdir", tmp_path / "demo"],
        env=haul_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout[-4000:]
    lines = [line for line in ran.stdout.splitlines() if line.strip()]
    assert lines[-1] == "haul demo: ok, verified", lines[-8:]
    assert set(TRAFFIC.findall(ran.stdout)) == {
        ("forms", "source"),
        ("tracker", "source"),
        ("wiki", "source"),
        ("tracker", "target"),
        ("wiki", "target"),
    }
