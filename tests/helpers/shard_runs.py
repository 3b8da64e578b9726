"""Running the parts of a shard manifest as `haul` processes, for the sharded-run tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.crash_runs import HAUL


def haul_manifest(
    manifest: Path, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HAUL, *args, "--manifest", str(manifest)], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def run_ok(manifest: Path, *args: str, env: dict[str, str]) -> str:
    done = haul_manifest(manifest, *args, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def plan(config: Path, manifest: Path, shards: int, env: dict[str, str]) -> None:
    planned = subprocess.run(
        [HAUL, "plan", "--config", str(config), "--shards", str(shards), "--manifest",
         str(manifest)], env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stdout + planned.stderr
