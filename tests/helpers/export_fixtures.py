"""Helpers for the export tests: a staged sandbox org, `haul` run as a real subprocess, and
what the store says each table should hold."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.export.command import model_as_of, service_tables
from haul.pipelines.export.tables import ExportContext, Table
from haul.pipelines.registry import services
from haul.state.store import StagingStore
from tests.helpers import cli_fixtures

HAUL = cli_fixtures.HAUL
TOKEN_ENV = "HAUL_EXPORT_TEST_TOKEN"


@dataclass
class Staged:
    """A sandbox whose source org haul has extracted once."""

    sandbox: Any  # sandbox.server.RunningSandbox
    info: dict[str, Any]
    directory: Path
    config: Path
    env: dict[str, str]

    @property
    def store_path(self) -> Path:
        return self.directory / "haul.db"

    def haul(self, *args: str | Path, **options: Any) -> subprocess.CompletedProcess[str]:
        """`haul ARGS...` in this sandbox's environment."""
        return run_haul(*args, env=self.env, **options)


def stage_sandbox(sandbox: Any, directory: Path, **settings: Any) -> Staged:
    """Write a config for `sandbox` (source only, as a nightly export has; `settings`: more
    `SandboxConfig` fields) and extract it."""
    info = sandbox.info
    defaults: dict[str, Any] = {
        "with_target": False,
        "queue_mapping": {},
        "mapping_extra": {},
        "endpoint_extra": {"read_rps": 2000},
    }
    options = SandboxConfig(source_token_env=TOKEN_ENV, **(defaults | settings))
    config = write_sandbox_config(directory, info, options)
    staged = Staged(
        sandbox, info, directory, config, haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    )
    done = staged.haul("extract", "--config", config)
    assert done.returncode == 0, done.stderr
    return staged


def haul_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without our token, plus `extra`; wide and plain for rich's tables."""
    env = {name: value for name, value in os.environ.items() if name != TOKEN_ENV}
    env.update(COLUMNS="200", TERM="dumb", PYTHONUNBUFFERED="1")
    env.update(extra or {})
    return env


def run_haul(
    *args: str | Path, env: dict[str, str] | None = None, **options: Any
) -> subprocess.CompletedProcess[str]:
    """Run `haul ARGS...` to its end (never raises on a bad status), in this environment
    without our token unless `env` is given."""
    return cli_fixtures.run_haul(*args, env=env or haul_env(), **options)


def tracker_tables(store_path: Path | None = None) -> dict[str, Table]:
    """Every service's tables by name; with a store, the ones built from what it staged too
    (one per grid or survey, the custom fields' table)."""
    registry = service_tables(services())
    if store_path is None:
        return {table.name: table for table in registry.tables}
    with StagingStore.open_readonly(store_path) as store:
        return {table.name: table for table in registry.tables_for(store)}


def expected_rows(store_path: Path) -> dict[str, int]:
    """Table -> the rows it should have: its staged records, or their items (checklists);
    a derived table's, what its function computes as of the export's instant."""
    registry = service_tables(services())
    expected = {}
    with StagingStore.open_readonly(store_path) as store:
        context = ExportContext(store, as_of=model_as_of(store, datetime.now(UTC)))
        for table in registry.tables_for(store):
            if table.derive is not None:
                rows = sum(len(list(group.rows)) for group in table.derive(context))
            else:
                records = store.iter_records(table.entity, parent=table.parent)
                rows = sum(len(list(table.items(record))) for record in records)
            if store.count_records().get(table.entity):
                expected[table.name] = rows
    return expected


def only_folder(out: Path) -> Path:
    """The one dated folder under `out` (what `latest` names)."""
    folders = [
        path
        for path in out.iterdir()
        if path.is_dir() and not path.is_symlink() and not path.name.startswith(".")
    ]
    assert len(folders) == 1, folders
    assert (out / "latest").resolve() == folders[0].resolve()
    return folders[0]
