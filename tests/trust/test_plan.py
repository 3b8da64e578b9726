"""`haul plan` through the CLI: create, skip (ours in the target, or done) and conflict."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.config import load_config
from tests.helpers.trust_fixtures import (
    migrated,
    run_haul,
    source_queues,
    staging_db,
    target_call,
    tokens_env,
    write_config,
)


def _row(output: str, entity: str) -> list[int]:
    """create, skip, conflict, blocked of one entity's row."""
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if cells[0] == entity and len(cells) == 5:
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
    create, skip, conflict, blocked = _row(done.stdout, "issue")
    assert (skip, conflict, blocked) == (1, 1, 0) and create == 48
    assert "conflict: issue TEST-2: NEW-2 is taken by an issue haul did not make" in done.stdout
    with conflicts.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["source_id"] for row in rows if row["decision"] == "conflict"] == ["TEST-2"]
    assert "writes (" in done.stdout
    assert run_haul("plan", "--config", config, env=env).stdout == done.stdout  # wrote nothing


@pytest.mark.slow  # one of several full runs of its kind; make test-all runs it
def test_plan_after_a_complete_run_skips_everything(sandbox: Any, tmp_path: Path) -> None:
    config, env = migrated(tmp_path, sandbox.info)

    done = run_haul("plan", "--config", config, env=env)

    assert done.returncode == 0, done.stderr
    assert _row(done.stdout, "issue") == [0, 50, 0, 0]
    assert _row(done.stdout, "comment")[0] == 0
    assert "requests: 0 writes (no writes)" in done.stdout


def _children(directory: Path, key: str) -> dict[str, list[str]]:
    """entity -> source ids of the ledger rows under issue `key` (direct children)."""
    with sqlite3.connect(staging_db(directory)) as db:
        rows = db.execute(
            "SELECT entity, source_id FROM ledger WHERE parent_entity = 'issue' AND parent = ?",
            [key],
        ).fetchall()
    found: dict[str, list[str]] = {}
    for entity, source_id in rows:
        found.setdefault(entity, []).append(source_id)
    return found


def _failures(directory: Path) -> dict[tuple[str, str], str]:
    with sqlite3.connect(staging_db(directory)) as db:
        rows = db.execute("SELECT entity, source_id, error FROM ledger WHERE status = 'failed'")
        return {(entity, source_id): error for entity, source_id, error in rows}


def test_plan_blocks_what_a_conflict_holds_and_the_load_does_not_send_it(
    sandbox: Any, tmp_path: Path
) -> None:
    """The children of a conflicting issue are blocked, not create; a key another mapping of
    the same migration took is named so; the load fails the conflicts with the plan's reason
    (no 409: nothing sent) and their children as blocked."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    children = _children(tmp_path, "TEST-2")
    assert children, "TEST-2 has comments, worklogs or links in the tiny org"
    prefix = f"haul:{load_config(config).source.org}"
    _import(info, "NEW-2", None)  # made by someone else
    _import(info, "NEW-3", f"{prefix}:OLD-3")  # an earlier mapping of this migration (OLD -> NEW)

    plan = run_haul("plan", "--config", config, env=env)

    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "conflict: issue TEST-3: NEW-3 is taken by OLD-3, loaded there by this migration" in (
        plan.stdout
    )
    for entity, ids in children.items():
        if entity != "link":  # a link may be blocked by either end; its count is checked below
            assert _row(plan.stdout, entity)[3] >= len(ids), (entity, plan.stdout)
    assert "blocked: comment: " in plan.stdout or "blocked: worklog: " in plan.stdout

    sandbox.set_faults("")
    load = run_haul("load", "--config", config, env=env)

    assert load.returncode == 3, load.stdout + load.stderr
    failed = _failures(tmp_path)
    assert failed[("issue", "TEST-2")].startswith("PlannedConflict: NEW-2 is taken by an issue")
    assert "found by haul plan" in failed[("issue", "TEST-2")]
    for entity, ids in children.items():
        for source_id in ids:
            blocked = "issue TEST-2 was not loaded, blocked by its conflict: NEW-2 is taken"
            assert failed[(entity, source_id)].startswith(blocked)
    assert not any(error.startswith("ConflictError") for error in failed.values())  # no 409
    causes = run_haul("failures", "--config", config, env=env).stdout
    assert "waiting under" in causes, causes  # the blocked records wait under their conflict


def test_two_queues_mapped_onto_one_conflict_over_each_shared_number(
    sandbox: Any, tmp_path: Path
) -> None:
    """DEV and TEST both mapped to NEW: DEV-1 is created at NEW-1, TEST-1 is a conflict that
    names DEV-1 and the mapping (not 'taken by an issue haul did not make')."""
    info = sandbox.info
    mapping = {"TEST": "NEW", "DEV": "NEW"}
    config = write_config(tmp_path, info, queues=["DEV", "TEST"], queue_mapping=mapping)
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0

    done = run_haul("plan", "--config", config, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "conflict: issue TEST-1: NEW-1 is where DEV-1 goes too: queues DEV and TEST are both"
        " mapped to NEW" in done.stdout
    )
    create, _, conflict, _ = _row(done.stdout, "issue")
    assert create > 0 and conflict > 0
