"""An issue's `access` list end to end on the sandbox, over sockets: it fails closed (a holder
with no target account is left out and named, never given to the default user) and a later
run carries both an addition and a removal at the source.

frank leaves the target org (the sandbox's control route) before the load; one source issue
is opened to frank and grace by an ordinary edit, the way people do it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, load, run_all
from haul.pipelines.commands.status import gather_status
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import environ, source_queues, write_config

ISSUE = "DEV-1"  # DEV keeps its key in the target (only TEST maps to NEW)


def tracker(info: dict[str, Any], org: str) -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    return httpx.Client(base_url=info["tracker"], headers=headers, timeout=30)


def open_to(info: dict[str, Any], *logins: str) -> None:
    """At the source, the issue's access list becomes `logins` (an ordinary edit)."""
    with tracker(info, "source") as client:
        reply = client.patch(f"/issues/{ISSUE}", json={"access": list(logins)})
        assert reply.status_code == 200, reply.text


def access(info: dict[str, Any], org: str, key: str = ISSUE) -> list[str]:
    """Who an issue's access list names in `org`, by login."""
    with tracker(info, org) as client:
        logins = {str(u["uid"]): u["login"] for u in client.get("/users").json()["users"]}
        issue = client.get(f"/issues/{key}").json()
    return sorted(
        logins.get(str(ref["id"]), f"uid {ref['id']}") for ref in issue.get("access") or []
    )


def leave_target(info: dict[str, Any], login: str) -> None:
    host = info["tracker"].rsplit("/v3", 1)[0]
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    httpx.delete(f"{host}/_sandbox/users/{login}", headers=headers).raise_for_status()


def config_for(tmp_path: Path, info: dict[str, Any]) -> Config:
    return load_config(write_config(tmp_path, info, queues=source_queues(info)))


def test_a_holder_without_a_target_account_is_left_out_and_named(
    sandbox: Any, tmp_path: Path
) -> None:
    """frank has no target account: the issue is open to grace alone in the target (not to
    frank, not to the default user robot); check warns, plan marks its access row a conflict, the load
    fails that row naming frank (the issue itself and everything under it load), and the
    report, status and verify name it. No other issue is opened to anyone the source's list
    does not name."""
    info = sandbox.info
    open_to(info, "frank", "grace")
    leave_target(info, "frank")
    config = config_for(tmp_path, info)
    asyncio.run(extract(config, all_services(), environ=environ(info)))

    checked = asyncio.run(run_check(config, all_services(), environ(info)))
    warned = [f.what for f in checked if f.level == "warning" and "issue access" in f.what]
    assert any("user frank has no target account" in what and ISSUE in what for what in warned)
    plan = asyncio.run(make_plan(config, all_services(), environ=environ(info)))
    conflicts = {source_id: why for entity, source_id, why in plan.conflicts
                 if entity == "issue_access"}  # fmt: skip
    assert "user frank" in conflicts[ISSUE]
    summary = asyncio.run(load(config, all_services(), environ=environ(info)))

    assert access(info, "target") == ["grace"]
    failed = {row.entity: row.failed for row in summary.counts if row.failed}
    assert set(failed) == {"issue_access"}  # the issues, their comments, ... all loaded
    with StagingStore.open(config.staging_path) as store:
        row = store.ledger.get("issue_access", ISSUE)
        assert row is not None and row.status == "failed"
        assert "user frank" in str(row.error) and "default user" in str(row.error)
        for other in store.ledger.iter_rows(entity="issue_access", status="failed"):
            assert "user frank" in str(other.error), other
        keys = sorted(store.source_ids("issue"))
        status = gather_status(store, services())
    (line,) = [line for line in status.lines if line.entity == "issue_access"]
    assert line.failed == failed["issue_access"]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    reasons = [f["reason"] for f in report["failures_by_reason"] if f["entity"] == "issue_access"]
    assert any(ISSUE in reason and "user frank" in reason for reason in reasons), reasons
    for key in keys:  # never wider: no one, not the default user robot, the source did not name
        target = access(info, "target", key.replace("TEST-", "NEW-"))
        assert set(target) <= set(access(info, "source", key)), key

    result = asyncio.run(verify(config, all_services(), environ=environ(info), entities=["issue"]))
    (seen,) = [d for d in result.differences if d.source_id == ISSUE and d.field == "access"]
    assert "unmapped user frank" in seen.source


def test_a_later_run_carries_additions_and_removals_of_the_access_list(
    sandbox: Any, tmp_path: Path
) -> None:
    """frank is taken off the list at the source and heidi put on: the next run makes the
    target's list the same; emptied at the source, the target's list is emptied too; verify
    agrees each time."""
    info = sandbox.info
    open_to(info, "frank", "grace")
    config = config_for(tmp_path, info)
    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    assert access(info, "target") == ["frank", "grace"]

    open_to(info, "grace", "heidi")
    second = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert second.complete and second.failed == 0
    assert access(info, "target") == ["grace", "heidi"]
    assert asyncio.run(verify(config, all_services(), environ=environ(info))).ok

    open_to(info)
    third = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert third.complete and third.failed == 0
    assert access(info, "target") == []
    assert asyncio.run(verify(config, all_services(), environ=environ(info))).ok
