"""haul.orchestrate.dagster, run as docs/how-to/orchestrators.md says: the page's plan, its
definitions.py and its `dagster asset materialize` lines, read from the page and run as they
are in the manifest's folder, against the sandbox (real sockets). Every part materialises, the
verify check passes and the target holds every source issue; once the target lacks a record
the parts loaded, materialising `haul/last` again fails the run on its check and the command
exits non-zero. In process: a partition materialised before the part it needs fails, naming
the exit status; the parts that read the same tokens share one concurrency pool."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

dg = pytest.importorskip(
    "dagster", reason="dagster is not installed: pip install -e '.[dev]' (or haul-etl[dagster])"
)

from haul.orchestrate.dagster import haul_definitions  # noqa: E402 (needs dagster)
from haul.pipelines.shards.manifest import read_manifest, write_manifest  # noqa: E402
from tests.helpers.cli_fixtures import (  # noqa: E402
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    tokens_env,
    write_config,
)
from tests.helpers.docs_commands import ORCHESTRATORS, block, commands, exported  # noqa: E402
from tests.helpers.shard_manifests import (  # noqa: E402
    delete_a_comment_in_the_target,
    issue_counts,
    plan_shards,
)

SHARDS = 2
LAST = dg.AssetKey(["haul", "last"])
BIN = str(Path(sys.executable).parent)  # haul and dagster, as the page's lines name them


@dataclass
class Materialised:
    info: dict[str, Any]
    folder: Path  # the manifest's, where the page's commands run
    env: dict[str, str]
    ran: list[subprocess.CompletedProcess[str]]  # the page's dagster lines, in its order
    verified: Any = None  # the verify check's evaluation after them

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=600
        )

    def instance(self) -> Any:
        """The Dagster instance the commands kept their runs in (the page's DAGSTER_HOME)."""
        return dg.DagsterInstance.from_config(self.env["DAGSTER_HOME"])

    def verify_check(self) -> Any:
        """The latest evaluation of the verify check on haul/last (None: never evaluated)."""
        with self.instance() as instance:
            record = instance.get_latest_asset_check_evaluation_record(
                dg.AssetCheckKey(LAST, "verify")
            )
        return None if record is None else record.event.asset_check_evaluation


def page_env(folder: Path, token: str) -> dict[str, str]:
    """The tokens under the names the config gives, the page's exports (with this test's own
    folder), and haul's and dagster's commands first on PATH."""
    home = folder / "dagster"
    home.mkdir()
    ours = {"DAGSTER_HOME": str(home)}
    assert exported(ORCHESTRATORS, "dagster environment") == set(ours)
    env = {**tokens_env(token), **ours}
    env["PATH"] = os.pathsep.join([BIN, env.get("PATH", "")])
    return env


@pytest.fixture(scope="module")
def materialised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Materialised]:
    """A tiny org, planned and materialised part by part with the page's commands."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        folder = tmp_path_factory.mktemp("dagster")
        write_config(folder, info, queues=list(info["queues"]["source"]))
        (folder / "definitions.py").write_text(block(ORCHESTRATORS, "definitions.py"))
        done = Materialised(info, folder, page_env(folder, info["tokens"]["admin"]), [])
        (plan,) = commands(ORCHESTRATORS, "plan")
        planned = done.run(plan)
        assert planned.returncode == 0, planned.stderr[-2000:]
        done.ran = [done.run(argv) for argv in commands(ORCHESTRATORS, "dagster")]
        done.verified = done.verify_check()
        yield done


def test_every_part_materialises_and_the_verify_check_passes(materialised: Materialised) -> None:
    """Every command of the page exits 0; a partition per shard; verify over the union passes."""
    failed = [run.args for run in materialised.ran if run.returncode != 0]
    assert failed == [], materialised.ran[-1].stderr[-4000:]
    with materialised.instance() as instance:
        done = instance.get_materialized_partitions(dg.AssetKey(["haul", "shards"]))
    assert done == {str(n) for n in range(1, SHARDS + 1)}
    assert materialised.verified.passed is True
    assert materialised.verified.metadata["exit_status"].value == 0


def test_the_target_holds_every_source_issue(materialised: Materialised) -> None:
    """The shards together carried every queue: the target counts what the source does."""
    counts = issue_counts(materialised.info)
    assert all(source == target > 0 for source, target in counts.values()), counts


def test_a_target_lacking_a_loaded_record_fails_the_run_and_the_command(
    materialised: Materialised,
) -> None:
    """A comment the parts loaded is deleted in the target: materialising haul/last again (the
    page's line) resumes the part, then verify finds the comment missing (exit 3): the blocking
    check fails the run and `dagster asset materialize` exits non-zero, naming the check."""
    delete_a_comment_in_the_target(materialised.info)
    (last,) = [argv for argv in commands(ORCHESTRATORS, "dagster") if "haul/last" in argv]
    again = materialised.run(last)
    assert again.returncode != 0, again.stderr[-4000:]
    assert "blocking asset check failed" in again.stderr
    evaluation = materialised.verify_check()
    assert evaluation.passed is False
    assert evaluation.metadata["exit_status"].value == 3
    assert evaluation.description.startswith("haul verify exited 3: done, but")


@pytest.fixture(scope="module")
def planned_manifest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A tiny org's manifest, planned; no part has run."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        yield plan_shards(tmp_path_factory.mktemp("planned"), sandbox.info, SHARDS)


@pytest.fixture(scope="module")
def planned(planned_manifest: Path) -> Any:
    """The Definitions of the planned manifest."""
    return haul_definitions(planned_manifest)


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
    """Verify over parts that have not run cannot pass: the check fails with the status, an
    error that fails the run."""
    run = dg.materialize(
        [*planned.assets, *planned.asset_checks],
        selection=dg.AssetSelection.checks(*planned.asset_checks),
        raise_on_error=False,
    )
    assert not run.success
    (check,) = run.get_asset_check_evaluations()
    assert check.passed is False
    assert check.metadata["exit_status"].value == 1
    assert check.metadata["meaning"].value.startswith("stopped")
    assert "the last part has not run" in check.metadata["haul"].value


def test_the_parts_reading_the_same_tokens_share_one_concurrency_pool(planned: Any) -> None:
    """Every part of a manifest whose parts read the config's tokens: one pool, named after
    the token variables (never the tokens)."""
    pools = {
        name: planned.resolve_assets_def(dg.AssetKey(["haul", name])).op.pool
        for name in ("first", "shards", "last")
    }
    expected = f"haul:{SOURCE_TOKEN_ENV}+{TARGET_TOKEN_ENV}"
    assert pools == dict.fromkeys(("first", "shards", "last"), expected)


def test_shards_reading_tokens_of_their_own_share_one_pool_naming_them_all(
    planned_manifest: Path,
) -> None:
    """A manifest whose shards read source tokens of their own (as `haul plan --shards N
    --source-token-env SRC_{part}` writes it): the shards' pool names each shard's variable
    and the target's; the first and last parts keep the config's pool."""
    manifest = read_manifest(planned_manifest)
    own = [
        replace(part, source_token_env=f"SRC_{part.name}") if part.is_shard else part
        for part in manifest.parts
    ]
    path = planned_manifest.with_name("own-tokens.json")
    write_manifest(replace(manifest, parts=tuple(own)), path)
    defs = haul_definitions(path)
    pools = {
        name: defs.resolve_assets_def(dg.AssetKey(["haul", name])).op.pool
        for name in ("first", "shards", "last")
    }
    config_pool = f"haul:{SOURCE_TOKEN_ENV}+{TARGET_TOKEN_ENV}"
    assert pools == {
        "first": config_pool,
        "shards": f"haul:{TARGET_TOKEN_ENV}+SRC_1+SRC_2",
        "last": config_pool,
    }
