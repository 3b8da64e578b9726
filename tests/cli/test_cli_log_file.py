"""A run whose log file cannot be written stops with exit 1 naming the file, as a signal would
stop it: a run nobody could trace afterwards must not go on for hours (a full disk)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import run_haul, source_queues, staging_db, tokens_env, write_config


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def test_a_full_disk_under_the_log_stops_the_run_and_the_rerun_resumes(
    sandbox: Any, tmp_path: Path
) -> None:
    """haul.log on /dev/full (every write: "No space left on device"): exit 1, the last line
    names the file and the fix, the run is recorded as interrupted; with room for the log
    again, the same command finishes the migration."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this machine")
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    log = staging_db(tmp_path).with_name("haul.log")
    log.parent.mkdir()
    log.symlink_to("/dev/full")
    env = tokens_env(info["tokens"]["admin"])

    done = run_haul("run", "--config", config, env=env)

    assert done.returncode == 1, done.stderr
    assert last_line(done.stderr) == (
        f"haul: stopped: the log file {log} cannot be written (No space left on device): "
        "free space on its disk; then run the same command to resume"
    )
    assert "Logging error" not in done.stderr and "Traceback" not in done.stderr
    with sqlite3.connect(staging_db(tmp_path)) as db:
        outcome = db.execute("SELECT outcome FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert outcome == "interrupted"

    log.unlink()
    again = run_haul("run", "--config", config, env=env)

    assert again.returncode == 0, again.stderr
    assert log.is_file() and "run_stopped" not in log.read_text(encoding="utf-8")


def test_a_log_file_that_cannot_be_opened_stops_the_run_before_any_work(
    sandbox: Any, tmp_path: Path
) -> None:
    """haul.log is a folder (a log haul cannot open): exit 1 naming it before anything is
    staged; nothing but the folder the user made is left."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    log = staging_db(tmp_path).with_name("haul.log")
    log.mkdir(parents=True)

    done = run_haul("run", "--config", config, env=tokens_env(info["tokens"]["admin"]))

    assert done.returncode == 1, done.stderr
    assert last_line(done.stderr) == (
        f"haul: stopped: the log file {log} cannot be written (Is a directory): make it "
        "writable or choose another staging.path; then run the same command to resume"
    )
    assert sorted(path.name for path in log.parent.iterdir()) == ["haul.log"]
