"""Progress: plain periodic lines when not on a terminal; done of total, rate and ETA."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

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


def test_plain_line_gives_done_of_total_rate_and_eta() -> None:
    assert (
        plain_line("records loaded", 50, 200, 10.0)
        == "haul: records loaded 50/200 (5.0/s, ETA 30 s)"
    )
    assert plain_line("issue staged", 7, None, 2.0) == "haul: issue staged 7 (3.5/s)"


def test_off_a_terminal_progress_logs_lines_every_interval() -> None:
    log = io.StringIO()
    console = Console(file=io.StringIO(), force_terminal=False)
    with LiveProgress(console, interval=0.0, log=log) as progress:
        progress.expect("records loaded", 3)
        task = progress.task("records loaded")
        for _ in range(3):
            progress.advance(task)
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("haul: records loaded 1/3 (")
    assert lines[-1].startswith("haul: records loaded 3/3 (")
    assert len(lines) == 4  # one per advance, one at the end


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
