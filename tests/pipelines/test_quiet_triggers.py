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

from haul.pipelines.commands.run import extract, open_clients, open_store, run_all
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.planning.quiet_rules import QUIET_RULES
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import environ, source_queues, write_config
from tests.helpers.sandbox_clients import tracker_call


@dataclass
class Orgs:
    info: dict[str, Any]
    config: Config

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
        orgs = Orgs(info, load_config(path))
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
    served = orgs.served()
    orgs.run()
    sent = {route: n - served.get(route, 0) for route, n in orgs.served().items()}
    assert orgs.call("empty", "GET", f"/issues/{key}")["summary"] == "Found after the migration"
    assert orgs.fired(queue) == 0
    assert orgs.active("empty", queue) == before == orgs.active("source", queue)
    assert orgs.autoactions("empty", queue) == orgs.autoactions("source", queue)
    # each rule of the queue read once to know it is active; each active one switched off
    # under that read's version, then read again (after the load) and switched back on
    rules = len(before) + len(orgs.autoactions("empty", queue))
    one = ("/v3/queues/{queue}/triggers/{trigger_id}", "/v3/queues/{queue}/autoactions/{action_id}")
    reads = sum(sent.get(f"GET {path}", 0) for path in one)
    switches = sum(sent.get(f"PATCH {path}", 0) for path in one)
    assert switches > 0 and reads == rules + switches // 2


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
