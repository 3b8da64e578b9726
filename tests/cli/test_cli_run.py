"""`haul run` on a tiny org, then `haul status` and `haul failures` read what it left.

One migration serves the whole module: the tests after the first only read its results.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_fixtures import (
    counts_table,
    files_containing,
    run_haul,
    source_get,
    tokens_env,
    write_config,
)

LOADABLE = ("issue", "comment", "comment_attachment", "worklog", "attachment", "checklist_item")


@dataclass
class Migration:
    info: dict[str, Any]
    directory: Path
    config: Path
    env: dict[str, str]
    run: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    """Every queue of a tiny source org migrated by one `haul run`."""
    sandbox_server = pytest.importorskip("sandbox.server")
    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        directory = tmp_path_factory.mktemp("run")
        queues = [queue["key"] for queue in source_get(info, "/queues", perPage=100)]
        config = write_config(directory, info, queues=queues)
        env = tokens_env(info["tokens"]["admin"])
        yield Migration(info, directory, config, env, run_haul("run", "--config", config, env=env))


def test_run_exits_0_and_prints_the_per_entity_table(migrated: Migration) -> None:
    """Every staged record is loaded: the table shows staged == loaded, nothing failed or
    pending, and the target counts as many issues as the source."""
    assert migrated.run.returncode == 0, migrated.run.stderr
    table = counts_table(migrated.run.stdout)
    assert list(table) == [*LOADABLE, "link", "changelog (staged only)", "total"]
    assert table["issue"]["staged"] > 0
    assert table["comment"]["staged"] > 0
    assert table["link"]["staged"] > 0
    for entity in (*LOADABLE, "link", "total"):
        assert table[entity]["loaded"] == table[entity]["staged"], entity
        assert table[entity]["failed"] == table[entity]["pending"] == 0, entity
    assert table["changelog (staged only)"]["loaded"] == "-"
    issues = table["issue"]["staged"]
    assert f"source_issue_count: {issues}" in migrated.run.stdout
    assert f"target_issue_count: {issues}" in migrated.run.stdout
    assert "failed" not in migrated.run.stderr


def test_status_then_shows_the_same_counts(migrated: Migration) -> None:
    """`haul status` after the run shows the run's table, and the run as ok."""
    done = run_haul("status", "--config", migrated.config, env=migrated.env)
    assert done.returncode == 0, done.stderr
    assert counts_table(done.stdout) == counts_table(migrated.run.stdout)
    assert "run 1: run ok started" in done.stdout


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
