"""Crash tests of the wiki and forms stages: `haul extract` and `haul load` each SIGKILLed twice at random
instants, resumed, with 5% of requests dropped after the service applied them; the target ends
as an uninterrupted run's: every page, attachment, grid and comment once, one issue per answer.

Two sandboxes with the same seed serve identical source orgs; the first is migrated in one
run, the second through the kills and drops. Their targets are read back and compared, with
who reads each page (by login): the restricted pages of `team/runbooks` come through as the
source has them however the load was cut.
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path
from typing import Any

from haul.state.store import StagingStore
from tests.helpers.crash_runs import finish, kill_when
from tests.helpers.forms_backfill import client, write_config
from tests.helpers.haul_fixtures import TOKEN_ENV
from tests.helpers.wiki_fixtures import roles
from tests.helpers.wiki_snapshot import wiki_snapshot

KILLS_PER_STAGE = 2


def progress(db: Path, stage: str) -> int:
    """Records staged (extract) or loaded (load) so far, read beside the running process."""
    if not db.exists():
        return 0
    try:
        with StagingStore.open(db) as store:
            if stage == "extract":
                return sum(store.count_records().values())
            return sum(states.get("done", 0) for states in store.ledger.counts().values())
    except Exception:  # the schema may not be there yet
        return 0


def kill_mid_work(config: Path, stage: str, env: dict[str, str], rng: random.Random) -> bool:
    db = config.parent / "haul.db"
    threshold = progress(db, stage) + rng.randint(1, 40)

    def ready() -> bool:
        return progress(db, stage) >= threshold

    return kill_when(config, env, rng, ready, stage=stage, jitter=0.05)


def target_of(info: dict[str, Any]) -> dict[str, Any]:
    roots = {"team/runbooks": "team/runbooks"}

    async def read() -> dict[str, Any]:
        async with (
            client(info, "wiki", "target") as wiki,
            client(info, "tracker", "target") as tracker,
        ):
            issues = []
            async for issue in tracker.search_issues(query="Queue: NEW", per_page=100):
                files = await tracker.list_attachments(issue["key"])
                issues.append((issue["unique"], issue["summary"], issue["createdAt"], len(files)))
            return {"wiki": await wiki_snapshot(wiki, roots), "issues": sorted(issues)}

    snapshot = asyncio.run(read())
    snapshot["readers"] = {
        key: roles(info, "target", key) for key in snapshot["wiki"]
    }  # the root keeps its slug: keys are target slugs
    return snapshot


def test_kills_and_dropped_replies_leave_the_target_as_one_clean_run(tmp_path: Path) -> None:
    from haul.sandbox import server as sandbox_server

    rng = random.Random(23)
    with (
        sandbox_server.start_sandbox(size="tiny", seed=13) as clean,
        sandbox_server.start_sandbox(size="tiny", seed=13) as crashed,
    ):
        env = {**os.environ, TOKEN_ENV: clean.info["tokens"]["admin"]}
        finish(write_config(tmp_path / "clean", clean.info), "run", env)
        expected = target_of(clean.info)
        assert expected["issues"] and expected["wiki"]
        for slug in ("team/runbooks/private-notes", "team/runbooks/shared/details"):
            assert expected["readers"][slug] == roles(clean.info, "source", slug), slug

        config = write_config(tmp_path / "crashed", crashed.info)
        env = {**os.environ, TOKEN_ENV: crashed.info["tokens"]["admin"]}
        kills = {"extract": 0, "load": 0}
        for stage in ("extract", "load"):
            if stage == "load":
                crashed.set_faults("drop_after:0.05")
            for _ in range(3 * KILLS_PER_STAGE):
                if kills[stage] >= KILLS_PER_STAGE:
                    break
                kills[stage] += kill_mid_work(config, stage, env, rng)
            finish(config, stage, env)
        crashed.set_faults("")
        finish(config, "run", env)  # the count check, on the resumed state
        assert kills["extract"] >= 1 and kills["load"] >= 1, kills
        print("kills", kills, "requests", crashed.stats()["requests"])
        got = target_of(crashed.info)
        assert got == expected
