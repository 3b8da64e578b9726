"""A shard manifest over a sandbox's source org, for the orchestrators' tests.

The config is the CLI tests' (tokens named, never written); the manifest cuts the org into
one shard per source queue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul.pipelines.shards.manifest import Manifest, Part, PartScope, store_for, write_manifest
from tests.helpers.cli_fixtures import source_queues, write_config

STORES = "stores/{part}.db"


def write_shard_manifest(directory: Path, info: dict[str, Any]) -> Path:
    """Write haul.toml and manifest.json in `directory`: first, a shard per queue, last."""
    queues = source_queues(info)
    config = write_config(directory, info, queues=queues)
    shards = [
        Part(str(n), ("first",), store_for(STORES, str(n)), scope=PartScope(queues=(queue,)))
        for n, queue in enumerate(queues, start=1)
    ]
    everything = ("first", *(shard.name for shard in shards))
    manifest = Manifest(
        config=config.name,
        parts=(
            Part("first", (), store_for(STORES, "first")),
            *shards,
            Part("last", everything, store_for(STORES, "last")),
        ),
        store_template=STORES,
    )
    path = directory / "manifest.json"
    write_manifest(manifest, path)
    return path
