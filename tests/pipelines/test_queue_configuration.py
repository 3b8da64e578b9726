"""Every queue's configuration moves into the sandbox's empty organisation: its workflows
(statuses and transitions), its issue-type configuration (every type and resolution it allows,
used by an issue or not) and its permissions, users and groups mapped.

One `haul run` of the tiny org into the empty org (no queue mapping) is shared by the module;
before it, the source's DEV is restricted to the group `security` (the plain user is not in
it), and a thread reads DEV's issues as the plain user through the whole load. The official
SDK then reads the same configuration in both orgs; verify passes, then names the queue whose
permissions or workflow were changed in the target by hand; a later run carries a change made
at the source.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yandex_tracker_client as sdk  # a dev dependency, not our own module

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services as all_services
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import environ, source_queues, write_config

RESTRICTED = "DEV"
ENTITIES = ["workflow", "queue_config"]


def http(info: dict[str, Any], org: str, token: str = "admin") -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens'][token]}", "X-Org-ID": info["orgs"][org]}
    return httpx.Client(base_url=info["tracker"], headers=headers)


def sdk_client(info: dict[str, Any], org: str) -> Any:
    host = info["tracker"].rsplit("/v3", 1)[0]
    token, org_id = info["tokens"]["admin"], info["orgs"][org]
    return sdk.TrackerClient(token=token, org_id=org_id, base_url=host, retries=1)


def group_id(info: dict[str, Any], org: str, name: str) -> str:
    with http(info, org) as client:
        return next(str(g["id"]) for g in client.get("/groups").json() if g["name"] == name)


@dataclass
class Watch:
    """What the plain user could read of the restricted queue in the target, poll by poll."""

    info: dict[str, Any]
    seen: list[tuple[int, int]] = field(default_factory=list)  # (issues it read, issues there)
    stop: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> None:
        query = {"filter": {"queue": RESTRICTED}}
        with http(self.info, "empty", "user") as user, http(self.info, "empty") as admin:
            while True:
                last = self.stop.is_set()
                there = admin.post("/issues/_count", json=query).json()
                read = user.post("/issues/_search", json=query, params={"perPage": 1000})
                self.seen.append((len(read.json()), there))
                if last:
                    return


@dataclass
class Moved:
    info: dict[str, Any]
    config: Config
    path: Path
    summary: Any
    watch: Watch


def into_empty_org(directory: Path, info: dict[str, Any]) -> Path:
    path = write_config(directory, info, queues=source_queues(info), mapping={})
    text = path.read_text(encoding="utf-8")
    target = f'org_id = "{info["orgs"]["target"]}"'
    path.write_text(text.replace(target, f'org_id = "{info["orgs"]["empty"]}"'), "utf-8")
    return path


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Moved]:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        security = group_id(info, "source", "security")
        with http(info, "source") as source:
            restricted = source.patch(
                f"/queues/{RESTRICTED}/permissions", json={"read": {"groups": [security]}}
            )
            assert restricted.status_code == 200, restricted.text
        path = into_empty_org(tmp_path_factory.mktemp("queue-config"), info)
        config = load_config(path)
        watch = Watch(info)
        poller = threading.Thread(target=watch.poll)
        poller.start()
        try:
            summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        finally:
            watch.stop.set()
            poller.join()
        yield Moved(info, config, path, summary, watch)


def configuration(client: Any, queue: str) -> dict[str, Any]:
    """A queue's configuration as the SDK reads it, references by key or name."""
    read = client.queues[queue]
    types = sorted(
        (item["issueType"].key, item["workflow"].id, sorted(r.key for r in item["resolutions"]))
        for item in read.issueTypesConfig
    )
    workflows = {
        w["id"]: (
            sorted(step["status"].key for step in w["steps"]),
            sorted(
                (step["status"].key, action["target"].key)
                for step in w["steps"]
                for action in step["actions"]
            ),
        )
        for w in read.workflows
    }
    scheme = read.permissions
    permissions = {
        code: sorted(
            [f"user {u.display}" for u in getattr(scheme, code).users]
            + [f"group {g.display}" for g in getattr(scheme, code).groups]
            + [f"role {r.id}" for r in getattr(scheme, code).roles]
        )
        for code in ("create", "write", "read", "grant")
    }
    return {"types": types, "workflows": workflows, "permissions": permissions}


def test_every_queues_configuration_reads_the_same_through_the_sdk(moved: Moved) -> None:
    """Workflows, issue types with their resolutions, and permissions, queue by queue; the
    values no issue uses are there too (status inReview, type incident, cantReproduce)."""
    assert moved.summary.failed == 0
    source, target = sdk_client(moved.info, "source"), sdk_client(moved.info, "empty")
    for queue in source_queues(moved.info):
        assert configuration(target, queue) == configuration(source, queue), queue
    dev = configuration(target, RESTRICTED)
    assert ("incident", "classic", sorted(["fixed", "wontFix", "duplicate", "invalid", "later",
                                           "cantReproduce"])) in dev["types"]  # fmt: skip
    assert "inReview" in dev["workflows"]["classic"][0]
    assert dev["permissions"]["read"] == ["group security"]


def test_the_restricted_queue_was_never_readable_by_the_plain_user(moved: Moved) -> None:
    """At every poll during the load, and after it, the plain user read none of DEV's issues,
    while the last poll saw them all in the target."""
    seen = moved.watch.seen
    assert seen and seen[-1][1] > 0
    assert [read for read, _ in seen if read] == []


def test_verify_passes_then_names_the_queue_changed_by_hand(moved: Moved) -> None:
    """Verify compares workflows, types and permissions; a group given write in the target's
    DEV by hand, then a transition taken out of its workflow, each make `haul verify` exit 3
    naming DEV."""
    info, env = moved.info, haul_env(environ(moved.info))
    clean = asyncio.run(
        verify(moved.config, all_services(), environ=environ(info), entities=ENTITIES)
    )
    assert clean.differences == []
    finance = group_id(info, "empty", "finance")
    with http(info, "empty") as target:
        edited = target.patch(
            f"/queues/{RESTRICTED}/permissions", json={"write": {"groups": {"add": [finance]}}}
        )
        assert edited.status_code == 200, edited.text
    done = run_haul("verify", "--config", moved.path, env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"differs: queue_config {RESTRICTED} (target {RESTRICTED}) permissions" in done.stdout
    found = asyncio.run(
        verify(moved.config, all_services(), environ=environ(info), entities=ENTITIES)
    )
    assert {(d.source_id, d.field) for d in found.differences} == {(RESTRICTED, "permissions")}
    with http(info, "empty") as target:
        target.patch(
            f"/queues/{RESTRICTED}/permissions", json={"write": {"groups": {"remove": [finance]}}}
        ).raise_for_status()
        workflow = target.get("/workflows/classic").json()
        steps = [
            {**step, "actions": [a for a in step["actions"] if a["target"]["key"] != "inReview"]}
            for step in workflow["steps"]
        ]
        target.patch("/workflows/classic", json={"steps": steps}).raise_for_status()
    again = asyncio.run(
        verify(moved.config, all_services(), environ=environ(info), entities=ENTITIES)
    )
    named = {(d.entity, d.source_id) for d in again.differences}
    assert ("queue_config", RESTRICTED) in named and ("workflow", "classic") in named


def test_a_later_run_carries_changes_made_at_the_source(moved: Moved) -> None:
    """A group given write in the source's DEV, a resolution taken from one of its types and a
    transition added to the source's workflow reach the target on the next run (which also
    puts back the workflow changed there by hand above)."""
    info = moved.info
    finance = group_id(info, "source", "finance")
    with http(info, "source") as source:
        source.patch(
            f"/queues/{RESTRICTED}/permissions", json={"write": {"groups": {"add": [finance]}}}
        ).raise_for_status()
        config = source.get(f"/queues/{RESTRICTED}").json()["issueTypesConfig"]
        items = [
            {
                "issueType": item["issueType"]["key"],
                "workflow": item["workflow"]["id"],
                "resolutions": [r["key"] for r in item["resolutions"] if r["key"] != "later"],
            }
            for item in config
        ]
        source.patch(f"/queues/{RESTRICTED}", json={"issueTypesConfig": items}).raise_for_status()
        workflow = source.get("/workflows/classic").json()
        steps = [
            {**step, "actions": [*step["actions"], {"name": "Restart", "target": "inProgress"}]}
            if step["status"]["key"] == "closed"
            else step
            for step in workflow["steps"]
        ]
        source.patch("/workflows/classic", json={"steps": steps}).raise_for_status()
    summary = asyncio.run(run_all(moved.config, all_services(), environ=environ(info)))
    assert summary.failed == 0
    source, target = sdk_client(info, "source"), sdk_client(info, "empty")
    assert configuration(target, RESTRICTED) == configuration(source, RESTRICTED)
    read = configuration(target, RESTRICTED)
    assert "group finance" in read["permissions"]["write"]
    assert all("later" not in resolutions for _, _, resolutions in read["types"])
    assert ("closed", "inProgress") in read["workflows"]["classic"][1]
    clean = asyncio.run(
        verify(moved.config, all_services(), environ=environ(info), entities=ENTITIES)
    )
    assert clean.differences == []


@pytest.mark.slow
def test_the_small_org_moves_with_every_queues_configuration(tmp_path: Path) -> None:
    """The same on the small org (1 000 issues, five queues): every queue's configuration reads
    the same through the SDK, and verify finds no difference."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="small", seed=5) as sandbox:
        info = sandbox.info
        config = load_config(into_empty_org(tmp_path, info))
        summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        assert summary.failed == 0
        source, target = sdk_client(info, "source"), sdk_client(info, "empty")
        for queue in source_queues(info):
            assert configuration(target, queue) == configuration(source, queue), queue
        found = asyncio.run(
            verify(config, all_services(), environ=environ(info), entities=ENTITIES)
        )
        assert found.differences == []


def test_a_queue_whose_permissions_the_target_refuses_takes_no_issue(tmp_path: Path) -> None:
    """The target refuses DEV's permission scheme right after making DEV: the queue's row
    fails, and so does every issue of DEV (none is imported into a queue open to everyone);
    once the target takes it, `--retry-failed` sets the scheme first, then the issues."""
    from haul.pipelines.commands.run import extract, load
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        security = group_id(info, "source", "security")
        with http(info, "source") as source:
            source.patch(
                f"/queues/{RESTRICTED}/permissions", json={"read": {"groups": [security]}}
            ).raise_for_status()
        config = load_config(into_empty_org(tmp_path, info))
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        sandbox.set_faults(f"refuse:1@/v3/queues/{RESTRICTED}/permissions")
        refused = asyncio.run(load(config, all_services(), environ=environ(info)))
        query = {"filter": {"queue": RESTRICTED}}
        with http(info, "empty") as target:
            assert target.get(f"/queues/{RESTRICTED}").status_code == 200  # made, then refused
            assert target.post("/issues/_count", json=query).json() == 0
        assert refused.failed > 0
        sandbox.set_faults("")
        retried = asyncio.run(
            load(config, all_services(), environ=environ(info), retry_failed=True)
        )
        assert retried.failed == 0
        with http(info, "empty") as target, http(info, "empty", "user") as user:
            assert target.post("/issues/_count", json=query).json() > 0
            assert user.post("/issues/_search", json=query).json() == []
        assert configuration(sdk_client(info, "empty"), RESTRICTED)["permissions"]["read"] == [
            "group security"
        ]
