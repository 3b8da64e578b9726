"""Crash test of the planning layer: `haul load` SIGKILLed while projects, portfolios and goals
(with their access, comments, checklists, files and links) are in flight, then resumed, leaves
each of them once in the target.

The tiny org is extracted once with `[scope] entities = "all"`; `haul load` runs are killed at
random instants after a random number of the entity phase's ledger rows are done (the issues
load in the first run, before any kill), some with the replies of the entity writes lost after
they were applied; the last run ends the load. Through the official SDK, each target entity
appears once, and reads as the source's does migrated (tests/pipelines/test_planning_entities.py
shows an uninterrupted run reads so): every comment, checklist item, file and link once.
"""

from __future__ import annotations

import asyncio
import os
import random
from functools import partial
from pathlib import Path

import pytest

from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.crash_runs import finish, kill_when
from tests.helpers.entity_snapshot import change_at_source, sdk_client, unlike_the_source
from tests.helpers.haul_fixtures import TOKEN_ENV, environ, source_queues, write_config

ENTITY_ROWS = (
    "portfolio", "project", "goal", "entity_access", "entity_comment", "entity_checklist",
    "entity_attachment", "entity_link",
)  # fmt: skip
# the entity requests slowed, so that a kill lands among them rather than after them all
SLOWED = "latency:10+10@*/entities/*"
# an entity's import, comment, checklist, file, link or permission edit applied, its reply lost
DROPPED_ENTITY_WRITES = f"{SLOWED},drop_after:0.2@*/entities/*"


def entity_rows_done(db: Path) -> int:
    """The entity phase's ledger rows done so far, read beside the running process (read
    only: a reader that may write would hold the lock the process needs)."""
    with StagingStore.open_readonly(db) as store:
        counts = store.ledger.counts()
        return sum(counts.get(entity, {}).get("done", 0) for entity in ENTITY_ROWS)


def entity_rows(db: Path) -> int:
    with StagingStore.open_readonly(db) as store:
        counts = store.ledger.counts()
        return sum(sum(counts.get(entity, {}).values()) for entity in ENTITY_ROWS)


def less_work_than(db: Path, left: int) -> bool:
    return entity_work_left(db) < left


def entity_work_left(db: Path) -> int:
    """The entity rows still to load, and the loaded ones changed at the source since."""
    with StagingStore.open_readonly(db) as store:
        counts = store.ledger.counts()
        pending = sum(counts.get(entity, {}).get("pending", 0) for entity in ENTITY_ROWS)
        return pending + sum(len(list(store.ledger.iter_changed(e))) for e in ENTITY_ROWS)


def kill_in_entity_phase(
    config: Path, env: dict[str, str], rng: random.Random, kills_left: int
) -> bool:
    """Start `haul load`, SIGKILL it a random few milliseconds after a random number more of
    the entity rows are done; True if it was killed with entity rows left to load."""
    db = config.parent / "haul.db"
    start, total = entity_rows_done(db), entity_rows(db)
    # within the first 70 %: the links load last, many at once, too fast to stop among them
    spread = int(total * 0.7) - start
    threshold = start + rng.randint(1, max(1, spread // (kills_left + 1)))
    if not kill_when(config, env, rng, lambda: entity_rows_done(db) >= threshold):
        return False
    return entity_rows_done(db) < total  # killed with entity rows left


@pytest.mark.parametrize(
    ("faults", "kills"),
    [
        # the default run's representative: kills, and entity writes whose reply is lost
        pytest.param(DROPPED_ENTITY_WRITES, 4, id="kills+dropped-entity-writes"),
        pytest.param("latency:20+20@*/entities/*", 7, id="kills", marks=pytest.mark.slow),
    ],
)
def test_killed_in_the_entity_phase_loads_each_entity_and_sub_record_once(
    tmp_path: Path, faults: str, kills: int
) -> None:
    """SIGKILL `haul load` `kills` times while the entity rows load, resume: every entity,
    comment, checklist item, file and link is in the target once, as the source's migrated,
    and verify finds no difference."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        scope = {"entities": "all"}
        config = write_config(tmp_path, info, queues=source_queues(info), scope=scope)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        finish(config, "extract", env)
        sandbox.set_faults(faults)
        rng = random.Random(f"entities:{faults}")
        killed = 0
        for _attempt in range(3 * kills):
            if killed == kills:
                break
            killed += kill_in_entity_phase(config, env, rng, kills - killed)
        finish(config, "load", env)
        sandbox.set_faults("")

        source, target = sdk_client(info, "source"), sdk_client(info, "target")
        assert killed == kills
        assert unlike_the_source(source, target) == {}  # each entity, each sub-record once
        verified = asyncio.run(verify(load_config(config), all_services(), environ=environ(info)))
        assert verified.ok, verified.differences[:5]


@pytest.mark.slow  # the entity phase's kills above are the default run's entity kill test
def test_a_sync_killed_among_its_entity_changes_carries_each_once(tmp_path: Path) -> None:
    """After a complete first run, one change of each kind at the source (a project's fields,
    a comment edited and one added, a checklist changed and one emptied, a goal renamed and
    made team-only);
    the sync's `haul load` is SIGKILLed while those are carried, with replies lost after the
    writes, then resumed: the target reads as the source's migrated, each change once."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        scope = {"entities": "all"}
        config = write_config(tmp_path, info, queues=source_queues(info), scope=scope)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        finish(config, "run", env)
        change_at_source(sdk_client(info, "source"))
        finish(config, "extract", env)
        db = config.parent / "haul.db"
        assert entity_work_left(db) >= 5
        sandbox.set_faults(DROPPED_ENTITY_WRITES)
        rng = random.Random("entity-sync")
        killed = 0
        for _attempt in range(6):
            left = entity_work_left(db)
            if killed == 2 or not left:
                break
            killed += kill_when(config, env, rng, partial(less_work_than, db, left))
        finish(config, "load", env)
        sandbox.set_faults("")

        source, target = sdk_client(info, "source"), sdk_client(info, "target")
        assert killed >= 1
        assert unlike_the_source(source, target) == {}
        verified = asyncio.run(verify(load_config(config), all_services(), environ=environ(info)))
        assert verified.ok, verified.differences[:5]
