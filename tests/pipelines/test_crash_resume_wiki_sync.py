"""Crash tests of a wiki sync: after a first run, one change of each kind is made at the
source (`wiki_changes.change_everything`), and the second `haul run` (mirroring deletions) is
SIGKILLed at random instants while the sandbox drops replies after applying writes, then run
to its end. The target ends as an uninterrupted sync leaves it: every page, file, grid and
comment once, the moved page moved, the deleted ones deleted.

Two sandboxes with the same seed serve identical source orgs and take the same changes; the
first syncs in one run, the second through the kills and drops. Their targets are compared.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.helpers.crash_runs import finish, haul
from tests.helpers.haul_fixtures import TOKEN_ENV
from tests.helpers.wiki_changes import change_everything
from tests.helpers.wiki_fixtures import mapping_for, wiki_client
from tests.helpers.wiki_snapshot import wiki_snapshot

MIRROR = '[sync]\ndeletions = "mirror"\n'


def write_config(directory: Path, info: dict[str, Any]) -> Path:
    settings = SandboxConfig(
        source_token_env=TOKEN_ENV, endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=[], services=("wiki",), wiki_mapping=mapping_for(info), sections=MIRROR,
    )  # fmt: skip
    return write_sandbox_config(directory, info, settings)


def target_of(info: dict[str, Any]) -> dict[str, Any]:
    """The target's trees, with how many files each page holds (a name twice shows)."""
    roots = list(info["wiki_roots"]["source"])
    mapping = mapping_for(info)

    async def read() -> dict[str, Any]:
        async with wiki_client(info, "target") as wiki:
            pages = await wiki_snapshot(wiki, {root: mapping.get(root, root) for root in roots})
            files = {}
            for root in roots:
                async for ref in wiki.iter_descendants(mapping.get(root, root)):
                    listed = [a async for a in wiki.iter_attachments(int(ref["id"]))]
                    files[ref["slug"]] = len(listed)
            return {"pages": pages, "files": files}

    return asyncio.run(read())


def changed_at_source(info: dict[str, Any], scratch: Path) -> dict[str, str]:
    async def change() -> dict[str, str]:
        async with wiki_client(info, "source") as source:
            return await change_everything(source, list(info["wiki_roots"]["source"]), scratch)

    return asyncio.run(change())


def kill_after(config: Path, env: dict[str, str], seconds: float) -> bool:
    """Start `haul run`, SIGKILL it after `seconds` unless it ended first; True if killed."""
    process = haul(config, "run", env=env)
    deadline = time.monotonic() + seconds
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
        process.communicate()
        return True
    _, stderr = process.communicate(timeout=120)
    assert process.returncode in (0, 1, 3), stderr.decode()
    return False


@pytest.mark.parametrize(
    ("seed", "kills"),
    [pytest.param(31, 1, id="one-kill"), pytest.param(37, 4, id="kills", marks=pytest.mark.slow)],
)
def test_a_sync_killed_and_resumed_leaves_the_target_as_one_clean_sync(
    tmp_path: Path, seed: int, kills: int
) -> None:
    from haul.sandbox import server as sandbox_server

    rng = random.Random(seed)
    with (
        sandbox_server.start_sandbox(size="tiny", seed=13) as clean,
        sandbox_server.start_sandbox(size="tiny", seed=13) as crashed,
    ):
        expected_changes = None
        for sandbox, name in ((clean, "clean"), (crashed, "crashed")):
            env = {**os.environ, TOKEN_ENV: sandbox.info["tokens"]["admin"]}
            finish(write_config(tmp_path / name, sandbox.info), "run", env)
            changes = changed_at_source(sandbox.info, tmp_path)
            changes.pop("recovery_token")  # each side's own
            assert expected_changes in (None, changes)  # the same changes on both sides
            expected_changes = changes
        env = {**os.environ, TOKEN_ENV: clean.info["tokens"]["admin"]}
        finish(tmp_path / "clean" / "haul.toml", "run", env)
        expected = target_of(clean.info)

        config = tmp_path / "crashed" / "haul.toml"
        env = {**os.environ, TOKEN_ENV: crashed.info["tokens"]["admin"]}
        crashed.set_faults("drop_after:0.05")
        killed = sum(kill_after(config, env, rng.uniform(0.3, 2.5)) for _ in range(kills))
        crashed.set_faults("")
        finish(config, "run", env)
        assert killed >= 1
        assert target_of(crashed.info) == expected
