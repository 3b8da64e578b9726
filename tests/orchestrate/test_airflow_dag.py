"""recipes/airflow/haul_shards.py, run as docs/how-to/orchestrators.md says: the page's plan
and its `airflow db migrate` and `airflow dags test haul_shards` lines, read from the page and
run as they are, with the page's environment (this test's own AIRFLOW_HOME, the recipe folder
as the DAGs folder), against the sandbox. The first part, a mapped task per shard (named by
its part), the last part and verify succeed, and the target holds every source issue; once
the target lacks a record the parts loaded, the next run fails on verify and the command exits
non-zero. The test skips, saying why, where Airflow is not installed."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli_fixtures import (
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    haul_env,
    write_config,
)
from tests.helpers.docs_commands import ORCHESTRATORS, commands, exported
from tests.helpers.shard_manifests import delete_a_comment_in_the_target, issue_counts

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed: pip install -e '.[dev]' runs the DAG tests",
)

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "airflow"
BIN = str(Path(sys.executable).parent)  # haul and airflow, as the page's lines name them
SHARDS = 2
# loads the DAG file and prints its tasks: downstream ids, mapped or not
SHAPE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("haul_shards", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
tasks = module.shards_dag.tasks
print(json.dumps({t.task_id: [sorted(t.downstream_task_ids), t.is_mapped] for t in tasks}))
"""


def airflow_env(home: Path, manifest: Path, token: str = "") -> dict[str, str]:
    """haul's test environment plus the page's exports, with an Airflow of this test's own
    (config and SQLite database in `home`), and haul's and airflow's commands first on PATH."""
    ours = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(RECIPES),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "HAUL_MANIFEST": str(manifest),
    }
    assert exported(ORCHESTRATORS, "airflow environment") == set(ours)
    tokens = {SOURCE_TOKEN_ENV: token, TARGET_TOKEN_ENV: token} if token else {}
    env = haul_env({**tokens, **ours})
    env["PATH"] = os.pathsep.join([BIN, env.get("PATH", "")])
    return env


def task_states(home: Path) -> dict[str, dict[str, str]]:
    """Per DAG run (oldest first), each task instance's state under the name Airflow shows
    for it: the task id, and a mapped task's rendered name (`shard[1]`, its part)."""
    runs: dict[str, dict[str, str]] = {}
    with sqlite3.connect(home / "airflow.db") as db:
        for run_id, task_id, map_index, shown, state in db.execute(
            "SELECT r.run_id, t.task_id, t.map_index, t.rendered_map_index, t.state"
            " FROM dag_run r JOIN task_instance t ON t.run_id = r.run_id AND t.dag_id = r.dag_id"
            " WHERE r.dag_id = 'haul_shards' ORDER BY r.id, t.task_id, t.map_index"
        ):
            name = task_id if map_index < 0 else f"{task_id}[{shown or map_index}]"
            runs.setdefault(run_id, {})[name] = str(state)
    return runs


def test_the_dag_maps_a_task_over_the_shards_between_first_and_last(tmp_path: Path) -> None:
    """The recipe loads, and its tasks run first >> shard (mapped) >> last >> verify."""
    env = airflow_env(tmp_path / "airflow", tmp_path / "manifest.json")
    parsed = subprocess.run(
        [sys.executable, "-c", SHAPE, RECIPES / "haul_shards.py"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert parsed.returncode == 0, parsed.stderr[-4000:]
    assert json.loads(parsed.stdout.strip().splitlines()[-1]) == {
        "first": [["shard"], False],
        "shard": [["last"], True],
        "last": [["verify"], False],
        "verify": [[], False],
    }


@pytest.mark.slow  # about 2 min: Airflow's database, then two runs of five tasks
def test_the_pages_commands_run_every_part_and_a_failing_verify_fails_the_run(
    tmp_path: Path,
) -> None:
    """`airflow db migrate` and `airflow dags test haul_shards` as the page gives them: every
    task succeeds, each shard's mapped task named by its part, and the target holds every
    source issue. Then a comment the parts loaded is deleted in the target: the same command
    again resumes every part, verify finds the comment missing, the run fails and the
    command exits non-zero."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        write_config(tmp_path, info, queues=list(info["queues"]["source"]))
        home = tmp_path / "airflow"
        env = airflow_env(home, tmp_path / "manifest.json", info["tokens"]["admin"])

        def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
            )

        (plan,) = commands(ORCHESTRATORS, "plan")
        assert run(plan).returncode == 0
        migrate, dags_test = commands(ORCHESTRATORS, "airflow")
        migrated = run(migrate)
        assert migrated.returncode == 0, migrated.stderr[-2000:]
        ran = run(dags_test)
        assert ran.returncode == 0, ran.stderr[-4000:]
        (first_run,) = task_states(home).values()
        parts = [f"shard[{n}]" for n in range(1, SHARDS + 1)]
        assert first_run == dict.fromkeys(["first", "last", *parts, "verify"], "success")
        counts = issue_counts(info)
        assert all(source == target > 0 for source, target in counts.values()), counts

        delete_a_comment_in_the_target(info)
        again = run(dags_test)
        assert again.returncode != 0, again.stdout[-4000:]
        second_run = list(task_states(home).values())[-1]
    assert second_run == {**first_run, "verify": "failed"}, again.stderr[-4000:]
