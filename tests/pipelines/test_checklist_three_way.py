"""A checklist follows the three-way rule item by item: an item edited only at the source is
carried, one edited (or added) only in the target is the target's, one edited on both sides is
a conflict (the target keeps it, unless `[sync] conflicts = "source-wins"`, which overwrites it
and records what it overwrote). Pure cases of `settle_items`, then end to end over real
sockets."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.sync.three_way_items import settle_items
from haul.pipelines.tracker.children.checklist_sync import item_rule
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import (
    TOKEN_ENV,
    client_for,
    environ,
    source_queues,
    write_config,
)
from tests.helpers.sync_changes import holding

BASE = {
    "s1": {"id": "t1", "fields": {"text": "a", "checked": False}},
    "s2": {"id": "t2", "fields": {"text": "b", "checked": False}},
}
KEEP, WIN = item_rule("keep-target"), item_rule("source-wins")


def _source(*items: tuple[str, str, bool]) -> list[tuple[str, dict[str, Any]]]:
    return [(sid, {"text": text, "checked": checked}) for sid, text, checked in items]


def _target(*items: tuple[str, str, bool]) -> list[dict[str, Any]]:
    return [{"id": tid, "text": text, "checked": checked} for tid, text, checked in items]


def test_an_item_edited_at_the_source_is_edited_and_one_edited_in_the_target_is_kept() -> None:
    source = _source(("s1", "a2", False), ("s2", "b", False))
    target = _target(("t1", "a", False), ("t2", "b (mine)", True), ("t3", "added by hand", False))
    settling = settle_items(source, BASE, target, KEEP)
    assert settling.edit == [("t1", {"text": "a2"})]
    assert not settling.add and not settling.remove and not settling.conflicts
    assert settling.kept == 1
    assert settling.base["s2"] == BASE["s2"] and settling.base["s1"]["fields"]["text"] == "a2"


def test_an_item_edited_on_both_sides_is_a_conflict_or_overwritten() -> None:
    source = _source(("s1", "ours", False), ("s2", "b", False))
    target = _target(("t1", "theirs", False), ("t2", "b", False))
    kept = settle_items(source, BASE, target, KEEP)
    assert kept.conflicts == {"item 1 text": ("ours", "theirs")} and not kept.edit
    assert kept.base["s1"] == BASE["s1"]  # stays a conflict until a person settles it
    won = settle_items(source, BASE, target, WIN)
    assert won.edit == [("t1", {"text": "ours"})] and not won.conflicts
    assert won.overwritten == [("item 1 text", "ours", "theirs")]


def test_removed_at_the_source_is_deleted_unless_a_person_edited_it() -> None:
    gone = settle_items(_source(("s2", "b", False)), BASE, _target(("t1", "a", False)), KEEP)
    assert gone.remove == ["t1"]
    edited = _target(("t1", "a, edited", False), ("t2", "b", False))
    settling = settle_items(_source(("s2", "b", False)), BASE, edited, KEEP)
    assert not settling.remove and list(settling.conflicts) == ["item 'a' (removed at the source)"]


def test_a_new_item_is_appended_unless_an_unclaimed_one_reads_the_same() -> None:
    source = _source(("s1", "a", False), ("s2", "b", False), ("s3", "c", False))
    appended = settle_items(source, BASE, _target(("t1", "a", False), ("t2", "b", False)), KEEP)
    assert appended.add == [("s3", {"text": "c", "checked": False})]
    lost_reply = _target(("t1", "a", False), ("t2", "b", False), ("t9", "c", False))
    adopted = settle_items(source, BASE, lost_reply, KEEP)
    assert not adopted.writes and adopted.base["s3"]["id"] == "t9"


def test_an_item_deleted_in_the_target_stays_deleted() -> None:
    source = _source(("s1", "a", False), ("s2", "b", False))
    settling = settle_items(source, BASE, _target(("t2", "b", False)), KEEP)
    assert not settling.writes and settling.kept == 1 and settling.base["s1"] == BASE["s1"]


# -- end to end ---------------------------------------------------------------------------


async def _items(info: dict[str, Any], org: str, key: str) -> list[dict[str, Any]]:
    async with client_for(info, org) as client:
        return list(await client.list_checklist(key))


async def _edit(info: dict[str, Any], org: str, key: str, index: int, text: str) -> None:
    async with client_for(info, org) as client:
        item = (await client.list_checklist(key))[index]
        await client.update_checklist_item(key, str(item["id"]), {"text": text})


async def _checklist_issue(info: dict[str, Any]) -> str:
    async with client_for(info, "source") as source:
        return (await holding(source, "DEV", "checklistItems", 3))[0]


async def _migrated_then_edited_both_sides(
    info: dict[str, Any], tmp_path: Path
) -> tuple[Path, str]:
    """A full run, then a checklist's item 1 edited in the target, 2 at the source, 3 on both
    sides; the config's path and the issue's key."""
    path = write_config(tmp_path, info, queues=source_queues(info))
    assert (await run_all(load_config(path), all_services(), environ=environ(info))).complete
    key = await _checklist_issue(info)
    await _edit(info, "target", key, 0, "A person's item in the target")
    await _edit(info, "source", key, 1, "Edited at the source")
    await _edit(info, "target", key, 2, "Item as the target says")
    await _edit(info, "source", key, 2, "Item as the source says")
    return path, key


async def test_checklist_items_follow_the_three_way_rule_end_to_end(
    sandbox: Any, tmp_path: Path
) -> None:
    """Item 1 edited in the target, item 2 at the source, item 3 on both sides, one added
    by hand in the target: 1 and the added one kept, 2 carried, 3 a conflict (exit 3)."""
    info = sandbox.info
    path, key = await _migrated_then_edited_both_sides(info, tmp_path)
    config = load_config(path)
    async with client_for(info, "target") as target:
        await target.add_checklist_items(key, [{"text": "Added by hand"}])

    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    done = run_haul("run", "--config", path, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    texts = [item["text"] for item in await _items(info, "target", key)]
    assert texts[:3] == [
        "A person's item in the target",
        "Edited at the source",
        "Item as the target says",
    ]
    assert "Added by hand" in texts
    with StagingStore.open(config.staging_path) as store:
        (why,) = [p.error for p in store.problems if p.entity == "checklist:change"]
    assert "item 3 text: source 'Item as the source says', target 'Item as the target says'" in why
    failures = run_haul("failures", "--config", path, env=env)
    assert "Item as the target says" in failures.stdout, failures.stdout
    again = await run_all(config, all_services(), environ=environ(info))
    assert again.problems == 1
    assert [item["text"] for item in await _items(info, "target", key)] == texts


async def test_source_wins_overwrites_a_checklist_item_and_records_it(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    extra = '[sync]\nconflicts = "source-wins"\n'
    config = load_config(write_config(tmp_path, info, queues=source_queues(info), extra=extra))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    key = await _checklist_issue(info)
    await _edit(info, "target", key, 0, "Item as the target says")
    await _edit(info, "source", key, 0, "Item as the source says")

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.problems == 0
    assert second.details["changes"]["checklist"]["overwritten"] == 1
    assert (await _items(info, "target", key))[0]["text"] == "Item as the source says"
    with StagingStore.open(config.staging_path) as store:
        (overwritten,) = store.written.iter_overwritten()
    assert (overwritten.entity, overwritten.source_id) == ("checklist", f"{key}/checklist")
    assert (overwritten.field, overwritten.source, overwritten.target) == (
        "item 1 text",
        "Item as the source says",
        "Item as the target says",
    )


def _plan_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


async def test_plan_previews_checklist_items_three_ways_and_names_what_no_update_changes(
    sandbox: Any, tmp_path: Path
) -> None:
    """Before the run: the checklist's item edited at the source is an update, the one
    edited only in the target is not listed, the one edited on both sides is a conflict; a
    mail list following an issue at the source (no update call follows) is `not updatable`."""
    info = sandbox.info
    path, key = await _migrated_then_edited_both_sides(info, tmp_path)
    async with client_for(info, "source") as source:
        control = info["tracker"].rsplit("/v3", 1)[0]
        await source.core.request(
            "PUT",
            f"{control}/_sandbox/issues/DEV-5/maillists",
            json={"followingMaillists": ["late-list@example.com"]},
        )
    await extract(load_config(path), all_services(), environ=environ(info))
    listed = tmp_path / "changes.csv"

    shown = await asyncio.to_thread(
        run_haul, "plan", "--config", path, "--changes", listed, env=haul_env(environ(info))
    )

    assert shown.returncode == 0, shown.stderr
    rows = _plan_rows(listed)
    checklist = [(r["action"], r["detail"]) for r in rows if r["source_key"] == f"{key}/checklist"]
    assert checklist[0] == ("update", "1 item edited")
    assert checklist[1][0] == "conflict" and "item 3 text" in checklist[1][1]
    (fixed,) = [r for r in rows if r["action"] == "not updatable"]
    assert (fixed["entity"], fixed["source_key"], fixed["fields"]) == (
        "issue",
        "DEV-5",
        "followingMaillists",
    )
    assert "late-list@example.com" in fixed["detail"]
