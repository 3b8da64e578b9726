"""`haul plan --shards N --manifest FILE`: count the source's scope and write the manifest.

The manifest is planned from the source's counts alone (no extract needed): each service that
can be sharded counts its units (`shard_units`: a queue's issues, a wiki subtree's pages, a
survey), a queue larger than a shard's share is cut into creation-time windows, and the units
are dealt into shards by record count (`pipelines.shards.units`). The same counts give the same
manifest, byte for byte.
"""

from __future__ import annotations

import os
import os.path
from collections.abc import Mapping, Sequence
from pathlib import Path

from haul.pipelines.commands.run import open_clients
from haul.pipelines.config import Config
from haul.pipelines.services import Service
from haul.pipelines.shards.manifest import (
    DEFAULT_STORE_TEMPLATE,
    FIRST,
    LAST,
    Manifest,
    ManifestError,
    Part,
    check_stores,
    pin,
    store_for,
    write_manifest,
)
from haul.pipelines.shards.units import Unit, balance, cut_large, merged


async def count_units(
    config: Config,
    services: Sequence[Service],
    shards: int,
    environ: Mapping[str, str] = os.environ,
) -> list[Unit]:
    """The scope's units, counted at the source, the large ones cut to a shard's share."""
    async with open_clients(config, services, environ, config.source) as (sources,):
        units: list[Unit] = []
        for service, client in sources:
            counted = getattr(service, "shard_units", None)
            if counted is not None:
                units += await counted(config, client)
        return await cut_large(units, shards)


def manifest_of(
    units: list[Unit],
    shards: int,
    *,
    config_path: Path,
    manifest_path: Path,
    store_template: str = DEFAULT_STORE_TEMPLATE,
    source_token_env: str | None = None,
    target_token_env: str | None = None,
    pinned: Mapping[str, str] | None = None,
) -> Manifest:
    """The manifest for `units` dealt into `shards` shards, between the first and last parts;
    `pinned`: the digests of the config's settings that decide where records go (`pin`)."""
    if shards < 1:
        raise ManifestError("--shards: give at least 1")
    dealt = balance(units, shards)
    names = [str(index) for index in range(1, len(dealt) + 1)]

    def token(template: str | None, name: str) -> str | None:
        return None if template is None else template.replace("{part}", name)

    first = Part(FIRST, (), store_for(store_template, FIRST))
    middle = tuple(
        Part(
            name,
            (FIRST,),
            store_for(store_template, name),
            records=sum(unit.records for unit in shard),
            scope=merged(shard),
            source_token_env=token(source_token_env, name),
            target_token_env=token(target_token_env, name),
        )
        for name, shard in zip(names, dealt, strict=True)
    )
    last = Part(LAST, (FIRST, *names), store_for(store_template, LAST))
    folder = manifest_path.resolve().parent
    config = os.path.relpath(config_path.resolve(), folder)
    manifest = Manifest(config, (first, *middle, last), store_template, folder, pinned or {})
    check_stores(manifest)
    return manifest


async def plan_shards(
    config: Config,
    services: Sequence[Service],
    config_path: Path,
    manifest_path: Path,
    shards: int,
    *,
    environ: Mapping[str, str] = os.environ,
    store_template: str = DEFAULT_STORE_TEMPLATE,
    source_token_env: str | None = None,
    target_token_env: str | None = None,
) -> Manifest:
    """Count the source, deal it into `shards` shards and write the manifest at `manifest_path`."""
    units = await count_units(config, services, shards, environ)
    manifest = manifest_of(
        units,
        shards,
        config_path=config_path,
        manifest_path=manifest_path,
        store_template=store_template,
        source_token_env=source_token_env,
        target_token_env=target_token_env,
        pinned=pin(config),
    )
    write_manifest(manifest, manifest_path)
    return manifest
