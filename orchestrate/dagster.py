"""A shard manifest as Dagster assets: `haul_definitions("manifest.json")`.

Dagster's partitions map one to one onto haul's shards::

    haul/first                 the organisation as configured, and the planning layer's entities
        |
    haul/shards  [1 .. N]      one static partition per shard of the manifest
        |  (all partitions)
    haul/last                  links across shards, autoactions; then the check:
        +- check verify        verify over the union of every part (passes on exit 0)

Each asset runs its part as `haul run --manifest FILE --part P` in a child process of the
worker's (`haul.orchestrate.parts`: haul's logging and signal handling stay out of Dagster's),
exactly once and resumable like any run: materialising a partition again resumes it. An asset
fails on a non-zero exit with the status and what it means in the failure's metadata.

The verify check is blocking, its failure an error: when the target differs from the parts'
stores (or verify cannot run), the run that materialised `haul/last` fails, and so does
`dagster asset materialize` (a non-zero exit), as `haul verify` would.

Tokens come from the worker's environment, as for `haul run`; a part whose manifest entry
names its own token variables reads those. Each asset sits in a concurrency pool named after
the token variables its parts read (`haul:SRC_TOKEN+TGT_TOKEN`): parts that share a token
share its rate budget, and a pool's limit (`dagster instance concurrency set POOL N`) says how
many of them may run at once. The budget itself stays haul's: a pool counts slots, not
requests. A pool belongs to an asset, not a partition: shards that read tokens of their own
(`haul plan --source-token-env SRC_{part}`) share one pool naming every shard's variables.

In a code location::

    from haul.orchestrate.dagster import haul_definitions

    defs = haul_definitions("/srv/haul/acme/manifest.json", key_prefix="acme")

`key_prefix` tells several organisations' assets apart (merge their `Definitions`).
"""

# no `from __future__ import annotations`: Dagster reads the `context` parameter's annotation
# as a class, not as the string that import would leave
from pathlib import Path

import dagster as dg

from haul.orchestrate.parts import (
    PartFailed,
    meaning,
    run_haul,
    run_part_or_raise,
    token_variables,
)
from haul.pipelines.shards.manifest import FIRST, LAST, read_manifest


def haul_definitions(manifest_path: str | Path, *, key_prefix: str = "haul") -> dg.Definitions:
    """The assets of the manifest's parts and the verify check, keyed `<key_prefix>/<asset>`."""
    path = Path(manifest_path).resolve()
    manifest = read_manifest(path)
    partitions = dg.StaticPartitionsDefinition([part.name for part in manifest.shards])
    shard_pool = pool(path, *(part.name for part in manifest.shards))

    # `type: ignore[type-arg]`: MaterializeResult is generic in an asset's value; these assets
    # return none, and Dagster reads the bare class
    @dg.asset(key_prefix=key_prefix, name="first", group_name=key_prefix, pool=pool(path, FIRST))
    def first() -> dg.MaterializeResult:  # type: ignore[type-arg]
        """The first part: the organisation as configured and the planning layer's entities."""
        return run_one(path, FIRST)

    @dg.asset(
        key_prefix=key_prefix,
        name="shards",
        group_name=key_prefix,
        partitions_def=partitions,
        deps=[first],
        pool=shard_pool,
    )
    def shards(context: dg.AssetExecutionContext) -> dg.MaterializeResult:  # type: ignore[type-arg]
        """One shard per partition: its queues' issues (or a creation window of a queue), its
        wiki subtrees, its surveys, each with what hangs under them."""
        return run_one(path, context.partition_key)

    @dg.asset(
        key_prefix=key_prefix,
        name="last",
        group_name=key_prefix,
        deps=[dg.AssetDep(shards, partition_mapping=dg.AllPartitionMapping())],
        pool=pool(path, LAST),
    )
    def last() -> dg.MaterializeResult:  # type: ignore[type-arg]
        """The last part: the links across shards, the planning layer's links, autoactions,
        triggers and macros, over the union of every part's store."""
        return run_one(path, LAST)

    # blocking: a failed check fails the run that materialised `last` (and the CLI's exit)
    @dg.asset_check(asset=last, name="verify", blocking=True, pool=pool(path, LAST))
    def verify() -> dg.AssetCheckResult:
        """haul verify over the union of every part: passes when the target matches; else an
        error, with verify's exit status, what it means and haul's own words."""
        exit_status, said = run_haul("verify", "--manifest", str(path))
        failed = None if exit_status == 0 else PartFailed("haul verify", exit_status, said)
        return dg.AssetCheckResult(
            passed=failed is None,
            severity=dg.AssetCheckSeverity.ERROR,
            description=None if failed is None else str(failed),
            metadata={"exit_status": exit_status, "meaning": meaning(exit_status), "haul": said},
        )

    return dg.Definitions(
        assets=[first, shards, last],
        asset_checks=[verify],
        # each part already runs in a process of its own: a step needs no second one
        executor=dg.in_process_executor,
    )


def pool(manifest_path: Path, *parts: str) -> str:
    """The concurrency pool of an asset running `parts`: named after the token variables they
    read (`haul:HAUL_SOURCE_TOKEN+HAUL_TARGET_TOKEN`), so parts sharing a token share a pool."""
    variables = {name for part in parts for name in token_variables(manifest_path, part)}
    return "haul:" + "+".join(sorted(variables))


def run_one(manifest_path: Path, part: str) -> dg.MaterializeResult:  # type: ignore[type-arg]
    """Run `part`; a dagster Failure naming the exit status and its meaning when it fails."""
    try:
        run_part_or_raise(manifest_path, part)
    except PartFailed as failed:
        raise dg.Failure(
            description=str(failed),
            metadata={
                "part": part,
                "exit_status": failed.exit_status,
                "meaning": failed.meaning,
                "haul": failed.said,
            },
        ) from failed
    manifest = read_manifest(manifest_path)
    entry = manifest.part(part)
    return dg.MaterializeResult(
        metadata={
            "part": part,
            "store": str(manifest.store_path(entry)),
            "records_planned": entry.records,
        }
    )
