"""`haul check` names, per migrated queue, each mapped user and group whose permissions in the
target queue differ from the source queue's, and leaves alike ones unnamed (warnings: the
check still passes, exit 0, and writes nothing). One extract of a tiny sandbox serves the
module.

The sandbox's target org differs from the source in DEV (support may not write) and TEST (bob
may grant); TEST maps to NEW here, which follows the scheme the source's TEST does. The users
asked about are those on a queue's staged issues (see `pipelines.tracker.organisation.queue_permissions`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.connectors.tracker import TrackerClient
from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.run import extract
from haul.pipelines.config import Config, load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.findings import Finding
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.organisation.queue_permissions import queue_permission_findings
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import TOKEN_ENV, environ, source_queues, write_config


@pytest.fixture(scope="module")
def migration(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Config]]:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as running:
        info = running.info
        folder = tmp_path_factory.mktemp("queue_permissions")
        config = load_config(write_config(folder, info, queues=source_queues(info)))
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        yield running, config


def check(running: Any, config: Config) -> list[Finding]:
    return asyncio.run(run_check(config, all_services(), environ(running.info)))


def grant(running: Any, queue: str, kind: str, holder: str, codes: list[str]) -> None:
    """Set one holder's own grants in a target queue (the sandbox's control route)."""
    info = running.info
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    host = info["tracker"].rsplit("/v3", 1)[0]
    path = f"{host}/_sandbox/queues/{queue}/permissions/{kind}/{holder}"
    httpx.put(path, json={"permissions": codes}, headers=headers).raise_for_status()


def group_id(running: Any, name: str) -> str:
    info = running.info
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    groups = httpx.get(f"{info['tracker']}/groups", headers=headers).json()
    return next(str(group["id"]) for group in groups if group["name"] == name)


def lines(findings: list[Finding], queue: str) -> dict[str, str]:
    """The queue's differences: holder ("user bob") -> the whole line."""
    prefix = f"queue {queue}: "
    found = {}
    for finding in findings:
        if finding.what.startswith(prefix):
            assert finding.level == "warning", finding
            holder, _, _ = finding.what.removeprefix(prefix).partition(" may ")
            found[holder] = finding.what
    return found


def test_the_seeded_differences_are_named_and_alike_ones_are_not(
    migration: tuple[Any, Config],
) -> None:
    running, config = migration

    findings = check(running, config)

    dev = lines(findings, "DEV -> DEV")
    assert dev["group support"] == (
        "queue DEV -> DEV: group support may write in the source, nothing in the target"
    )
    # the users asked about are those on DEV's issues: grace, niaj and wendy write there
    # through support only; alice (its lead, in engineering too) and bob (engineering) keep
    # theirs; frank, in support too, is on no DEV issue of this org, so he is not asked
    assert set(dev) == {"group support", "user grace", "user niaj", "user wendy"}
    for user in ("grace", "niaj", "wendy"):
        assert dev[f"user {user}"] == (
            f"queue DEV -> DEV: user {user} may read,create,write in the source,"
            " read,create in the target"
        )
    assert lines(findings, "TEST -> NEW") == {}  # bob's grant is the target's TEST, not NEW
    assert lines(findings, "OPS -> OPS") == {}
    summary = next(f for f in findings if f.what.startswith("queue permissions: "))
    assert summary.level == "ok" and f"{len(dev)} differ" in summary.what
    assert not [f for f in findings if f.level == "error"]


def test_a_narrowed_and_a_widened_target_queue_are_named(migration: tuple[Any, Config]) -> None:
    """By the sandbox's control route: engineering may no longer write in the target's OPS,
    and eve may grant there; support, and heidi (in neither group), stay alike."""
    running, config = migration
    grant(running, "OPS", "groups", group_id(running, "engineering"), [])
    grant(running, "OPS", "users", "eve", ["GRANT"])

    ops = lines(check(running, config), "OPS -> OPS")

    assert ops["group engineering"] == (
        "queue OPS -> OPS: group engineering may write in the source, nothing in the target"
    )
    assert ops["user eve"] == (
        "queue OPS -> OPS: user eve may read,create in the source, read,create,grant in the target"
    )
    assert ops["user bob"].endswith(
        "may read,create,write in the source, read,create in the target"
    )
    assert not {"group support", "user heidi", "user alice", "user frank"} & set(ops)


def test_haul_check_names_them_as_warnings_and_exits_0(migration: tuple[Any, Config]) -> None:
    """Read-only: the differences are warnings (the scheme is the organisation's to set), so
    `haul check` passes; and it wrote nothing (the target's DEV still refuses support)."""
    running, config = migration
    haul = str(Path(sys.executable).parent / "haul")
    env = {**os.environ, TOKEN_ENV: running.info["tokens"]["admin"]}
    toml = config.staging_path.parent / "haul.toml"
    done = subprocess.run([haul, "check", "--config", str(toml)], env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())  # rich wraps long lines
    assert "warning queue DEV -> DEV: group support may write in the source, nothing in" in out
    assert "check: 0 error(s)" in out
    assert lines(check(running, config), "DEV -> DEV")["group support"] == (
        "queue DEV -> DEV: group support may write in the source, nothing in the target"
    )


def test_holders_are_asked_under_their_mapped_names(
    migration: tuple[Any, Config], tmp_path: Path
) -> None:
    """`mapping.users_file` sends grace to niaj's account, `mapping.groups_file` support to
    engineering: grace is compared with what niaj may do in the target (and named so), and
    support with engineering, which may write in the target's DEV: no longer a difference."""
    running, _ = migration
    info = running.info
    (tmp_path / "users.csv").write_text("grace,niaj\n", encoding="utf-8")
    (tmp_path / "groups.csv").write_text("support,engineering\n", encoding="utf-8")
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=["DEV"],
        mapping_extra={"users_file": "users.csv", "groups_file": "groups.csv"},
    )
    config = load_config(write_sandbox_config(tmp_path, info, options))
    asyncio.run(extract(config, all_services(), environ=environ(info)))

    dev = lines(check(running, config), "DEV -> DEV")

    assert set(dev) == {"user grace (niaj in the target)", "user niaj", "user wendy"}
    assert dev["user grace (niaj in the target)"] == (
        "queue DEV -> DEV: user grace (niaj in the target) may read,create,write in the source,"
        " read,create in the target"
    )


def test_a_service_that_lists_no_groups_compares_the_users_alone(tmp_path: Path) -> None:
    """`/groups` is the official SDK's, not the spec's: a 404 there leaves the groups
    uncompared (said in the summary), and the users are still compared (by uid at the source,
    by the mapped login in the target)."""
    text = (
        '[source]\ntracker_url = "http://source.invalid/v3"\norg_id = "1"\ntoken_env = "T"\n'
        '[target]\ntracker_url = "http://target.invalid/v3"\norg_id = "2"\ntoken_env = "T"\n'
        '[scope]\nqueues = ["DEV"]\n[staging]\npath = "haul.db"\n'
    )
    (tmp_path / "haul.toml").write_text(text, encoding="utf-8")
    config = load_config(tmp_path / "haul.toml")
    held = {"source.invalid": ["READ", "WRITE"], "target.invalid": ["READ"]}

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/v3")
        if path == "/groups":
            return httpx.Response(404, json={"errorMessages": ["Not found"]})
        if path in ("/queues/DEV/permissions/users/7", "/queues/DEV/permissions/users/alice"):
            codes = held[request.url.host]
            return httpx.Response(200, json={"permissions": {code: {} for code in codes}})
        return httpx.Response(200, json={"key": "DEV"})  # the queue exists on both sides

    def client(host: str) -> TrackerClient:
        transport = httpx.MockTransport(handler)
        return TrackerClient.connect(
            base_url=f"http://{host}/v3", token="t", org_id="1", transport=transport
        )

    alice = {"self": "http://source.invalid/v3/users/7", "id": "7", "display": "Alice"}
    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records("user", [{"source_id": "7", "raw": {"uid": 7, "login": "alice"}}])
        store.upsert_records("issue", [{"source_id": "DEV-1", "raw": {"createdBy": alice}}])

        async def findings() -> list[Finding]:
            async with client("source.invalid") as source, client("target.invalid") as target:
                return await queue_permission_findings(config, source, target, store)

        found = asyncio.run(findings())

    assert [f.what for f in found if f.level == "warning"] == [
        "queue DEV -> DEV: user alice may read,write in the source, read in the target"
    ]
    (summary,) = [f.what for f in found if f.level == "ok"]
    assert "1 user and group permissions compared" in summary
    assert "groups (the service lists none)" in summary


def test_a_group_missing_in_the_target_is_named_by_its_target_name(tmp_path: Path) -> None:
    """`mapping.groups_file` maps support to helpdesk, which the target lacks: the warning
    names helpdesk (what to create) and support (where it comes from), not support alone."""
    text = (
        '[source]\ntracker_url = "http://source.invalid/v3"\norg_id = "1"\ntoken_env = "T"\n'
        '[target]\ntracker_url = "http://target.invalid/v3"\norg_id = "2"\ntoken_env = "T"\n'
        '[scope]\nqueues = ["DEV"]\n[staging]\npath = "haul.db"\n'
        '[mapping]\ngroups_file = "groups.csv"\n'
    )
    (tmp_path / "haul.toml").write_text(text, encoding="utf-8")
    (tmp_path / "groups.csv").write_text("support,helpdesk\n", encoding="utf-8")
    config = load_config(tmp_path / "haul.toml")
    groups = {"source.invalid": [{"id": 11, "name": "support"}],
              "target.invalid": [{"id": 21, "name": "engineering"}]}  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/v3")
        if path == "/groups":
            return httpx.Response(200, json=groups[request.url.host])
        return httpx.Response(200, json={"key": "DEV"})  # the queue exists on both sides

    def client(host: str) -> TrackerClient:
        transport = httpx.MockTransport(handler)
        return TrackerClient.connect(
            base_url=f"http://{host}/v3", token="t", org_id="1", transport=transport
        )

    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records("issue", [{"source_id": "DEV-1", "raw": {}}])

        async def findings() -> list[Finding]:
            async with client("source.invalid") as source, client("target.invalid") as target:
                return await queue_permission_findings(config, source, target, store)

        found = asyncio.run(findings())

    (missing,) = [f for f in found if f.level == "warning"]
    assert "group helpdesk is missing in the target (source group support maps to it" in (
        missing.what
    )
    assert "create group helpdesk in the target" in (missing.fix or "")
