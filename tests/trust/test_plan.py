"""`haul plan` through the CLI: create, skip (ours in the target, or done) and conflict."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from trust_fixtures import (
    migrated,
    run_haul,
    source_queues,
    target_call,
    tokens_env,
    write_config,
)

from haul.pipelines.config import load_config


def _row(output: str, entity: str) -> list[int]:
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if cells[0] == entity and len(cells) == 4:
            return [int(cell) for cell in cells[1:]]
    raise AssertionError(f"no {entity} row in {output}")


def _import(info: dict[str, Any], key: str, unique: str | None) -> None:
    body = {
        "queue": key.split("-")[0],
        "key": key,
        "summary": "already here",
        "createdAt": "2020-01-01T00:00:00.000+0000",
        "createdBy": target_call(info, "GET", "/myself").json()["login"],
    }
    if unique:
        body["unique"] = unique
    target_call(info, "POST", "/issues/_import", json=body)


def test_plan_counts_ours_as_skip_and_a_taken_key_as_conflict(sandbox: Any, tmp_path: Path) -> None:
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    prefix = f"haul:{load_config(config).source.org}"
    _import(info, "NEW-1", f"{prefix}:TEST-1")  # as an interrupted haul load left it
    _import(info, "NEW-2", None)  # made by someone else
    conflicts = tmp_path / "conflicts.csv"

    done = run_haul("plan", "--config", config, "--conflicts", conflicts, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    create, skip, conflict = _row(done.stdout, "issue")
    assert (skip, conflict) == (1, 1) and create == 48
    assert "conflict: issue TEST-2: NEW-2 is taken by an issue haul did not make" in done.stdout
    with conflicts.open(encoding="utf-8") as handle:
        assert [row["source_id"] for row in csv.DictReader(handle)] == ["TEST-2"]
    assert "writes (" in done.stdout
    assert run_haul("plan", "--config", config, env=env).stdout == done.stdout  # wrote nothing


@pytest.mark.slow  # one of several full runs of its kind; make test-all runs it
def test_plan_after_a_complete_run_skips_everything(sandbox: Any, tmp_path: Path) -> None:
    config, env = migrated(tmp_path, sandbox.info)

    done = run_haul("plan", "--config", config, env=env)

    assert done.returncode == 0, done.stderr
    assert _row(done.stdout, "issue") == [0, 50, 0]
    assert _row(done.stdout, "comment")[0] == 0
    assert "requests: 0 writes (no writes)" in done.stdout
