"""Running the parts of a shard manifest as `haul` processes, for the sharded-run tests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

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


def into_empty_org(config: Path, info: dict[str, Any]) -> Path:
    """The config at `config` moved to load into the sandbox's `empty` org: no queue, field
    or board of the source there yet (write it with no queue mapping)."""
    text = config.read_text(encoding="utf-8")
    target = f'org_id = "{info["orgs"]["target"]}"'
    assert target in text
    config.write_text(text.replace(target, f'org_id = "{info["orgs"]["empty"]}"'), "utf-8")
    return config


def source_references_left(verified: str) -> int:
    """The count `haul verify` prints of the references to the source left in the target."""
    found = re.search(r"references to the source left in the target: (\d+)", verified)
    assert found, verified
    return int(found.group(1))
