"""A shard manifest over a sandbox's source org, for the orchestrators' tests: the CLI tests'
config (tokens named, never written), cut by `haul plan --shards N --manifest FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

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


def delete_a_comment_in_the_target(info: dict[str, Any]) -> None:
    """Delete the first comment of the first target issue of queue DEV that has one, through
    the API: a record the migration loaded that the target now lacks (verify's exit 3)."""
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    with httpx.Client(base_url=info["tracker"], headers=headers, timeout=30) as tracker:
        for issue in tracker.post("/issues/_search", json={"query": "Queue: DEV"}).json():
            comments = tracker.get(f"/issues/{issue['key']}/comments").json()
            if comments:
                path = f"/issues/{issue['key']}/comments/{comments[0]['id']}"
                tracker.delete(path).raise_for_status()
                return
    raise AssertionError("no target issue of queue DEV has a comment to delete")
