"""Whether a manifest's shards cover the whole source: `haul verify --manifest` asks it.

Verify over a manifest reads the union of its parts' stores, which holds only what those parts
staged: a shard left out of the manifest (a part taken out of the file, a window lost) leaves
its records out of the comparison too, and the union alone cannot tell. So the source is
counted twice, by the units a plan deals (`pipelines.shards.units`): once for the base config
(each queue, wiki subtree and survey whole) and once for each shard's own config (its queues
under its window). A unit the shards count fewer records of than the source holds is a
difference of kind `record`: what the manifest does not move, named.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence

from haul.pipelines.commands.verify import Difference
from haul.pipelines.config import Config, load_config
from haul.pipelines.services import Service
from haul.pipelines.shards.manifest import Manifest
from haul.pipelines.shards.parts import part_config
from haul.pipelines.shards.planning import count_units
from haul.pipelines.shards.units import Unit

ENTITY = "shard manifest"  # the entity column of the differences this module finds


def unit_names(unit: Unit) -> list[str]:
    """What a unit holds, in words: `queue DEV`, `wiki team/runbooks`, `survey 12`."""
    scope = unit.scope
    return [
        *(f"queue {queue}" for queue in scope.queues),
        *(f"wiki {root}" for root in scope.wiki_roots),
        *(f"survey {survey}" for survey in scope.surveys),
    ]


async def _counted(
    config: Config, services: Sequence[Service], environ: Mapping[str, str]
) -> Counter[str]:
    """The source's records per unit name under `config` (no unit cut: one shard)."""
    counts: Counter[str] = Counter()
    for unit in await count_units(config, services, 1, environ):
        for name in unit_names(unit):
            counts[name] += unit.records
    return counts


async def uncovered(
    manifest: Manifest, services: Sequence[Service], environ: Mapping[str, str] = os.environ
) -> list[Difference]:
    """One difference per unit of the base config's scope whose records the manifest's shards
    do not all hold (counted at the source now); none when they cover it."""
    base = load_config(manifest.config_path)
    whole = await _counted(base, services, environ)
    covered: Counter[str] = Counter()
    for shard in manifest.shards:
        covered.update(await _counted(part_config(manifest, shard, base), services, environ))
    return [
        Difference(
            ENTITY,
            name,
            "",
            "record",
            f"{records} records at the source",
            f"{covered[name]} in the manifest's shards: a shard is missing; plan the "
            "migration again (haul plan --shards N --manifest FILE) and run its parts",
        )
        for name, records in sorted(whole.items())
        if covered[name] < records
    ]
