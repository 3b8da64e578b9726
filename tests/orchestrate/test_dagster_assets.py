"""haul.orchestrate.dagster: a shard manifest's assets, materialised in process against the
sandbox (real sockets): the first part, every shard's partition, the last part, then the
verify check passes and the target holds every source issue. A partition materialised
before the part it needs fails, naming the exit status and what it means."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

dg = pytest.importorskip(
    "dagster", reason="dagster is not installed: pip install -e '.[dev]' (or haul-etl[dagster])"
)

from haul.orchestrate.dagster import haul_definitions  # noqa: E402 (needs dagster)
from tests.helpers.cli_fixtures import (  # noqa: E402
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
)
from tests.helpers.shard_manifests import issue_counts, plan_shards  # noqa: E402

SHARDS = 2


@dataclass
class Materialised:
    info: dict[str, Any]
    manifest: Path
    instance: Any  # dagster.DagsterInstance
    runs: dict[str, Any]  # "first", "1".."N", "last" -> its ExecuteInProcessResult
    partitions: list[str]


def materialise_in_order(defs: Any, instance: Any) -> tuple[dict[str, Any], list[str]]:
    """first, then every shard's partition, then last (its verify check with it)."""
    assets = list(defs.assets) + list(defs.asset_checks)
    first, shards, last = (
        defs.resolve_assets_def(dg.AssetKey(["haul", name])) for name in ("first", "shards", "last")
    )
    partitions = shards.partitions_def.get_partition_keys()
    runs = {
        "first": dg.materialize(
            assets, selection=[first.key], instance=instance, raise_on_error=False
        )
    }
    for key in partitions:
        runs[key] = dg.materialize(
            assets,
            selection=[shards.key],
            partition_key=key,
            instance=instance,
            raise_on_error=False,
        )
    runs["last"] = dg.materialize(
        assets, selection=[last.key], instance=instance, raise_on_error=False
    )
    return runs, partitions


@pytest.fixture(scope="module")
def materialised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Materialised]:
    """A tiny org cut into a shard per queue, every asset materialised in one instance."""
    from haul.sandbox import server as sandbox_server

    with (
        sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox,
        pytest.MonkeyPatch.context() as env,
        dg.DagsterInstance.ephemeral() as instance,
    ):
        info = sandbox.info
        for name in (SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV):  # the worker's environment
            env.setenv(name, info["tokens"]["admin"])
        manifest = plan_shards(tmp_path_factory.mktemp("dagster"), info, SHARDS)
        runs, partitions = materialise_in_order(haul_definitions(manifest), instance)
        yield Materialised(info, manifest, instance, runs, partitions)


def test_every_partition_materialises_and_the_verify_check_passes(
    materialised: Materialised,
) -> None:
    """One partition per shard; every run succeeds; verify over the union passes."""
    assert materialised.partitions == [str(n) for n in range(1, SHARDS + 1)]
    failed = [name for name, run in materialised.runs.items() if not run.success]
    assert failed == []
    done = materialised.instance.get_materialized_partitions(dg.AssetKey(["haul", "shards"]))
    assert done == set(materialised.partitions)
    (check,) = materialised.runs["last"].get_asset_check_evaluations()
    assert (check.check_name, check.passed) == ("verify", True)
    assert check.metadata["exit_status"].value == 0


def test_the_target_holds_every_source_issue(materialised: Materialised) -> None:
    """The shards together carried every queue: the target counts what the source does."""
    info = materialised.info
    counts = issue_counts(info)
    assert all(source == target > 0 for source, target in counts.values()), counts


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A tiny org's manifest, planned; no part has run: the Definitions."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        yield haul_definitions(
            plan_shards(tmp_path_factory.mktemp("planned"), sandbox.info, SHARDS)
        )


def test_a_shard_before_the_first_part_fails_naming_the_exit_status(planned: Any) -> None:
    """haul refuses to start a shard whose first part has not finished (exit 1); the asset
    fails, and the failure says the status and what it means."""
    run = dg.materialize(
        list(planned.assets),
        selection=[dg.AssetKey(["haul", "shards"])],
        partition_key="1",
        raise_on_error=False,
    )
    assert not run.success
    (failure,) = [event for event in run.all_events if event.is_step_failure]
    data = failure.step_failure_data
    assert data.user_failure_data.metadata["exit_status"].value == 1
    assert "--part 1 exited 1: stopped" in data.error.message
    assert "part 1 needs part first" in data.error.message  # haul's own words, passed on


def test_the_verify_check_fails_before_the_last_part_has_run(planned: Any) -> None:
    """Verify over parts that have not run cannot pass: the check fails with the status."""
    run = dg.materialize(
        [*planned.assets, *planned.asset_checks],
        selection=dg.AssetSelection.checks(*planned.asset_checks),
        raise_on_error=False,
    )
    (check,) = run.get_asset_check_evaluations()
    assert check.passed is False
    assert check.metadata["exit_status"].value == 1
    assert check.metadata["meaning"].value.startswith("stopped")
    assert "the last part has not run" in check.metadata["haul"].value
