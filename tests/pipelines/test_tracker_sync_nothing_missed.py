"""Nothing at the source is missed by a sync (issue 39, items 3 and 4), over real sockets:
after a first `haul run`, a person edits a checklist, adds a remote link to an otherwise
unchanged issue and replaces an attachment's bytes under its name, through the plain API;
`haul plan` lists each update, and the next run carries every one of them."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

import pytest

from haul.connectors.tracker import TrackerClient
from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.children.checklists import CHECKLIST_MOVES_UPDATED
from haul.pipelines.tracker.children.replaced import REPLACED
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config
from tests.helpers.org_snapshot import org_snapshot
from tests.helpers.sync_changes import MIRROR, people_change_everything, without_sync_times
from tests.helpers.sync_misses import people_edit_what_is_easy_to_miss

TARGET_QUEUE = {"TEST": "NEW"}


def _config(tmp_path: Path, info: dict[str, Any], extra: str = "") -> Config:
    return load_config(_written(tmp_path, info, extra))


def _written(tmp_path: Path, info: dict[str, Any], extra: str = "") -> Path:
    return write_config(tmp_path, info, queues=source_queues(info), extra=extra)


def _target_key(key: str) -> str:
    queue, _, number = key.rpartition("-")
    return f"{TARGET_QUEUE.get(queue, queue)}-{number}"


def _changes(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """`haul plan --changes`: (entity, source key) -> the row."""
    with path.open(newline="", encoding="utf-8") as handle:
        return {(row["entity"], row["source_key"]): row for row in csv.DictReader(handle)}


async def _remote_links(client: TrackerClient, key: str) -> list[tuple[str, str]]:
    links = await client.list_remote_links(key)
    return sorted((str(r["object"]["application"]["id"]), str(r["object"]["key"])) for r in links)


@pytest.mark.slow  # test_tracker_sync's every kind of change is the default run's
async def test_a_checklist_edit_a_remote_link_and_new_bytes_all_arrive(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    written = _written(tmp_path, info, MIRROR)
    config = load_config(written)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        edited = await people_edit_what_is_easy_to_miss(source)
    await extract(config, all_services(), environ=environ(info))
    listed = tmp_path / "changes.csv"
    shown = await asyncio.to_thread(
        run_haul, "plan", "--config", written, "--changes", listed, env=haul_env(environ(info))
    )
    assert shown.returncode == 0, shown.stderr
    changes = _changes(listed)
    checklist = changes[("checklist", f"{edited['checklist']}/checklist")]
    assert checklist["action"] == "update" and checklist["fields"] == "items"
    assert checklist["detail"] == "1 item edited, 1 item added, 1 item removed"
    emptied = changes[("checklist", f"{edited['emptied']}/checklist")]
    assert emptied["action"] == "update" and emptied["detail"].endswith("items removed")
    assert ("create", "remote_link") in {
        (c["action"], c["entity"])
        for k, c in changes.items()
        if k[1].startswith(edited["remote_link"])
    }
    (replaced,) = [c for k, c in changes.items() if k[0] == REPLACED]
    assert (
        replaced["action"] == "delete" and "bytes); the old file is deleted" in replaced["detail"]
    )
    # its mirrored deletion would find it gone: one delete planned, not two
    assert not [k for k in changes if k[1].startswith(f"attachment:{edited['attachment']}/")]
    unlinked = [
        c for k, c in changes.items() if k[1].startswith(f"remote_link:{edited['unlinked']}/")
    ]
    assert [c["action"] for c in unlinked] == ["delete"]
    assert {c["action"] for k, c in changes.items() if k[0] == "issue"} == {"update"}
    assert "update: checklist" in shown.stdout and "delete: attachment_replaced" in shown.stdout

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.failed == 0 and second.complete
    made = second.details["changes"]
    assert made["checklist"] == {"updated": 2}
    assert made["attachment"]["replaced"] == 1 and made["remote_link"]["deleted"] == 1
    # the old file is deleted once: by its replacement (its mirrored deletion finds it gone)
    assert made["attachment"].get("deleted", 0) == 0
    queues = source_queues(info)
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        linked = edited["remote_link"]
        for key in (linked, edited["unlinked"]):
            assert await _remote_links(target, _target_key(key)) == await _remote_links(source, key)
        before = without_sync_times(await org_snapshot(source, queues))
        after = without_sync_times(
            await org_snapshot(
                target, [TARGET_QUEUE.get(q, q) for q in queues], rename={"NEW": "TEST"}
            )
        )
    assert after[edited["emptied"]]["checklist"] == []
    for key in before:  # every issue, the edited ones among them
        assert after[key] == before[key], key
    assert (await verify(config, all_services(), environ=environ(info))).ok
    async with client_for(info, "target") as target:
        (link,) = [
            r
            for r in await target.list_remote_links(_target_key(linked))
            if r["object"]["key"] == "haul/pull/39"
        ]
        await target.delete_record(_target_key(linked), "remotelinks", link["id"])
    missing = await verify(config, all_services(), environ=environ(info))
    assert {(d.entity, d.field) for d in missing.differences} == {("remote_link", "record")}


async def test_the_checklists_move_of_updated_at_is_counted_and_named(
    sandbox: Any, tmp_path: Path
) -> None:
    """The API adds a checklist only as an ordinary edit after the import (no import takes
    one, nothing sets updatedAt later): each issue with a checklist is counted, named."""
    info = sandbox.info
    config = _config(tmp_path, info)

    first = await run_all(config, all_services(), environ=environ(info))

    with StagingStore.open(config.staging_path) as store:
        checklists = store.count_records().get("checklist", 0)
    assert checklists > 0
    assert first.details["not_carried"][CHECKLIST_MOVES_UPDATED] == checklists


async def test_plan_lists_the_updates_transitions_moves_and_deletes_of_a_sync(
    sandbox: Any, tmp_path: Path
) -> None:
    """What showed as `skip` before: an edited summary is an update naming the field and both
    values, a walked status a transition, a moved issue a move, a deleted comment a delete;
    the writes are counted and timed."""
    info = sandbox.info
    config = _config(tmp_path, info, MIRROR)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        changed = await people_change_everything(source)
    await extract(config, all_services(), environ=environ(info))

    plan = await make_plan(config, all_services(), environ=environ(info))

    by = {(c.entity, c.source_id, c.action): c for c in plan.changes}
    summary = by[("issue", changed["summary"], "update")]
    assert summary.fields == ("summary",) and "-> 'Renamed at the source'" in summary.detail
    walked = [c for c in plan.changes if c.entity == "issue_status"]
    assert [(c.source_id.split("@")[0], c.action) for c in walked] == [
        (f"{changed['status']}/status", "transition")
    ]
    assert ("issue", changed["moved"], "move") in by
    deleted = {c.source_id.split(":")[0] for c in plan.changes if c.action == "delete"}
    assert {"comment", "worklog", "link", "attachment"} <= deleted
    assert plan.counts["issue"]["skip"] < 50 and plan.counts["issue"]["update"] >= 5
    assert plan.writes == sum(c.writes for c in plan.changes if c.action != "create") + sum(
        row["create"] for row in plan.counts.values()
    )
