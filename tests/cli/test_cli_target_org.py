"""A store knows its target: after a run into the sandbox's target org, a config pointed at
another org (copied from another environment) makes load, run and undo stop with exit 2
before anything is written there, naming both orgs; the store is left as it was."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import TOKEN_ENV, write_config, writes


@dataclass(frozen=True)
class Loaded:
    """A sandbox whose TEST queue was run into the target org, and the run's config."""

    sandbox: RunningSandbox
    config: Path

    def haul(self, *args: str, config: Path | None = None) -> Any:
        env = haul_env({TOKEN_ENV: self.sandbox.info["tokens"]["admin"]})
        return run_haul(*args, "--config", config or self.config, env=env)

    def pointed_at(self, name: str, old: str, new: str) -> Path:
        """A copy of the config, beside it (so the same store), with `old` made `new`."""
        text = self.config.read_text(encoding="utf-8")
        assert text.count(old) == 1, old
        other = self.config.with_name(name)
        other.write_text(text.replace(old, new), encoding="utf-8")
        return other

    def another_org(self) -> Path:
        orgs = self.sandbox.info["orgs"]
        return self.pointed_at(
            "elsewhere.toml", f'org_id = "{orgs["target"]}"', f'org_id = "{orgs["empty"]}"'
        )

    def state(self) -> tuple[list[Any], list[dict[str, Any]]]:
        """The store's ledger rows and run history."""
        with StagingStore.open_readonly(self.config.parent / "haul.db") as store:
            return list(store.ledger.iter_rows()), store.recent_runs(100)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    with start_sandbox(size="tiny", seed=5) as sandbox:
        config = write_config(tmp_path_factory.mktemp("target_org"), sandbox.info,
                              queues=["TEST"])  # fmt: skip
        state = Loaded(sandbox, config)
        ran = state.haul("run")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        yield state


@pytest.mark.parametrize("command", [("undo", "--yes"), ("load",), ("run",)])
def test_a_writing_command_with_another_orgs_config_stops_before_writing(
    loaded: Loaded, command: tuple[str, ...]
) -> None:
    """Exit 2 naming the org the store loaded and the one configured; no write reaches the
    sandbox (no DELETE, no import), the ledger and the run history are as they were."""
    before, sent = loaded.state(), writes(loaded.sandbox.stats())
    orgs = loaded.sandbox.info["orgs"]

    refused = loaded.haul(*command, config=loaded.another_org())

    assert refused.returncode == 2, refused.stdout + refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert f"the store loaded {loaded.sandbox.info['tracker']} with org_id {orgs['target']}" in last
    assert f"the config names {loaded.sandbox.info['tracker']} with org_id {orgs['empty']}" in last
    assert "Traceback" not in refused.stderr
    assert writes(loaded.sandbox.stats()) == sent
    assert loaded.state() == before


def test_the_same_target_spelled_with_a_trailing_slash_is_accepted(loaded: Loaded) -> None:
    """After the refusals, undo with the store's own org (its URL ending in /) still finds
    everything the run loaded to take back (a dry run: nothing is deleted)."""
    url = loaded.sandbox.info["tracker"]
    respelled = loaded.pointed_at(
        "slash.toml",
        f'[target]\ntracker_url = "{url}"',
        f'[target]\ntracker_url = "{url}/"',
    )

    planned = loaded.haul("undo", "--dry-run", config=respelled)

    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "already taken back by an earlier undo: 0" in planned.stdout
    assert "comment" in planned.stdout
