"""Progress: plain periodic lines when not on a terminal; done of total, rate and ETA."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from haul.pipelines.progress import LiveProgress, plain_line
from haul.state.store import StagingStore
from tests.helpers.trust_fixtures import (
    run_haul,
    source_queues,
    staging_db,
    tokens_env,
    write_config,
)

LATENCY_MS = 120.0  # a tiny migration then takes well over 10 s (about 13)


def test_plain_line_gives_done_of_total_rate_and_eta() -> None:
    assert (
        plain_line("records loaded", 50, 200, 10.0)
        == "haul: records loaded 50/200 (5.0/s, ETA 30 s)"
    )
    assert plain_line("issue staged", 7, None, 2.0) == "haul: issue staged 7 (3.5/s)"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_stage_says_when_it_starts_and_ends_and_no_line_twice() -> None:
    """A stage's start (with its legend) and end; between them a heartbeat every interval
    names only the tasks whose count moved since their last line; at the end, each task's
    final count once."""
    log, clock = io.StringIO(), Clock()
    console = Console(file=io.StringIO(), force_terminal=False)
    progress = LiveProgress(console, interval=60.0, log=log, clock=clock)
    with progress, progress.stage("extract", "X staged: records staged"):
        surveys = progress.task("survey staged")
        progress.advance(surveys, 2)
        issues = progress.task("issue staged")
        for _ in range(8):  # a long stage: eight heartbeats, the surveys long done
            clock.now += 60.0
            progress.advance(issues, 10)
    lines = log.getvalue().splitlines()
    assert lines[0] == "haul: extract started (X staged: records staged)"
    assert lines[-1] == "haul: extract ended after 480.0 s"
    assert [line for line in lines if line.startswith("haul: survey staged")] == [
        "haul: survey staged 2 (0.0/s)"
    ]
    assert len([line for line in lines if line.startswith("haul: issue staged")]) == 8
    assert lines[-2].startswith("haul: issue staged 80 (")
    assert len(lines) == len(set(lines))


@pytest.mark.slow  # the cron-logged load below is the default run's CLI progress test
def test_piped_progress_prints_each_count_once_through_the_cli(tmp_path: Path) -> None:
    """`haul run` with stderr piped, on a sandbox slow enough that the run outlasts the old
    10 s reprint: each stage starts and ends once, and no task's count is printed twice."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5, latency_ms=LATENCY_MS) as sandbox:
        info = sandbox.info
        config = write_config(tmp_path, info, queues=source_queues(info))
        done = run_haul("run", "--config", config, env=tokens_env(info["tokens"]["admin"]))

    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("haul: ")]
    counts = [line.split(" (", 1)[0] for line in lines]  # "haul: survey staged 2"
    assert len(counts) == len(set(counts)), done.stderr
    assert "haul: issue staged 50" in counts
    for stage in ("extract", "load"):
        assert len([line for line in lines if line.startswith(f"haul: {stage} started (")]) == 1
        assert len([line for line in lines if line.startswith(f"haul: {stage} ended after ")]) == 1


def test_a_load_from_cron_logs_records_of_the_known_total(sandbox: Any, tmp_path: Path) -> None:
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0

    done = run_haul("load", "--config", config, env=env)

    assert done.returncode == 0, done.stderr
    # every ledger row sent: the issues' records, the organisation objects they point to (found
    # or made), their remote links and the queues' autoactions (an issue's status is recorded
    # as carried by its import, not sent)
    with StagingStore.open(staging_db(tmp_path)) as store:
        counts = store.ledger.counts()
        total = sum(sum(by.values()) for entity, by in counts.items() if entity != "issue_status")
    assert total > 500
    assert f"haul: records loaded {total}/{total} (" in done.stderr
