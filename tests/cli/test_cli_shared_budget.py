"""Two `haul extract` processes of one token sharing its budgets through `[tuning]
shared_budget`: both keep their figures in the one file, and each run's summary and report
say what the process sent and what the sharers sent together, against the limit. A path haul
did not make, and a lock a stopped process holds, stop the command with what to do."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.connectors.shared_budget_workers import hold_the_lock
from tests.helpers.cli_fixtures import SOURCE_TOKEN_ENV, finish, haul_env, run_haul, start_haul

SPAWN = multiprocessing.get_context("spawn")

LIMIT = 40


def extract_config(
    directory: Path, info: dict[str, Any], queue: str, budget: Path, tuning: str = ""
) -> Path:
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        with_target=False,
        queues=[queue],
        staging_path="staging/haul.db",
        endpoint_extra={"read_rps": LIMIT},
        sections=f'\n[tuning]\nshared_budget = "{budget}"\n{tuning}',
    )
    return write_sandbox_config(directory, info, options)


def test_two_extracts_share_one_token_budget(sandbox: Any, tmp_path: Path) -> None:
    """Two extracts of one token name one file: one bucket for the tracker's reads holds
    both processes' figures and no token; each summary and report gives this process's
    rate, its sharers' and the limit; the write budgets, unused, are not reported."""
    info = sandbox.info
    budget = tmp_path / "budget.json"
    queues = info["queues"]["source"][:2]
    env = haul_env({SOURCE_TOKEN_ENV: info["tokens"]["admin"]})
    configs = [
        extract_config(tmp_path / f"part{n}", info, queue, budget) for n, queue in enumerate(queues)
    ]
    running = [start_haul("extract", "--config", config, env=env) for config in configs]
    outputs = [finish(process, timeout=120) for process in running]
    assert [process.returncode for process in running] == [0, 0], outputs

    buckets = json.loads(budget.read_text())["buckets"]
    reads = [key for key in buckets if key.startswith("tracker read ")]
    assert len(reads) == 1, "one token, one service, one direction: one bucket"
    assert len(buckets[reads[0]]["members"]) == 2
    assert info["tokens"]["admin"] not in budget.read_text()

    for config, (stdout, _) in zip(configs, outputs, strict=True):
        assert "reads on a shared budget: this process" in stdout
        assert f"of a limit of {LIMIT}/s" in stdout
        report = json.loads((config.parent / "staging" / "report.json").read_text())
        shared = report["details"]["tracker_source_shared_budget"]["read"]
        assert shared["limit_rps"] == LIMIT
        assert 1 <= shared["sharers"] <= 2
        assert 0 < shared["process_rps"] <= shared["shared_rps"]
        assert "writes on a shared budget" not in stdout


def one_extract(sandbox: Any, directory: Path, budget: Path, tuning: str = "") -> Any:
    """`haul extract` of one queue whose config names `budget` as its shared budget file."""
    info = sandbox.info
    config = extract_config(directory, info, info["queues"]["source"][0], budget, tuning)
    env = haul_env({SOURCE_TOKEN_ENV: info["tokens"]["admin"]})
    return run_haul("extract", "--config", config, env=env)


@pytest.mark.parametrize("link", [True, False], ids=["symlink", "foreign-file"])
def test_a_budget_path_haul_did_not_make_stops_the_command_untouched(
    sandbox: Any, tmp_path: Path, link: bool
) -> None:
    """A symbolic link at the budget's path, or a file haul did not write there: the
    extract exits 2 naming the path and why, before any request; the file keeps its bytes."""
    theirs = tmp_path / "theirs.json"
    theirs.write_text('{"someone": "else"}\n')
    budget = tmp_path / "budget.json"
    if link:
        budget.symlink_to(theirs)
    else:
        budget.write_text(theirs.read_text())
    before = sandbox.stats()["requests"]

    done = one_extract(sandbox, tmp_path / "part", budget)

    assert done.returncode == 2, done.stderr
    why = "it is a symbolic link" if link else "it does not start with"
    assert done.stderr.startswith(f"haul: the shared budget file {budget} is not one haul made")
    assert why in done.stderr
    assert "Traceback" not in done.stderr
    assert theirs.read_text() == '{"someone": "else"}\n'
    assert budget.read_text() == theirs.read_text()
    assert sandbox.stats()["requests"] == before


def test_a_stopped_holder_of_the_budget_lock_stops_a_sharer_naming_it(
    sandbox: Any, tmp_path: Path
) -> None:
    """A process stopped (SIGSTOP) while it holds the budget file's lock: an extract sharing
    the file waits `shared_budget_wait` (here 1 s), then exits 1 naming the file and the
    holder's pid."""
    budget = tmp_path / "budget.json"
    held = SPAWN.Event()
    holder = SPAWN.Process(target=hold_the_lock, args=(str(budget), held), name="holder")
    holder.start()
    try:
        assert held.wait(60), "the holder never took the lock"
        os.kill(holder.pid or 0, signal.SIGSTOP)
        done = one_extract(sandbox, tmp_path / "part", budget, 'shared_budget_wait = "1s"\n')
    finally:
        os.kill(holder.pid or 0, signal.SIGKILL)
        os.kill(holder.pid or 0, signal.SIGCONT)
        holder.join(60)

    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"haul: stopped: the shared budget file {budget} stayed locked")
    assert f"by pid {holder.pid} " in done.stderr
    assert "Traceback" not in done.stderr
