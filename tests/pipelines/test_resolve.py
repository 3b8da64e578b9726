"""`haul resolve` settles a sync's conflicts, and the next run applies each decision once.

After a first `haul run`, people edit the same issue field on both sides: the next run keeps
the target's value and exits 3, naming the conflict, on every run. A person then takes a side
(`--take`, or a CSV's decision column): the next run writes the source's value where it was
taken, through the load's own path, once; taking the target writes nothing; either way the
conflict leaves `haul status`. A decision made against values that moved since is not applied:
the run names it, and the conflict is open again; a decision that is no side is refused (exit
2). A run killed after it wrote a taken value, before it recorded it,
then run again, leaves the value written once."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx

from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import (
    finish,
    haul_env,
    run_haul,
    start_haul,
    stop,
    wait_for,
)
from tests.helpers.haul_fixtures import TOKEN_ENV, client_for, environ, source_queues, write_config


async def _edit_both_sides(info: dict[str, Any], keys: list[str]) -> None:
    """Each issue's summary edited in the target, then at the source: a conflict."""
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        for key in keys:
            await target.update_issue(key, {"summary": f"{key} as the target has it"})
            await source.update_issue(key, {"summary": f"{key} as the source has it"})


async def _summaries(info: dict[str, Any], keys: list[str]) -> dict[str, str]:
    async with client_for(info, "target") as target:
        return {key: (await target.get_issue(key))["summary"] for key in keys}


def _summary_writes(info: dict[str, Any], key: str, value: str) -> int:
    """How many edits set the target issue's summary to `value` (its changelog's entries)."""
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    reply = httpx.get(
        f"{info['tracker']}/issues/{key}/changelog", headers=headers, params={"perPage": 100}
    )
    reply.raise_for_status()
    assert len(reply.json()) < 100  # one page: every entry
    return sum(
        1
        for entry in reply.json()
        for change in entry.get("fields") or []
        if change["field"]["id"] == "summary" and change.get("to") == value
    )


def _problems(path: Path) -> dict[str, str]:
    with StagingStore.open(path) as store:
        return {p.source_id: p.error for p in store.problems if p.entity == "issue:change"}


async def _migrated_with_conflicts(sandbox: Any, tmp_path: Path, keys: list[str]) -> Any:
    """A first run, then the issues `keys` edited on both sides and a run that leaves them
    open (exit 3); the config's path and the haul environment."""
    info = sandbox.info
    path = write_config(tmp_path, info, queues=source_queues(info))
    assert (await run_all(load_config(path), all_services(), environ=environ(info))).complete
    await _edit_both_sides(info, keys)
    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    second = await run_all(load_config(path), all_services(), environ=environ(info))
    assert second.problems == len(keys)  # each left open (exit 3)
    return path, env


async def test_decisions_are_written_by_the_next_run_once_and_leave_status(
    sandbox: Any, tmp_path: Path
) -> None:
    """DEV-2 left open, DEV-3 taken from the source by --take, DEV-4 from the source and DEV-5
    from the target by the CSV, DEV-6 decided and then changed at the source again (stale)."""
    info = sandbox.info
    keys = ["DEV-2", "DEV-3", "DEV-4", "DEV-5", "DEV-6"]
    path, env = await _migrated_with_conflicts(sandbox, tmp_path, keys)
    db = load_config(path).staging_path

    listed = run_haul("resolve", "--config", path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert all(key in listed.stdout for key in keys) and "5 open conflict(s)" in listed.stdout
    taken = run_haul(
        "resolve", "--config", path, "--take", "source", "--issue", "DEV-3", "--field", "summary",
        env=env,
    )  # fmt: skip
    assert taken.returncode == 0, taken.stderr
    exported = run_haul("resolve", "--config", path, "--format", "csv", env=env)
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert {r["source_id"]: r["decision"] for r in rows} == {
        "DEV-2": "", "DEV-3": "source", "DEV-4": "", "DEV-5": "", "DEV-6": ""
    }  # fmt: skip
    assert {r["field"] for r in rows} == {"summary"}
    choices = {"DEV-4": "source", "DEV-5": "target", "DEV-6": "Source"}
    for row in rows:
        row["decision"] = choices.get(row["source_id"], row["decision"])
    bad = tmp_path / "bad.csv"
    bad.write_text(exported.stdout.replace(",source\n", ",maybe\n"), encoding="utf-8")
    refused = run_haul("resolve", "--config", path, "--from", bad, env=env)
    assert refused.returncode == 2  # DEV-3's row: a decision that is not a side
    assert f"{bad}, line 3: decision 'maybe': write source, target" in refused.stderr
    filled = tmp_path / "decided.csv"
    with filled.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    from_file = run_haul("resolve", "--config", path, "--from", filled, env=env)
    assert from_file.returncode == 0, from_file.stdout + from_file.stderr
    async with client_for(info, "source") as source:
        await source.update_issue("DEV-6", {"summary": "DEV-6 moved again at the source"})

    # the dry run says what the load does with each decision (of what is staged: DEV-6's
    # latest edit at the source is not extracted yet)
    planned = await make_plan(load_config(path), all_services(), environ=environ(info))
    issues = [c for c in planned.changes if c.entity == "issue" and c.source_id in keys]
    assert {(c.source_id, c.action) for c in issues if "summary" in c.fields} == {
        ("DEV-2", "conflict"), ("DEV-3", "update"), ("DEV-4", "update"), ("DEV-6", "update")
    }  # fmt: skip

    third = await run_all(load_config(path), all_services(), environ=environ(info))

    assert third.problems == 2  # DEV-2 and DEV-6 stay open
    assert await _summaries(info, keys) == {
        "DEV-2": "DEV-2 as the target has it",
        "DEV-3": "DEV-3 as the source has it",
        "DEV-4": "DEV-4 as the source has it",
        "DEV-5": "DEV-5 as the target has it",
        "DEV-6": "DEV-6 as the target has it",
    }
    problems = _problems(db)
    assert sorted(problems) == ["DEV-2", "DEV-6"]
    assert "a decision not applied: summary: taking the source" in problems["DEV-6"]
    assert "'DEV-6 as the source has it'" in problems["DEV-6"]  # what it was decided against
    status = run_haul("status", "--config", path, env=env)
    assert "conflicts: 2 fields changed on both sides" in status.stdout, status.stdout
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert (report["open_conflicts"], report["changes_not_carried"]) == (2, 2)
    with StagingStore.open(db) as store:
        open_now = {c.source_id: c for c in store.conflicts.iter_open()}
    assert sorted(open_now) == ["DEV-2", "DEV-6"]
    assert open_now["DEV-6"].decision is None  # stale: open again, to decide anew
    assert open_now["DEV-6"].source == "DEV-6 moved again at the source"

    fourth = await run_all(load_config(path), all_services(), environ=environ(info))

    assert fourth.problems == 2  # DEV-5 keeps the target's value
    assert (await _summaries(info, ["DEV-5"]))["DEV-5"] == "DEV-5 as the target has it"
    for key in ("DEV-3", "DEV-4"):
        assert _summary_writes(info, key, f"{key} as the source has it") == 1
    assert _summary_writes(info, "DEV-5", "DEV-5 as the source has it") == 0


async def test_a_run_killed_after_writing_a_decision_writes_it_once_when_run_again(
    sandbox: Any, tmp_path: Path
) -> None:
    """The load that applies `--take source` is held by the sandbox at its read of the issue
    (a search of the keys it refreshes), then its edit is applied and its reply held: killed
    there, after the write and before the store recorded it, then run again, it writes the
    value once, and the conflict is gone."""
    info = sandbox.info
    path, env = await _migrated_with_conflicts(sandbox, tmp_path, ["DEV-3"])
    resolve = ("resolve", "--config", path, "--take", "source", "--issue", "DEV-3")
    assert run_haul(*resolve, "--field", "summary", env=env).returncode == 0
    wanted = "DEV-3 as the source has it"
    sandbox.set_faults("hold:read@/v3/issues/_search")
    load = start_haul("load", "--config", path, env=env)
    try:
        wait_for(lambda: sandbox.held("read"), 60, "the load to read the issue")
        # the read goes on; the edit after it is applied, its reply held past any wait here
        sandbox.set_faults("slow_after:1:600000@/v3/issues/DEV-3")
        wait_for(lambda: _summary_writes(info, "DEV-3", wanted), 60, "the decided value written")
    finally:
        load.kill()  # SIGKILL: the store records nothing more
        stop(load)
        sandbox.set_faults("")
    db = load_config(path).staging_path
    with sqlite3.connect(db) as store:
        assert store.execute("SELECT count(*) FROM decisions").fetchone()[0] == 1

    again = start_haul("load", "--config", path, env=env)
    out, err = finish(again)

    assert again.returncode == 0, out + err
    assert _summary_writes(info, "DEV-3", wanted) == 1
    assert _problems(db) == {}
    status = run_haul("status", "--config", path, env=env)
    assert "conflicts:" not in status.stdout
