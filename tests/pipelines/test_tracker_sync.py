"""A standing sync over real sockets: after a first `haul run`, people change things at the
source through the plain API, and the next run carries every kind of change; read back
through the plain API, source and target hold the same records, and a third run writes
nothing."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path
from typing import Any

from haul_fixtures import client_for, environ, source_queues, write_config, writes, written_since
from org_snapshot import org_snapshot

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services
from haul.pipelines.runner import run_all
from haul.pipelines.status import gather_status
from haul.pipelines.verify import verify
from haul.state.store import StagingStore

MIRROR = '[sync]\ndeletions = "mirror"\n'
SYNCED = ("updatedAt", "updatedBy", "resolvedAt")  # times of the change: each side's own


async def _issues(client: TrackerClient, queue: str) -> list[dict[str, Any]]:
    async with aclosing(client.scroll_issues(query=f"Queue: {queue}", per_scroll=100)) as pages:
        return [issue async for page in pages for issue in page]


async def _with(client: TrackerClient, queue: str, listing: str, at_least: int) -> list[str]:
    """Keys of the queue's issues holding at least `at_least` records of `listing`."""
    found = []
    for issue in await _issues(client, queue):
        records = await client.core.get_json(f"/issues/{issue['key']}/{listing}")
        if len([r for r in records if not r.get("attachments")]) >= at_least:
            found.append(issue["key"])
    return found


async def _people_change_everything(source: TrackerClient) -> dict[str, str]:
    """One change of each kind at the source; returns which issue took which."""
    call = source.core.request
    dev = await _issues(source, "DEV")
    opened = next(i["key"] for i in dev if i["status"]["key"] == "open")
    await source.execute_transition(opened, "inProgress")
    await source.execute_transition(opened, "resolved", {"resolution": "wontFix"})
    edited = next(i["key"] for i in await _issues(source, "TEST"))
    await source.update_issue(edited, {"summary": "Renamed at the source"})
    talk = (await _with(source, "OPS", "comments", 2))[0]
    first, second = [
        c
        for c in await source.core.get_json(f"/issues/{talk}/comments")
        if not c.get("attachments")
    ][:2]
    await source.update_comment(talk, first["id"], {"text": "Said better, later"})
    await call("DELETE", f"/issues/{talk}/comments/{second['id']}")
    work = (await _with(source, "DEV", "worklog", 2))[0]
    one, two = (await source.core.get_json(f"/issues/{work}/worklog"))[:2]
    await source.update_worklog(work, one["id"], {"duration": "PT7H", "comment": "more"})
    await call("DELETE", f"/issues/{work}/worklog/{two['id']}")
    linked = [(i["key"], link) for i in dev for link in await source.list_links(i["key"])][0]
    await call("DELETE", f"/issues/{linked[0]}/links/{linked[1]['id']}")
    ends = [i["key"] for i in dev if i["key"] not in (opened, work, linked[0])][:2]
    await call(
        "POST", f"/issues/{ends[0]}/links", json={"relationship": "depends on", "issue": ends[1]}
    )
    wanders = next(i["key"] for i in dev if i["key"] not in (opened, work, *ends, linked[0]))
    moved = await source.move_issue(wanders, "OPS")
    return {"status": opened, "summary": edited, "comments": talk, "worklogs": work,
            "moved": str(moved["key"])}  # fmt: skip


async def _snapshots(info: dict[str, Any], changed: set[str]) -> tuple[dict, dict]:
    queues = source_queues(info)
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        before = await org_snapshot(source, queues)
        after = await org_snapshot(
            target, [{"TEST": "NEW"}.get(q, q) for q in queues], rename={"NEW": "TEST"}
        )
    for snapshot in (before, after):
        for key in changed & set(snapshot):
            for name in SYNCED:
                snapshot[key].pop(name, None)
    return before, after


def _failures(config: Config) -> list[tuple[str, str, str | None]]:
    with StagingStore.open(config.staging_path) as store:
        return [(r.entity, r.source_id, r.error) for r in store.ledger.iter_rows(status="failed")]


def _config(tmp_path: Path, info: dict[str, Any], extra: str = "") -> Config:
    return load_config(write_config(tmp_path, info, queues=source_queues(info), extra=extra))


async def test_every_kind_of_change_reaches_the_target_and_a_third_run_writes_nothing(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = _config(tmp_path, info, MIRROR)
    assert (await run_all(config, environ=environ(info))).complete
    async with client_for(info, "source") as source:
        changed = await _people_change_everything(source)

    second = await run_all(config, environ=environ(info))

    assert second.failed == 0 and second.complete, _failures(config)
    made = second.details["changes"]
    assert made["issue"]["moved"] == 1 and made["issue"]["transitioned"] == 1
    assert made["comment"] == {"updated": 1, "deleted": 1, "deleted_at_source": 1}
    assert made["worklog"] == {"updated": 1, "deleted": 1, "deleted_at_source": 1}
    assert made["link"]["created"] == 1 and made["link"]["deleted"] == 1
    everything = {key for snapshot in await _snapshots(info, set()) for key in snapshot}
    before, after = await _snapshots(info, everything)
    assert sorted(after) == sorted(before)
    for key in before:
        assert after[key] == before[key], key
    async with client_for(info, "target") as target:
        status = await target.get_issue(changed["status"])
    assert (status["status"]["key"], status["resolution"]["key"]) == ("resolved", "wontFix")
    assert (await verify(config, environ=environ(info))).ok
    quiet = writes(sandbox.stats())

    third = await run_all(config, environ=environ(info))

    assert third.complete and third.details["loaded"] == 0
    assert written_since(quiet, writes(sandbox.stats())) == {}


async def test_a_status_the_target_workflow_cannot_reach_fails_its_record(
    sandbox: Any, tmp_path: Path
) -> None:
    """TEST maps to NEW, a kanban where needInfo is reached only from open."""
    info = sandbox.info
    config = _config(tmp_path, info)
    assert (await run_all(config, environ=environ(info))).complete
    async with client_for(info, "source") as source:
        busy = next(
            i["key"] for i in await _issues(source, "TEST") if i["status"]["key"] == "inProgress"
        )
        await source.execute_transition(busy, "needInfo")

    second = await run_all(config, environ=environ(info))

    assert second.failed == 1
    with StagingStore.open(config.staging_path) as store:
        (row,) = store.ledger.iter_rows(status="failed")
    assert row.entity == "issue_status" and row.parent == busy
    assert "has no path from status inProgress to needInfo" in (row.error or "")
    async with client_for(info, "target") as target:
        held = await target.get_issue(busy.replace("TEST-", "NEW-"))
    assert held["status"]["key"] == "inProgress"


async def test_deletions_are_reported_by_default_and_mirrored_when_asked(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = _config(tmp_path, info)
    assert (await run_all(config, environ=environ(info))).complete
    async with client_for(info, "source") as source:
        talk = (await _with(source, "DEV", "comments", 1))[0]
        comment = next(
            c
            for c in await source.core.get_json(f"/issues/{talk}/comments")
            if not c.get("attachments")
        )
        await source.core.request("DELETE", f"/issues/{talk}/comments/{comment['id']}")

    reported = await run_all(config, environ=environ(info))

    assert reported.complete
    assert reported.details["changes"]["comment"] == {"deleted_at_source": 1}
    with StagingStore.open(config.staging_path) as store:
        status = gather_status(store, services())
    assert status.deleted == {"comment": (1, 0)}
    async with client_for(info, "target") as target:
        texts = [c["text"] async for c in target.iter_comments(talk, expand="")]
    assert comment["text"] in texts

    mirrored = await run_all(_config(tmp_path, info, MIRROR), environ=environ(info))

    assert mirrored.complete and mirrored.details["changes"]["comment"]["deleted"] == 1
    async with client_for(info, "target") as target:
        texts = [c["text"] async for c in target.iter_comments(talk, expand="")]
    assert comment["text"] not in texts
    with StagingStore.open(config.staging_path) as store:
        assert gather_status(store, services()).deleted == {"comment": (1, 1)}
