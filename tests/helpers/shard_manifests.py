"""A shard manifest over a sandbox's source org, for the orchestrators' tests: the CLI tests'
config (tokens named, never written), cut by `haul plan --shards N --manifest FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.cli_fixtures import (
    count_issues,
    run_haul,
    source_queues,
    tokens_env,
    write_config,
)

QUEUE_MAPPING = {"TEST": "NEW"}  # write_config's default mapping


def plan_shards(directory: Path, info: dict[str, Any], shards: int) -> Path:
    """Write haul.toml for every source queue and plan it into `shards` shards; the manifest."""
    config = write_config(directory, info, queues=source_queues(info))
    manifest = directory / "manifest.json"
    planned = run_haul(
        "plan", "--config", config, "--shards", str(shards), "--manifest", manifest,
        env=tokens_env(info["tokens"]["admin"]),
    )  # fmt: skip
    assert planned.returncode == 0, planned.stdout + planned.stderr
    return manifest


def issue_counts(info: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per source queue, its issues in the source and in its target queue (the CLI tests'
    config maps TEST to NEW)."""
    return {
        queue: (
            count_issues(info, "source", queue),
            count_issues(info, "target", QUEUE_MAPPING.get(queue, queue)),
        )
        for queue in source_queues(info)
    }
