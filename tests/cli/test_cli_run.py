"""`haul run` on a tiny org; then `haul status` and `haul failures` read what it left, and a
second `haul load` is refused while another holds the store.

One migration serves the whole module: the tests after it do not change the target.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import (
    counts_table,
    files_containing,
    finish,
    run_haul,
    source_queues,
    start_haul,
    tokens_env,
    wait_for,
    write_config,
)


@dataclass
class Migration:
    sandbox: Any  # sandbox.server.RunningSandbox
    info: dict[str, Any]
    directory: Path
    config: Path
    env: dict[str, str]
    run: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    """Every queue of a tiny source org migrated by one `haul run`."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        directory = tmp_path_factory.mktemp("run")
        config = write_config(directory, info, queues=source_queues(info))
        env = tokens_env(info["tokens"]["admin"])
        run = run_haul("run", "--config", config, env=env)
        yield Migration(sandbox, info, directory, config, env, run)


def test_run_exits_0_and_prints_the_per_entity_table(migrated: Migration) -> None:
    """Every record to load is loaded: the table shows to load == loaded, nothing failed or
    pending, and the target counts as many issues as the source."""
    assert migrated.run.returncode == 0, migrated.run.stderr
    table = counts_table(migrated.run.stdout)
    entities = list(table)
    # the organisation objects the issues point to come first, as they load first
    assert (entities[0], entities[-1]) == ("status", "total") and "issue" in entities
    for entity in ("issue", "comment", "attachment", "worklog", "link", "total"):
        assert table[entity]["to load"] > 0, entity
    for entity, row in table.items():
        if row["to load"] == "-":  # staged for exports only: changelog
            assert row["loaded"] == "-" and isinstance(row["staged"], int), entity
            continue
        assert row["loaded"] == row["to load"], entity
        assert row["failed"] == row["pending"] == 0, entity
    issues = table["issue"]["staged"]
    assert f"issues: {issues} in the source, {issues} in the target" in migrated.run.stdout
    assert "tracker source: " in migrated.run.stdout and "tracker target: " in migrated.run.stdout
    assert "_rate_limit_wait_s" not in migrated.run.stdout  # the raw figures: report.json
    assert "failed" not in migrated.run.stderr


def test_the_tables_staged_column_is_what_the_progress_lines_counted(
    migrated: Migration,
) -> None:
    """A first run, piped: each `haul: X staged N` line and the table's staged column for X
    say the same N; the rows to load are a column of their own (59 fields staged, the 8
    custom ones to load), and the caption says which is which."""
    progress = dict(
        line.removeprefix("haul: ").split(" (", 1)[0].rsplit(" staged ", 1)
        for line in migrated.run.stderr.splitlines()
        if line.startswith("haul: ") and " staged " in line and "started" not in line
    )
    table = counts_table(migrated.run.stdout)
    shown = {entity: progress[entity] for entity in table if entity in progress}
    assert {"issue", "field", "sprint"} <= set(shown), progress
    for entity, staged in shown.items():
        assert table[entity]["staged"] == int(staged), entity
    assert table["field"]["to load"] < table["field"]["staged"]
    assert "to load: the ledger rows the load sends" in " ".join(migrated.run.stdout.split())


def test_status_then_shows_the_same_counts(migrated: Migration) -> None:
    """`haul status` after the run shows the run's table, and the run as ok."""
    done = run_haul("status", "--config", migrated.config, env=migrated.env)
    assert done.returncode == 0, done.stderr
    assert counts_table(done.stdout) == counts_table(migrated.run.stdout)
    assert "run 1: run ok started" in done.stdout
    assert "last run: tracker target: " in done.stdout  # requests, retries, waits


def test_status_and_load_print_json_for_scripts(migrated: Migration) -> None:
    """`--json`: one JSON object on stdout with the same counts as the table, the summary's
    lines and every raw figure; a load with nothing left loads 0."""
    status = run_haul("status", "--config", migrated.config, "--json", env=migrated.env)
    load = run_haul("load", "--config", migrated.config, "--json", env=migrated.env)

    assert status.returncode == 0, status.stderr
    rows = {row["entity"]: row for row in json.loads(status.stdout)["counts"]}
    table = counts_table(migrated.run.stdout)
    assert rows["issue"]["loaded"] == table["issue"]["loaded"] > 0
    assert load.returncode == 0, load.stderr
    done = json.loads(load.stdout)
    assert done["command"] == "load" and done["figures"]["loaded"] == 0
    assert any(line.startswith("tracker target: ") for line in done["summary"])


def test_failures_then_says_none_failed(migrated: Migration) -> None:
    """`haul failures` after a complete run lists nothing and says 0 failed."""
    done = run_haul("failures", "--config", migrated.config, env=migrated.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("0 failed record(s)")
    assert len(done.stdout.splitlines()) == 1


def test_the_token_is_in_no_output_and_no_file(migrated: Migration) -> None:
    """After a whole migration the admin token is not in stdout, stderr, the log, the staging
    database or the blob folder."""
    token = migrated.info["tokens"]["admin"]
    assert token not in migrated.run.stdout + migrated.run.stderr
    log = migrated.directory / "staging" / "haul.log"
    assert "load_finished" in log.read_text(encoding="utf-8")
    assert files_containing(migrated.directory, token) == []


def test_a_second_load_while_one_runs_is_refused_naming_the_holder(migrated: Migration) -> None:
    """While a `haul load` holds the store (held by the sandbox at its first read after it
    took the store), another exits 1 with "another haul run holds the store", the holder's
    pid and command; the first, released, then ends normally. (Both loads find nothing left
    to do: the store is already migrated.)"""
    config, env, sandbox = migrated.config, migrated.env, migrated.sandbox
    # a load reads the target's statuses once it holds the store; /myself, which it asks
    # before, is not held
    sandbox.set_faults("hold:statuses@/v3/statuses")
    first = start_haul("load", "--config", config, env=env)
    try:
        wait_for(lambda: sandbox.held("statuses"), timeout=60, what="the first load to be held")

        second = run_haul("load", "--config", config, env=env)

        assert first.poll() is None
        assert second.returncode == 1
        assert second.stderr.startswith("haul: another haul run holds the store")
        assert f"pid {first.pid} " in second.stderr
        assert "command 'load'" in second.stderr
        assert second.stdout == ""
    finally:
        sandbox.set_faults("")  # releases the first load
        out, err = finish(first)

    assert first.returncode == 0, err
    assert counts_table(out) == counts_table(migrated.run.stdout)
    assert "this command: 0 loaded, 0 failed" in out
