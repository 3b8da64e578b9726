"""Every export's haul.duckdb is whole: after the docs' nightly recipe (an incremental
extract, then `haul export --since last`) the database joins every model row to its issue,
while the files stay incremental; a migration's config whose extract skipped the changelog
gets an error naming why the model is missing, not a silent export without it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from haul.connectors.tracker import TrackerClient
from tests.helpers.export_fixtures import Staged, stage_sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[object]:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as running:
        yield running


async def rename(info: dict, key: str, summary: str) -> None:
    client = TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"]["source"]
    )
    async with client:
        await client.update_issue(key, {"summary": summary})


def nightly(staged: Staged, out: Path) -> Path:
    """One night of the docs' recipe: an incremental extract, then the export."""
    extracted = staged.haul("extract", "--config", staged.config)
    assert extracted.returncode == 0, extracted.stderr
    done = staged.haul(
        "export", "--config", staged.config, "--format", "parquet", "--out", out,
        "--since", "last", "--keep", "14",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return (out / "latest").resolve()


def test_the_nightly_recipe_run_twice_joins_every_cycle_time_to_an_issue(
    sandbox: object, tmp_path: Path
) -> None:
    """Two nights, one issue renamed between them: the second night's parquet files hold
    that issue alone, its haul.duckdb every issue, status and user, and each cycle_times,
    status_intervals and issue_daily row finds its issue."""
    staged = stage_sandbox(sandbox, tmp_path)
    out = tmp_path / "exports"
    first = nightly(staged, out)
    key = pd.read_parquet(first / "issues.parquet")["key"].iloc[0]
    asyncio.run(rename(staged.info, key, "Renamed overnight"))
    second = nightly(staged, out)
    assert second != first
    assert list(pd.read_parquet(second / "issues.parquet")["key"]) == [key]  # incremental
    with duckdb.connect(str(second / "haul.duckdb"), read_only=True) as db:

        def one(sql: str) -> int:
            return int(db.execute(sql).fetchone()[0])  # type: ignore[index]

        issues = one("SELECT count(*) FROM issues")
        assert (
            issues > 1
            and one("SELECT count(*) FROM statuses")
            and one("SELECT count(*) FROM users")
        )
        assert one("SELECT count(*) FROM cycle_times") == issues
        for table in ("cycle_times", "status_intervals", "issue_daily"):
            orphans = one(
                f"SELECT count(*) FROM {table} t LEFT JOIN issues i ON i.key = t.issue_key "
                "WHERE i.key IS NULL"
            )
            assert orphans == 0, table
        assert one("SELECT count(*) FROM issues WHERE summary = 'Renamed overnight'") == 1


def test_a_migration_config_that_skipped_the_changelog_warns_of_the_model_and_exits_0(
    sandbox: object, tmp_path: Path
) -> None:
    """A config with a [target] and no [export] (the docs' migration): "auto" skips the
    changelog, so the export writes the staged tables and exits 0, with one warning naming
    the tables left out (the changelog's, the model's) and the setting that stages them."""
    staged = stage_sandbox(sandbox, tmp_path, with_target=True)
    done = staged.haul("export", "--config", staged.config, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "failed:" not in done.stdout
    (warning,) = [line for line in done.stderr.splitlines() if line.startswith("haul: warning")]
    assert "[scope] changelog" in warning and "set it to true" in warning
    assert all(name in warning for name in ("changelog", "cycle_times", "status_intervals"))
    assert (tmp_path / "out" / "latest" / "issues.csv").is_file()
    assert not (tmp_path / "out" / "latest" / "cycle_times.csv").exists()


def test_a_migration_config_with_an_export_section_stages_the_changelog_and_the_model(
    sandbox: object, tmp_path: Path
) -> None:
    """With [target] and [export], "auto" stages the changelog: the model is exported."""
    staged = stage_sandbox(sandbox, tmp_path, with_target=True, sections="[export]\n")
    done = staged.haul("export", "--config", staged.config, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "latest" / "cycle_times.csv").is_file()
