"""haul.orchestrate.parts, what every orchestrator's task calls.

A part that cannot start fails the task with haul's exit status, its meaning and haul's own
words, and says whether a retry may help. A task stopped by its orchestrator stops its part at
a safe point and leaves no haul process behind: the part's child process gets SIGTERM, commits
what was under way and says how to resume. The orchestrator's stop is played by SIGINT to the
task's process (Dagster and Airflow turn their stop into an exception in the task the same
way)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from haul.orchestrate.parts import PartFailed, run_part_or_raise
from tests.helpers.cli_fixtures import (
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    asked_to_stop,
    haul_env,
    wait_for,
)
from tests.helpers.shard_manifests import plan_shards

HELD = "hold:part@/v3/statuses"

# the task: the first part, as every orchestrator's task runs it
# SIGINT as an orchestrator's task process gets it (KeyboardInterrupt): a suite started in the
# background by a shell inherits SIGINT ignored, which would make the task deaf to the test
TASK = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from haul.orchestrate.parts import run_part_or_raise
run_part_or_raise(sys.argv[1], "first")
"""


def test_a_missing_manifest_fails_as_a_config_error_no_retry_mends(tmp_path: Path) -> None:
    """Exit 2: the failure names the command, the meaning and what haul said; retrying the
    task would end the same."""
    manifest = tmp_path / "nowhere.json"
    with pytest.raises(PartFailed) as failed:
        run_part_or_raise(manifest, "first")
    assert failed.value.exit_status == 2
    assert failed.value.retry_may_help is False
    assert str(failed.value).startswith(
        f"haul run --manifest {manifest} --part first exited 2: usage or config error"
    )
    assert f"cannot read {manifest}" in failed.value.said


def haul_processes(manifest: Path) -> list[int]:
    """The pids of the processes whose command line names `manifest` (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:  # not a process, or one that ended meanwhile
            continue
        if entry.name.isdigit() and str(manifest).encode() in command:
            found.append(int(entry.name))
    return found


def test_a_stopped_task_stops_its_part_and_leaves_no_process(tmp_path: Path) -> None:
    """SIGINT to the task only: its haul child stops at a safe point (its own words on the
    task's stderr) and no process of the part is left."""
    from haul.sandbox import server as sandbox_server

    # the part's reads of the statuses are held (it asks them once it holds its store and
    # catches signals): the part is under way, and stays so, until the test lets them go on
    with sandbox_server.start_sandbox(size="tiny", seed=5, faults=HELD) as sandbox:
        info = sandbox.info
        manifest = plan_shards(tmp_path, info, 2)
        token = info["tokens"]["admin"]
        env = haul_env({SOURCE_TOKEN_ENV: token, TARGET_TOKEN_ENV: token})
        task = subprocess.Popen(
            [sys.executable, "-c", TASK, str(manifest)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: sandbox.held("part"), timeout=60, what="the first part held")
            assert [pid for pid in haul_processes(manifest) if pid != task.pid]
            os.kill(task.pid, signal.SIGINT)
            # the child asked to stop (in its log) finishes the held read, then stops
            store = tmp_path / "stores" / "first" / "haul.db"
            wait_for(lambda: asked_to_stop(store), timeout=60, what="the part asked to stop")
            sandbox.release("part")
            _, stderr = task.communicate(timeout=120)
        finally:
            if task.poll() is None:
                task.kill()
                task.communicate()
    assert task.returncode != 0
    assert "haul: stopped; run the same command to resume" in stderr
    assert haul_processes(manifest) == []
