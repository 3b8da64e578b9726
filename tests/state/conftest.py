"""Fixtures for the staging store tests: a real store in a temp folder, and a way to run
store code in another process (for locks and crashes)."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from haul.state import StagingStore

WORKER = Path(__file__).parents[1] / "helpers" / "state_worker.py"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "work" / "haul.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[StagingStore]:
    with StagingStore.open(db_path) as opened:
        yield opened


@pytest.fixture
def spawn_worker() -> Iterator:
    """Start `state_worker.py <action> <db>` in a child process; kill leftovers at teardown."""
    started: list[subprocess.Popen] = []

    def spawn(action: str, db_path: Path) -> subprocess.Popen:
        child = subprocess.Popen(
            [sys.executable, str(WORKER), action, str(db_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(child)
        return child

    yield spawn
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)
        if child.stdout:
            child.stdout.close()
