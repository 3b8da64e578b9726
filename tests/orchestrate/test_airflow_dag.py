"""recipes/airflow/haul_shards.py runs a shard manifest with Airflow's `dag.test()`: the first
part, a mapped task per shard, the last part and verify all succeed against the sandbox, and
the target holds every source issue. Airflow runs in its own process (its config and its
SQLite metadata database in a tmp AIRFLOW_HOME); the test skips, saying why, without it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli_fixtures import (
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    haul_env,
)
from tests.helpers.shard_manifests import issue_counts, plan_shards

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed: pip install -e '.[dev,airflow]' runs the DAG test",
)

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "airflow"
AIRFLOW = Path(sys.executable).with_name("airflow")
SHARDS = 2
# loads the DAG file, runs it once with the manifest as its parameter, prints each task's state
DRIVER = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("haul_shards", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
run = module.shards_dag.test(run_conf={"manifest": sys.argv[2]})
states = {f"{ti.task_id}[{ti.map_index}]": str(ti.state) for ti in run.get_task_instances()}
print(json.dumps({"run": str(run.state), "tasks": states}))
"""
# loads the DAG file and prints its tasks: downstream ids, mapped or not
SHAPE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("haul_shards", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
tasks = module.shards_dag.tasks
print(json.dumps({t.task_id: [sorted(t.downstream_task_ids), t.is_mapped] for t in tasks}))
"""


def airflow_env(home: Path, tokens: dict[str, str]) -> dict[str, str]:
    """haul's test environment plus an Airflow of its own: config, SQLite database, the recipe
    folder as the DAGs folder, no example DAGs."""
    return haul_env(
        {
            **tokens,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(RECIPES),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        }
    )


def test_the_dag_maps_a_task_over_the_shards_between_first_and_last(tmp_path: Path) -> None:
    """The recipe loads, and its tasks run first >> shard (mapped) >> last >> verify."""
    env = airflow_env(tmp_path / "airflow", {})
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


@pytest.mark.slow  # about 90 s: Airflow's database, then five tasks; the test above is the fast one
def test_the_dag_runs_every_part_and_verify(tmp_path: Path) -> None:
    """dag.test() runs first, each shard as a mapped task, last and verify, all successful,
    and the target holds every source issue."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        manifest = plan_shards(tmp_path / "haul", info, SHARDS)
        token = info["tokens"]["admin"]
        env = airflow_env(tmp_path / "airflow", {SOURCE_TOKEN_ENV: token, TARGET_TOKEN_ENV: token})
        migrated = subprocess.run(
            [AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True, timeout=300
        )
        assert migrated.returncode == 0, migrated.stderr[-2000:]
        ran = subprocess.run(
            [sys.executable, "-c", DRIVER, RECIPES / "haul_shards.py", manifest],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert ran.returncode == 0, ran.stderr[-4000:]
        result = json.loads(ran.stdout.strip().splitlines()[-1])
        shards = [f"shard[{n}]" for n in range(SHARDS)]
        expected = {name: "success" for name in ("first[-1]", *shards, "last[-1]", "verify[-1]")}
        assert result == {"run": "success", "tasks": expected}, ran.stderr[-4000:]
        counts = issue_counts(info)
    assert all(source == target > 0 for source, target in counts.values()), counts
