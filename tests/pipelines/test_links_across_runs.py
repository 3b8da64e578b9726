"""Links across runs, end to end over real sockets: a migration done queue by queue, one store.

A link whose other end is in a queue not migrated yet waits (neither loaded nor failed, named
by `haul status` and the report) and is made by the run that brings its other end in, without
`--retry-failed`; one whose other end never comes stays waiting, named. The tiny org's DEV
queue links to OPS and to TEST (which the target knows as NEW).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.status import gather_status
from haul.pipelines.config import load_config
from haul.pipelines.engine import retry_failed_rows
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import counts_table, run_haul, tokens_env
from tests.helpers.cli_fixtures import write_config as write_cli_config
from tests.helpers.crash_runs import finish, kill_when
from tests.helpers.haul_fixtures import TOKEN_ENV, client_for, environ, write_config

MAPPING = {"TEST": "NEW"}


def plain_links(info: dict[str, Any], org: str, queues: list[str]) -> set[tuple[str, str, str]]:
    """Every link of the issues of `queues` in `org`, read through the plain API, as
    (issue, "type direction", other issue) with the target's keys named as the source's."""
    back = {target: source for source, target in MAPPING.items()} if org == "target" else {}

    def source_key(key: str) -> str:
        queue, _, number = key.partition("-")
        return f"{back.get(queue, queue)}-{number}"

    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    found = set()
    with httpx.Client(base_url=info["tracker"], headers=headers, timeout=30) as client:
        for queue in queues:
            issues = client.post(
                "/issues/_search", params={"perPage": 1000}, json={"query": f"Queue: {queue}"}
            ).json()
            for issue in issues:
                for link in client.get(f"/issues/{issue['key']}/links").json():
                    kind = f"{link['type']['id']} {direction(link)}"
                    found.add((source_key(issue["key"]), kind, source_key(link["object"]["key"])))
    return found


def direction(link: dict[str, Any]) -> str:
    """A link's direction from its issue; "both" for "relates", whose two ends are alike
    (made from either end, it is the same link)."""
    return "both" if link["type"]["id"] == "relates" else str(link["direction"])


def links_between(links: set[tuple[str, str, str]], a: str, b: str) -> set[tuple[str, str, str]]:
    """The links of `links` from queue `a` to queue `b`."""
    return {link for link in links if link[0].startswith(f"{a}-") and link[2].startswith(f"{b}-")}


def test_a_queue_by_queue_migration_makes_every_link_in_the_run_that_brings_its_end_in(
    sandbox: Any, tmp_path: Path
) -> None:
    """`haul run` of DEV alone: exit 0, its links to OPS and TEST wait, `haul status` counts
    and names them. `haul run` of OPS and TEST next (same store, no --retry-failed): exit 0,
    and every link of the source is in the target, once, read through the plain API."""
    info = sandbox.info
    env = tokens_env(info["tokens"]["admin"])
    source = plain_links(info, "source", ["DEV", "OPS", "TEST"])
    crossing = links_between(source, "DEV", "OPS") | links_between(source, "DEV", "TEST")
    assert crossing  # the seeded org links DEV to both

    config = write_cli_config(tmp_path, info, queues=["DEV"], queue_mapping=MAPPING)
    first = run_haul("run", "--config", config, env=env)
    assert first.returncode == 0, first.stderr
    assert "failed" not in first.stderr and "haul status names them" in first.stderr
    links = counts_table(first.stdout)["link"]
    assert links["waiting"] == len(crossing) and links["failed"] == 0
    status = run_haul("status", "--config", config, env=env)
    assert status.returncode == 0, status.stderr
    assert counts_table(status.stdout)["link"]["waiting"] == len(crossing)
    named = [line for line in status.stdout.splitlines() if line.startswith("waiting: link DEV-")]
    assert len(named) == len(crossing)
    assert all("waits for issue " in line for line in named)
    assert "outside the migration's scope so far" in status.stdout
    report = json.loads((tmp_path / "staging" / "report.json").read_text(encoding="utf-8"))
    assert report["waiting_count"] == len(crossing) and report["headline"]["ok"]

    config = write_cli_config(tmp_path, info, queues=["OPS", "TEST"], queue_mapping=MAPPING)
    second = run_haul("run", "--config", config, env=env)

    assert second.returncode == 0, second.stdout
    assert "waiting" not in counts_table(second.stdout)["link"]  # the column: only if any waits
    target = plain_links(info, "target", ["DEV", "OPS", "NEW"])
    assert target == source
    status = run_haul("status", "--config", config, env=env)
    assert "waiting: " not in status.stdout


async def test_a_link_whose_other_end_never_comes_stays_waiting_and_named(
    sandbox: Any, tmp_path: Path
) -> None:
    """DEV, then OPS: the DEV-OPS links are made by the second run, the DEV-TEST ones still
    wait, each named with the issue it waits for; nothing failed, and a third run writes
    nothing again (each link made once)."""
    info = sandbox.info
    source = plain_links(info, "source", ["DEV", "OPS", "TEST"])
    never = links_between(source, "DEV", "TEST")
    await run_all(
        load_config(write_config(tmp_path, info, queues=["DEV"])),
        all_services(),
        environ=environ(info),
    )
    config = load_config(write_config(tmp_path, info, queues=["OPS"]))

    second = await run_all(config, all_services(), environ=environ(info))
    third = await run_all(config, all_services(), environ=environ(info))

    assert second.failed == 0 and second.complete
    target = plain_links(info, "target", ["DEV", "OPS"])
    assert links_between(target, "DEV", "OPS") == links_between(source, "DEV", "OPS")
    assert links_between(target, "OPS", "DEV") == links_between(source, "OPS", "DEV")
    assert not links_between(target, "DEV", "NEW")
    assert third.details["loaded"] == 0 and third.failed == 0
    with StagingStore.open(config.staging_path) as store:
        status = gather_status(store, services())
    waiting_dev = [w for w in status.waiting if w.source_id.startswith("DEV-")]
    assert len(waiting_dev) == len(never)
    assert {w.reason.split()[3].rstrip(",") for w in waiting_dev} == {link[2] for link in never}
    assert "wait for records outside the migration's scope" in status.next_action()


async def project_issue_links(info: dict[str, Any], org: str) -> set[tuple[str, str, str]]:
    """Every project's links to issues in `org`, through the plain API, as (project summary,
    type, issue key named as the source's)."""
    back = {target: source for source, target in MAPPING.items()} if org == "target" else {}
    found = set()
    async with client_for(info, org) as client:
        async for project in client.search_entities("project", fields="summary"):
            summary = str(project["fields"]["summary"])
            for link in await client.list_entity_links("project", str(project["id"])):
                if link.get("entityType") != "issue":
                    continue
                queue, _, number = str(link["linkFieldValues"]["key"]).partition("-")
                found.add((summary, str(link["type"]), f"{back.get(queue, queue)}-{number}"))
    return found


async def test_a_projects_links_to_issues_of_a_later_queue_wait_and_are_made_then(
    sandbox: Any, tmp_path: Path
) -> None:
    """The planning layer's links too: with DEV alone, the projects' links to OPS and TEST
    issues wait (none failed); the run of OPS and TEST makes them, and the target's projects
    link to the same issues as the source's."""
    info, scope = sandbox.info, {"entities": "all"}
    config = load_config(write_config(tmp_path, info, queues=["DEV"], scope=scope))
    first = await run_all(config, all_services(), environ=environ(info))
    waiting = {row.entity: row.waiting for row in first.counts}
    assert first.failed == 0 and waiting["entity_link"] > 0

    config = load_config(write_config(tmp_path, info, queues=["OPS", "TEST"], scope=scope))
    second = await run_all(config, all_services(), environ=environ(info))

    assert second.failed == 0 and second.waiting == 0 and second.complete
    source = await project_issue_links(info, "source")
    assert source and await project_issue_links(info, "target") == source


@pytest.mark.fast
def test_retry_failed_tries_the_waiting_links_again_too(tmp_path: Path) -> None:
    """`haul load --retry-failed` puts waiting rows back to pending with the failed ones: the
    issue a link waits for may have come into the target another way."""
    with StagingStore.open(tmp_path / "haul.db") as store:
        store.ledger.plan(
            {"entity": "link", "source_id": key, "payload_hash": "h"} for key in ("A-1/1", "A-2/2")
        )
        store.ledger.wait("link", "A-1/1", "waits for issue B-1")
        store.ledger.fail("link", "A-2/2", "no")

        assert retry_failed_rows(store) == 2
        assert store.ledger.counts() == {"link": {"pending": 2}}


def links_done(db: Path) -> int:
    """Link rows loaded so far, read beside the running load."""
    with StagingStore.open(db) as store:
        return store.ledger.counts().get("link", {}).get("done", 0)


def more_links_than(db: Path) -> Callable[[], bool]:
    """Whether the load has made a link since now."""
    start = links_done(db)
    return lambda: links_done(db) > start


@pytest.mark.slow  # 45 s on a busy machine; the queue-by-queue run above is its faster kind
def test_the_run_that_makes_the_waiting_links_killed_and_resumed_makes_each_once(
    tmp_path: Path,
) -> None:
    """DEV first; then the load of OPS and TEST SIGKILLed while it makes links (a third of the
    link imports' replies lost after the write), resumed to the end: every link of the source
    is in the target, none twice (the target refuses a second link of a pair, so a link sent
    twice would fail its row)."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        finish(write_config(tmp_path, info, queues=["DEV"]), "run", env)
        config = write_config(tmp_path, info, queues=["OPS", "TEST"])
        finish(config, "extract", env)
        sandbox.set_faults("drop_after:0.3@*/links/_import")
        rng, kills = random.Random(37), 0
        for _ in range(12):
            if kills == 3:
                break
            ready = more_links_than(config.parent / "haul.db")
            kills += kill_when(config, env, rng, ready, stage="load", exits=(0,))
        finish(config, "load", env)
        sandbox.set_faults("")

        assert kills == 3
        assert plain_links(info, "target", ["DEV", "OPS", "NEW"]) == plain_links(
            info, "source", ["DEV", "OPS", "TEST"]
        )
