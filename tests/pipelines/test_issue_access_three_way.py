"""An issue's access list follows the three-way rule at its grain, never wider: a list changed
only in the target is kept; a list changed on both sides is a conflict, and the target keeps
only the holders both lists name (reported with both lists, exit 3; under "source-wins" the
source's list is written where it is no wider than the target's, and what it replaced is
recorded). Pure cases of `settle_access`, then end to end over real sockets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from haul.pipelines.commands.run import run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.issue_access import settle_access
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import TOKEN_ENV, environ, source_queues, write_config


def test_a_list_changed_on_one_side_is_carried_or_kept() -> None:
    carried = settle_access(["a", "c"], ["a", "b"], ["a", "b"], "keep-target")
    assert (carried.write, carried.base, carried.conflict) == (["a", "c"], ["a", "c"], None)
    kept = settle_access(["a", "b"], ["a", "b"], ["a"], "keep-target")
    assert (kept.write, kept.base, kept.conflict) == (None, ["a", "b"], None)


def test_a_list_changed_on_both_sides_keeps_the_narrower_whatever_the_rule() -> None:
    kept = settle_access(["a", "y"], ["a", "b"], ["a", "b", "z"], "keep-target")
    assert kept.write == ["a"] and kept.conflict == (["a", "y"], ["a", "b", "z"])
    assert kept.base == ["a", "b"] and not kept.overwritten
    won = settle_access(["a", "y"], ["a", "b"], ["a", "b", "z"], "source-wins")
    assert won.write == ["a"] and won.conflict is not None and won.overwritten
    whole = settle_access(["a"], ["a", "b"], ["a", "b", "z"], "source-wins")
    assert whole.write == ["a"] and whole.conflict is None and whole.overwritten


# -- end to end ---------------------------------------------------------------------------


def _tracker(info: dict[str, Any], org: str) -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    return httpx.Client(base_url=info["tracker"], headers=headers, timeout=30)


def _edit(info: dict[str, Any], org: str, key: str, body: dict[str, Any]) -> None:
    with _tracker(info, org) as client:
        reply = client.patch(f"/issues/{key}", json=body)
        assert reply.status_code == 200, reply.text


def _access(info: dict[str, Any], org: str, key: str) -> list[str]:
    with _tracker(info, org) as client:
        logins = {str(u["uid"]): u["login"] for u in client.get("/users").json()["users"]}
        issue = client.get(f"/issues/{key}").json()
    return sorted(logins[str(ref["id"])] for ref in issue.get("access") or [])


async def test_access_lists_follow_the_three_way_rule_end_to_end(
    sandbox: Any, tmp_path: Path
) -> None:
    """DEV-1: grace taken off in the target, the summary edited at the source: kept. DEV-2:
    grace taken off at the source and niaj added; wendy added in the target: a conflict, the
    target keeps frank alone (both lists name only frank)."""
    info = sandbox.info
    for key in ("DEV-1", "DEV-2"):
        _edit(info, "source", key, {"access": ["frank", "grace"]})
    path = write_config(tmp_path, info, queues=source_queues(info))
    config = load_config(path)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    assert _access(info, "target", "DEV-2") == ["frank", "grace"]
    _edit(info, "target", "DEV-1", {"access": ["frank"]})
    _edit(info, "source", "DEV-1", {"summary": "Edited at the source"})
    _edit(info, "source", "DEV-2", {"access": ["frank", "niaj"]})
    _edit(info, "target", "DEV-2", {"access": ["frank", "grace", "wendy"]})

    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    done = run_haul("run", "--config", path, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    assert _access(info, "target", "DEV-1") == ["frank"]
    assert _access(info, "target", "DEV-2") == ["frank"]
    with StagingStore.open(config.staging_path) as store:
        (why,) = [p.error for p in store.problems if p.entity == "issue_access:change"]
    assert "niaj" in why and "wendy" in why, why
    failures = run_haul("failures", "--config", path, env=env)
    assert "access changed on both sides" in failures.stdout, failures.stdout


async def test_source_wins_narrows_access_and_records_what_it_replaced(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    _edit(info, "source", "DEV-2", {"access": ["frank", "grace"]})
    extra = '[sync]\nconflicts = "source-wins"\n'
    config = load_config(write_config(tmp_path, info, queues=source_queues(info), extra=extra))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    _edit(info, "source", "DEV-2", {"access": ["frank"]})
    _edit(info, "target", "DEV-2", {"access": ["frank", "grace", "wendy"]})

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.problems == 0
    assert _access(info, "target", "DEV-2") == ["frank"]
    with StagingStore.open(config.staging_path) as store:
        (overwritten,) = store.written.iter_overwritten()
    assert (overwritten.entity, overwritten.source_id, overwritten.field) == (
        "issue_access",
        "DEV-2",
        "access",
    )
    assert len(overwritten.target) == 3 and len(overwritten.source) == 1
