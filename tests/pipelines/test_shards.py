"""Sharded runs: a migration cut by `haul plan --shards N` into first, N shards and last, each
run as its own `haul run --manifest F --part P` process, ends as a one-process migration of a
twin sandbox does, record for record (compared through the plain API)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers.crash_runs import HAUL, finish
from tests.helpers.haul_fixtures import TOKEN_ENV, source_queues, write_config
from tests.pipelines.test_crash_resume import snapshot_target

MAPPING = {"TEST": "NEW"}


def haul_manifest(manifest: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HAUL, *args, "--manifest", str(manifest)], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def run_ok(manifest: Path, *args: str, env: dict[str, str]) -> str:
    done = haul_manifest(manifest, *args, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def one_process(tmp_path: Path, start: Any) -> dict[str, Any]:
    with start(size="tiny", seed=11) as sandbox:
        info = sandbox.info
        queues = source_queues(info)
        config = write_config(tmp_path / "whole", info, queues=queues, mapping=MAPPING)
        finish(config, "run", {**os.environ, TOKEN_ENV: info["tokens"]["admin"]})
        return snapshot_target(info, queues)


def test_four_shards_equal_one_process(tmp_path: Path) -> None:
    """plan --shards 4, then first, every shard, last: the target equals a one-process
    migration's, verify over the manifest exits 0, and status names every part done."""
    from haul.sandbox import server as sandbox_server

    (tmp_path / "whole").mkdir()
    (tmp_path / "sharded").mkdir()
    expected = one_process(tmp_path, sandbox_server.start_sandbox)
    with sandbox_server.start_sandbox(size="tiny", seed=11) as sandbox:
        info = sandbox.info
        queues = source_queues(info)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        config = write_config(tmp_path / "sharded", info, queues=queues, mapping=MAPPING)
        manifest = tmp_path / "sharded" / "manifest.json"
        planned = subprocess.run(
            [HAUL, "plan", "--config", str(config), "--shards", "4", "--manifest", str(manifest)],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert planned.returncode == 0, planned.stdout + planned.stderr
        parts = [part["part"] for part in json.loads(manifest.read_text())["parts"]]
        assert parts[0] == "first" and parts[-1] == "last" and len(parts) == 6
        for part in parts:
            run_ok(manifest, "run", "--part", part, env=env)
        actual = snapshot_target(info, queues)
        run_ok(manifest, "verify", env=env)
        status = json.loads(run_ok(manifest, "status", "--json", env=env))
    assert [row["state"] for row in status["parts"]] == ["done"] * 6
    assert sorted(actual) == sorted(expected)
    for key in expected:
        assert actual[key] == expected[key], key
