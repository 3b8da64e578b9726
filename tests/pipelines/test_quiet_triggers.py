"""A later run's imports fire no trigger: the triggers and autoactions haul made in a queue are
switched off while the run loads that queue's issues, and on again after its load; a run
killed in between leaves them named in its checkpoint, and the next run switches them on.

The tiny org moves into the sandbox's empty org; an issue is then created at the source, in a
queue whose triggers listen for new issues, and a second run imports it (the sandbox counts
each trigger's firings).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.commands.run import extract, load, open_clients, open_store, run_all
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.planning.quiet_rules import QUIET_RULES
from tests.helpers.cli_fixtures import finish, haul_env, run_haul, start_haul, wait_for
from tests.helpers.haul_fixtures import environ, source_queues, write_config
from tests.helpers.sandbox_clients import tracker_call


@dataclass
class Orgs:
    info: dict[str, Any]
    config: Config
    sandbox: Any = None  # the running sandbox: its faults and holds

    def call(self, org: str, method: str, path: str, **kwargs: Any) -> Any:
        return tracker_call(self.info, org, method, path, **kwargs)

    def new_source_issue(self, queue: str, summary: str) -> str:
        made = self.call("source", "POST", "/issues", json={"queue": queue, "summary": summary})
        return str(made["key"])

    def active(self, org: str, queue: str) -> dict[str, bool]:
        return {t["name"]: t["active"] for t in self.call(org, "GET", f"/queues/{queue}/triggers")}

    def autoactions(self, org: str, queue: str) -> dict[str, bool]:
        listed = self.call(org, "GET", f"/queues/{queue}/autoactions")
        return {a["name"]: a["active"] for a in listed}

    def served(self) -> dict[str, int]:
        """Requests the sandbox served so far, by route."""
        return dict(self.call("source", "GET", "/_sandbox/stats")["by_route"])

    def fired(self, queue: str) -> int:
        return int(self.call("empty", "GET", f"/_sandbox/queues/{queue}/triggers/firings")["total"])

    def run(self) -> Any:
        summary = asyncio.run(run_all(self.config, all_services(), environ=environ(self.info)))
        assert summary.failed == 0, summary
        return summary


@pytest.fixture()
def orgs(tmp_path: Path) -> Iterator[Orgs]:
    """The tiny org moved once into the empty org (no queue mapping)."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        path = write_config(tmp_path, info, queues=source_queues(info), mapping={})
        text = path.read_text(encoding="utf-8")
        target = f'org_id = "{info["orgs"]["target"]}"'
        path.write_text(text.replace(target, f'org_id = "{info["orgs"]["empty"]}"'), "utf-8")
        orgs = Orgs(info, load_config(path), sandbox)
        orgs.run()
        yield orgs


def _listening_queue(orgs: Orgs, *, automated: bool = False) -> str:
    """A queue whose target triggers listen for new issues, one of them active (and, when
    `automated`, with the autoactions the seed puts on one queue)."""
    for queue in source_queues(orgs.info):
        if automated and not orgs.autoactions("empty", queue):
            continue
        triggers = orgs.call("empty", "GET", f"/queues/{queue}/triggers")
        if any(t["active"] and {"type": "Event.create"} in t["conditions"] for t in triggers):
            return queue
    raise AssertionError("no queue has an active trigger listening for new issues")


def test_a_later_runs_import_fires_no_trigger_and_leaves_them_on(orgs: Orgs) -> None:
    """The second run imports the new issue with no firing, and every trigger reads as
    active (or not) as at the source afterwards."""
    queue = _listening_queue(orgs)
    before = orgs.active("empty", queue)
    assert orgs.fired(queue) == 0
    key = orgs.new_source_issue(queue, "Found after the migration")
    asyncio.run(extract(orgs.config, all_services(), environ=environ(orgs.info)))
    served = orgs.served()
    loaded = asyncio.run(load(orgs.config, all_services(), environ=environ(orgs.info)))
    assert loaded.failed == 0, loaded
    sent = {route: n - served.get(route, 0) for route, n in orgs.served().items()}  # the load's
    assert orgs.call("empty", "GET", f"/issues/{key}")["summary"] == "Found after the migration"
    assert orgs.fired(queue) == 0
    assert orgs.active("empty", queue) == before == orgs.active("source", queue)
    assert orgs.autoactions("empty", queue) == orgs.autoactions("source", queue)
    # the queue's rules read once, by its two listings, to know which are active; each
    # active one switched off under the version read, then on under the version its switch
    # off answered: no rule read by itself
    kinds = bool(before) + bool(orgs.autoactions("empty", queue))
    one = ("/v3/queues/{queue}/triggers/{trigger_id}", "/v3/queues/{queue}/autoactions/{action_id}")
    listings = ("/v3/queues/{queue}/triggers", "/v3/queues/{queue}/autoactions")
    reads = sum(sent.get(f"GET {path}", 0) for path in one)
    listed = sum(sent.get(f"GET {path}", 0) for path in listings)
    switches = sum(sent.get(f"PATCH {path}", 0) for path in one)
    assert switches > 0 and switches % 2 == 0
    assert reads == 0 and listed == kinds


def test_a_rule_a_person_edits_during_the_load_goes_back_on_as_they_left_it(orgs: Orgs) -> None:
    """The load is held at its import; meanwhile a person renames a trigger haul switched off
    for it (its version moves on). Released, the switch on under the version the switch off
    answered is refused as stale: haul reads the trigger and switches it on under the new
    one, the person's name kept."""
    queue = _listening_queue(orgs)
    triggers = orgs.call("empty", "GET", f"/queues/{queue}/triggers")
    path = f"/queues/{queue}/triggers/{next(t['id'] for t in triggers if t['active'])}"
    orgs.new_source_issue(queue, "Imported while a person edits a trigger")
    asyncio.run(extract(orgs.config, all_services(), environ=environ(orgs.info)))
    orgs.sandbox.set_faults("hold:imports:writes@/v3/issues/_import")
    try:
        running = start_haul("load", "--config", orgs.config.folder / "haul.toml",
                             env=haul_env(environ(orgs.info)))  # fmt: skip
        wait_for(lambda: orgs.sandbox.held("imports"), 60, "the load's import to be held")
        off = orgs.call("empty", "GET", path)
        assert off["active"] is False  # switched off for the load
        renamed = {"name": "Renamed by a person"}
        orgs.call("empty", "PATCH", path, params={"version": off["version"]}, json=renamed)
        orgs.sandbox.release("imports")
        out, err = finish(running)
    finally:
        orgs.sandbox.set_faults("")
    assert running.returncode == 0, out + err
    after = orgs.call("empty", "GET", path)
    assert after["active"] is True and after["name"] == "Renamed by a person"
    assert after["version"] == off["version"] + 2  # the person's edit, then the switch on


async def _switch_off_and_die(orgs: Orgs) -> None:
    """What a run does before its load, then nothing: the process is killed there."""
    async with open_clients(
        orgs.config, all_services(), environ(orgs.info), orgs.config.target
    ) as (targets,):
        with open_store(orgs.config.staging_path) as store:
            service, client = next(pair for pair in targets if pair[0].name == "tracker")
            parts = await service.target(orgs.config, client, store)
            assert parts.holding is not None
            await parts.holding().__aenter__()  # never left: no `finally` runs on a SIGKILL


def test_a_run_killed_with_the_triggers_off_leaves_them_to_the_next_run(orgs: Orgs) -> None:
    """Killed after switching the triggers off: they stay off, and `haul status` names each
    of them and says what to do; the next run imports the issue without a firing and switches
    them on again."""
    queue = _listening_queue(orgs, automated=True)
    before, automatic = orgs.active("empty", queue), orgs.autoactions("empty", queue)
    assert any(automatic.values())
    orgs.new_source_issue(queue, "Found after the migration")
    asyncio.run(extract(orgs.config, all_services(), environ=environ(orgs.info)))
    asyncio.run(_switch_off_and_die(orgs))
    assert not any(orgs.active("empty", queue).values())
    assert not any(orgs.autoactions("empty", queue).values())
    with open_store(orgs.config.staging_path) as store:
        assert (store.get_checkpoint(QUIET_RULES) or {}).get("rules")
    status = run_haul("status", "--config", orgs.config.folder / "haul.toml",
                      env=haul_env(environ(orgs.info)))  # fmt: skip
    assert status.returncode == 0, status.stderr
    held = [line for line in status.stdout.splitlines() if "left by a stopped load" in line]
    off = {**before, **automatic}
    assert len(held) == sum(off.values())  # each one the run switched off, by name
    for name, active in off.items():
        assert any(f"'{name}' in queue {queue}" in line for line in held) == active, name
    (last,) = [line for line in status.stdout.splitlines() if line.startswith("next: ")]
    assert f"left {len(held)} held in the target" in last and "run haul load" in last
    orgs.run()
    assert orgs.fired(queue) == 0
    assert orgs.active("empty", queue) == before
    assert orgs.autoactions("empty", queue) == automatic
    with open_store(orgs.config.staging_path) as store:
        assert store.get_checkpoint(QUIET_RULES) == {"rules": []}
