"""A standing sync over real sockets: after a first `haul run`, people change things at the
source through the plain API, and the next run carries every kind of change; read back
through the plain API, source and target hold the same records, and a third run writes
nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.status import gather_status
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import (
    client_for,
    environ,
    source_queues,
    write_config,
    writes,
    written_since,
)
from tests.helpers.org_snapshot import org_snapshot
from tests.helpers.sync_changes import (
    MIRROR,
    holding,
    issues_of,
    people_change_everything,
    without_sync_times,
)


async def _snapshots(info: dict[str, Any]) -> tuple[dict, dict]:
    """Both orgs read back through the plain API, without each side's own time of a change."""
    queues = source_queues(info)
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        before = await org_snapshot(source, queues)
        after = await org_snapshot(
            target, [{"TEST": "NEW"}.get(q, q) for q in queues], rename={"NEW": "TEST"}
        )
    return without_sync_times(before), without_sync_times(after)


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
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        changed = await people_change_everything(source)

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.failed == 0 and second.complete, _failures(config)
    made = second.details["changes"]
    assert made["issue"]["moved"] == 1 and made["issue"]["transitioned"] == 1
    assert made["comment"] == {"updated": 1, "deleted": 1, "deleted_at_source": 1}
    assert made["worklog"] == {"updated": 1, "deleted": 1, "deleted_at_source": 1}
    assert made["link"]["created"] == 1 and made["link"]["deleted"] == 1
    assert made["attachment"] == {"created": 1, "deleted": 1, "deleted_at_source": 1}
    page = config.staging_path.with_name("report.html").read_text(encoding="utf-8")
    assert '<table id="changes">' in page and "transitioned" in page
    before, after = await _snapshots(info)
    assert sorted(after) == sorted(before)
    for key in before:
        assert after[key] == before[key], key
    async with client_for(info, "target") as target:
        status = await target.get_issue(changed["status"])
    assert (status["status"]["key"], status["resolution"]["key"]) == ("resolved", "wontFix")
    assert (await verify(config, all_services(), environ=environ(info))).ok
    quiet = writes(sandbox.stats())

    third = await run_all(config, all_services(), environ=environ(info))

    assert third.complete and third.details["loaded"] == 0
    assert written_since(quiet, writes(sandbox.stats())) == {}
    # the walked status is compared as a record of its own; moved by hand, it is named
    target_key = changed["status"].replace("TEST-", "NEW-")
    async with client_for(info, "target") as target:
        step = (await target.list_transitions(target_key))[0]
        await target.execute_transition(target_key, str(step["id"]))
    moved = await verify(config, all_services(), environ=environ(info))
    (statuses,) = [v for v in moved.entities if v.entity == "issue_status"]
    assert statuses.compared and statuses.checked == statuses.found > 0
    named = {(d.entity, d.field) for d in moved.differences}
    assert named == {("issue", "status"), ("issue_status", "status")} | (
        {("issue", "resolution")} & named
    )


async def test_a_status_the_target_workflow_cannot_reach_fails_its_record(
    sandbox: Any, tmp_path: Path
) -> None:
    """TEST maps to NEW, a kanban where needInfo is reached only from open."""
    info = sandbox.info
    config = _config(tmp_path, info)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        busy = next(
            i["key"] for i in await issues_of(source, "TEST") if i["status"]["key"] == "inProgress"
        )
        await source.execute_transition(busy, "needInfo")

    second = await run_all(config, all_services(), environ=environ(info))

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
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        talk = (await holding(source, "DEV", "comments", 1))[0]
        comment = next(
            c
            for c in await source.core.get_json(f"/issues/{talk}/comments")
            # its text the same in both orgs: no files, no link to the source's web host
            if not c.get("attachments") and "https://" not in c["text"]
        )
        await source.core.request("DELETE", f"/issues/{talk}/comments/{comment['id']}")

    reported = await run_all(config, all_services(), environ=environ(info))

    assert reported.complete
    assert reported.details["changes"]["comment"] == {"deleted_at_source": 1}
    with StagingStore.open(config.staging_path) as store:
        status = gather_status(store, services())
    assert status.deleted == {"comment": (1, 0)}
    async with client_for(info, "target") as target:
        texts = [c["text"] async for c in target.iter_comments(talk, expand="")]
    assert comment["text"] in texts

    mirrored = await run_all(_config(tmp_path, info, MIRROR), all_services(), environ=environ(info))

    assert mirrored.complete and mirrored.details["changes"]["comment"]["deleted"] == 1
    async with client_for(info, "target") as target:
        texts = [c["text"] async for c in target.iter_comments(talk, expand="")]
    assert comment["text"] not in texts
    with StagingStore.open(config.staging_path) as store:
        assert gather_status(store, services()).deleted == {"comment": (1, 1)}


async def test_an_issue_gone_from_the_source_is_reported_and_mirrored_only_by_hand(
    sandbox: Any, tmp_path: Path
) -> None:
    """The tracker's API deletes no issue: mirroring fails the row with that reason until a
    person deletes it in the target; then a retry settles it without a write."""
    info = sandbox.info
    config = _config(tmp_path, info)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        gone = (await issues_of(source, "DEV"))[0]["key"]
        await source.core.request("DELETE", f"{_control(info)}/_sandbox/issues/{gone}")

    reported = await run_all(config, all_services(), environ=environ(info))

    assert reported.complete and reported.details["changes"]["issue"]["deleted_at_source"] == 1
    with StagingStore.open(config.staging_path) as store:
        assert gather_status(store, services()).deleted == {"issue": (1, 0)}
    mirror = _config(tmp_path, info, MIRROR)

    refused = await run_all(mirror, all_services(), environ=environ(info))

    assert refused.failed == 1
    (failure,) = _failures(mirror)
    assert failure[0] == "deletion" and "deletes no issue" in (failure[2] or "")
    async with client_for(info, "target") as target:
        await target.core.request("DELETE", f"{_control(info)}/_sandbox/issues/{gone}")

    settled = await run_all(mirror, all_services(), environ=environ(info), retry_failed=True)

    assert settled.complete and settled.failed == 0
    with StagingStore.open(config.staging_path) as store:
        assert gather_status(store, services()).deleted == {"issue": (1, 1)}


def _control(info: dict[str, Any]) -> str:
    return info["tracker"].rsplit("/v3", 1)[0]


async def test_an_issue_that_leaves_the_query_scope_is_out_of_scope_not_deleted(
    sandbox: Any, tmp_path: Path
) -> None:
    """The scope is a query; an issue changed at the source so that it no longer matches it
    is alive: reported as out of the scope, never as deleted nor as a deletion to make by
    hand, even when deletions are mirrored; it stays in the target as loaded."""
    info = sandbox.info
    async with client_for(info, "source") as source:
        first = (await issues_of(source, "DEV"))[0]
        priority = first["priority"]["key"]
        others = [p["key"] for p in await source.list_priorities() if p["key"] != priority]
    scope = {"query": f"Priority: {priority}"}
    config = load_config(
        write_config(tmp_path, info, queues=source_queues(info), extra=MIRROR, scope=scope)
    )
    await run_all(
        config, all_services(), environ=environ(info)
    )  # links to issues outside the query fail
    links = _failures(config)
    async with client_for(info, "source") as source:
        await source.update_issue(first["key"], {"priority": others[0]})

    second = await run_all(config, all_services(), environ=environ(info))

    assert [f for f in _failures(config) if f[0] != "link"] == [], _failures(config)
    assert len(_failures(config)) <= len(links)
    assert second.details["changes"]["issue"] == {"out_of_scope": 1}
    with StagingStore.open(config.staging_path) as store:
        status = gather_status(store, services())
    assert status.deleted == {} and status.out_of_scope == {"issue": 1}
    async with client_for(info, "target") as target:
        assert await target.find_issue(first["key"]) is not None
