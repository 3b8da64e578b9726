"""A later run carries every field the first load carried, three ways, over real sockets.

After a first `haul run`, people edit issues through the plain API: at the source (every kind
of carried field), in the target (a person's own edit), or the same field on both sides. The
next run carries what changed only at the source, keeps what changed only in the target, and
reports a field changed on both sides as a conflict with both values (the target keeps its
value, unless `[sync] conflicts = "source-wins"`, which overwrites it and records what it
overwrote)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import finish, haul_env, run_haul, start_haul, wait_for
from tests.helpers.field_edits import every_field_edit, seen
from tests.helpers.haul_fixtures import (
    TOKEN_ENV,
    client_for,
    environ,
    source_queues,
    write_config,
)
from tests.helpers.sync_changes import MIRROR, holding, people_change_everything


def _config(tmp_path: Path, info: dict[str, Any], extra: str = "") -> Config:
    return load_config(_config_file(tmp_path, info, extra))


def _config_file(tmp_path: Path, info: dict[str, Any], extra: str = "") -> Path:
    return write_config(tmp_path, info, queues=source_queues(info), extra=extra)


async def _both(info: dict[str, Any], key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        return await source.get_issue(key), await target.get_issue(key)


def _conflicts(config: Config, kind: str = "issue:change") -> list[str]:
    with StagingStore.open(config.staging_path) as store:
        return [p.error for p in store.problems if p.entity == kind]


async def test_every_carried_field_edited_at_the_source_reaches_the_target(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = _config(tmp_path, info)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        await source.update_issue("DEV-1", await every_field_edit(source, "DEV"))
    source_now, target_before = await _both(info, "DEV-1")
    edited = seen(source_now)
    unchanged = {n: v for n, v in seen(target_before).items() if edited[n] == v}
    assert unchanged == {}  # every field really was edited

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.failed == 0 and second.problems == 0
    source_now, target_now = await _both(info, "DEV-1")
    assert seen(target_now) == seen(source_now) == edited
    assert (await verify(config, all_services(), environ=environ(info))).ok


async def test_a_persons_edit_in_the_target_survives_and_a_field_edited_on_both_sides_conflicts(
    sandbox: Any, tmp_path: Path
) -> None:
    """DEV-2: summary edited in the target, description at the source: both stay. DEV-3:
    summary edited on both sides: a conflict naming both values; the target keeps its own."""
    info = sandbox.info
    path = _config_file(tmp_path, info)
    config = load_config(path)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        await target.update_issue("DEV-2", {"summary": "A person's summary in the target"})
        await source.update_issue("DEV-2", {"description": "Described again at the source"})
        await target.update_issue("DEV-3", {"summary": "Summary from the target"})
        await source.update_issue("DEV-3", {"summary": "Summary from the source"})

    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    done = run_haul("run", "--config", path, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    _, kept = await _both(info, "DEV-2")
    assert kept["summary"] == "A person's summary in the target"
    assert kept["description"] == "Described again at the source"
    _, conflicted = await _both(info, "DEV-3")
    assert conflicted["summary"] == "Summary from the target"
    (why,) = _conflicts(config)
    assert "summary: source 'Summary from the source', target 'Summary from the target'" in why
    failures = run_haul("failures", "--config", path, env=env)
    assert "Summary from the target" in failures.stdout, failures.stdout
    checked = await verify(config, all_services(), environ=environ(info))
    kinds = {(d.source_id, d.field): d.kind for d in checked.differences}
    assert kinds[("DEV-2", "summary")] == "changed in the target"
    # a run after the source's value came round to the target's settles the conflict
    async with client_for(info, "source") as source:
        await source.update_issue("DEV-3", {"summary": "Summary from the target"})
    assert (await run_all(config, all_services(), environ=environ(info))).problems == 0
    assert _conflicts(config) == []


async def test_a_persons_edit_between_the_syncs_read_and_its_write_is_not_overwritten(
    sandbox: Any, tmp_path: Path
) -> None:
    """The sync's edit of DEV-4 names the version it judged (the API's lock). The sandbox
    holds that edit; meanwhile a person retitles the issue in the target (through /v2, which
    the hold does not match). Released, the edit is refused as stale: the sync reads the issue
    again, finds the summary changed on both sides, and keeps the person's, a conflict."""
    info = sandbox.info
    path = _config_file(tmp_path, info)
    assert (await run_all(load_config(path), all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        await source.update_issue("DEV-4", {"summary": "Retitled at the source"})
    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    sandbox.set_faults("hold:edit:writes@/v3/issues/DEV-4")
    try:
        run = start_haul("run", "--config", path, env=env)
        wait_for(lambda: sandbox.held("edit"), 60, "the sync's edit of DEV-4 to be held")
        person = {"Authorization": f"OAuth {info['tokens']['admin']}",
                  "X-Org-ID": info["orgs"]["target"]}  # fmt: skip
        v2 = info["tracker"].removesuffix("/v3") + "/v2/issues/DEV-4"
        async with httpx.AsyncClient(headers=person) as http:
            edited = await http.patch(v2, json={"summary": "Retitled by a person"})
        assert edited.status_code == 200, edited.text
        sandbox.release("edit")
        out, err = finish(run)
    finally:
        sandbox.set_faults("")
    assert run.returncode == 3, out + err
    _, target_now = await _both(info, "DEV-4")
    assert target_now["summary"] == "Retitled by a person"
    (why,) = _conflicts(load_config(path))
    assert "source 'Retitled at the source', target 'Retitled by a person'" in why


async def test_source_wins_overwrites_the_target_and_records_what_it_overwrote(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = _config(tmp_path, info, '[sync]\nconflicts = "source-wins"\n')
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        await target.update_issue("DEV-3", {"summary": "Summary from the target", "storyPoints": 2})
        await source.update_issue("DEV-3", {"summary": "Summary from the source"})

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.problems == 0
    assert second.details["changes"]["issue"]["overwritten"] == 1
    _, target_now = await _both(info, "DEV-3")
    assert target_now["summary"] == "Summary from the source"
    assert target_now["storyPoints"] == 2  # changed in the target only: kept
    with StagingStore.open(config.staging_path) as store:
        (overwritten,) = store.written.iter_overwritten()
    assert (overwritten.source_id, overwritten.field) == ("DEV-3", "summary")
    assert (overwritten.source, overwritten.target) == (
        "Summary from the source",
        "Summary from the target",
    )


async def _comments(client: Any, key: str) -> list[dict[str, Any]]:
    return [c async for c in client.iter_comments(key, expand="")]


async def test_comments_follow_the_same_rule_at_their_grain(sandbox: Any, tmp_path: Path) -> None:
    """A comment edited on both sides is a conflict (the target keeps its text); one edited
    in the target only, and one added there, are the target's: verify names each apart from
    what was lost."""
    info = sandbox.info
    config = _config(tmp_path, info)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    key = (await holding_comments(info, "DEV", 2))[0]
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        theirs, ours = await _comments(target, key), await _comments(source, key)
        both, mine = theirs[0], theirs[1]
        await target.update_comment(key, both["id"], {"text": "The target's words"})
        await source.update_comment(key, ours[0]["id"], {"text": "The source's words"})
        await target.update_comment(key, mine["id"], {"text": "Only the target edited this"})
        await target.core.post_json(f"/issues/{key}/comments", json={"text": "Added by hand"})

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.problems == 1
    async with client_for(info, "target") as target:
        texts = [c["text"] for c in await _comments(target, key)]
    assert "The target's words" in texts and "The source's words" not in texts
    assert "Only the target edited this" in texts and "Added by hand" in texts
    (why,) = _conflicts(config, "comment:change")
    assert "The source's words" in why and "The target's words" in why
    checked = await verify(config, all_services(), environ=environ(info))
    kinds = sorted(d.kind for d in checked.differences if d.entity == "comment")
    assert kinds == ["added in the target", "changed in the target", "changed on both sides"]


async def holding_comments(info: dict[str, Any], queue: str, at_least: int) -> list[str]:
    async with client_for(info, "source") as source:
        return await holding(source, queue, "comments", at_least)


# the ordinary writes that take no `notify` (docs/how-to/nightly-sync.md, "Quiet writes"): all a sync may send loud
CANNOT_ASK = {
    "PATCH /v3/issues/{key}",
    "POST /v3/issues/{key}/transitions/{transition}/_execute",
    "PATCH /v3/issues/{key}/comments/{comment_id}",
    "PATCH /v3/issues/{key}/worklog/{worklog_id}",
    "DELETE /v3/issues/{key}/comments/{comment_id}",
    "DELETE /v3/issues/{key}/worklog/{worklog_id}",
    "DELETE /v3/issues/{key}/links/{link_id}",
    "DELETE /v3/issues/{key}/attachments/{attachment_id}",
    "POST /v3/issues/{key}/checklistItems",  # the first load's too: no import endpoint
    "POST /v3/issues/{key}/remotelinks",
}


async def test_a_sync_asks_for_quiet_wherever_the_api_lets_it(sandbox: Any, tmp_path: Path) -> None:
    """A sync carrying every kind of change (a move among them) sends loud only the writes
    that cannot ask otherwise; the move asks for quiet. The first load's imports notify no
    one (its checklists and remote links have no import: they cannot ask either)."""
    info = sandbox.info
    config = _config(tmp_path, info, MIRROR)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    assert set(sandbox.notified()["by_route"]) <= CANNOT_ASK
    async with client_for(info, "source") as source:
        await people_change_everything(source)
    before = sandbox.notified()["by_route"]

    assert (await run_all(config, all_services(), environ=environ(info))).complete

    after = sandbox.notified()["by_route"]
    loud = {route for route, n in after.items() if n != before.get(route, 0)}
    assert loud and loud <= CANNOT_ASK, loud
    assert after.get("POST /v3/issues/{key}/_move") == before.get("POST /v3/issues/{key}/_move")


async def test_a_field_no_update_call_changes_is_counted_named_and_known_to_verify(
    sandbox: Any, tmp_path: Path
) -> None:
    """A mail list starts following an issue at the source (outside the tracker's API; the
    sandbox's control route stands for it): no update call can follow, so the run counts it
    by field in what it could not carry, and verify names the difference `not updatable`,
    no loss."""
    info = sandbox.info
    config = _config(tmp_path, info)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        control = info["tracker"].rsplit("/v3", 1)[0]
        await source.core.request(
            "PUT",
            f"{control}/_sandbox/issues/DEV-5/maillists",
            json={"followingMaillists": ["late-list@example.com"]},
        )

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.problems == 0
    why = "followingMaillists: changed at the source, no update call changes it"
    assert second.details["not_carried"][why] == 1
    checked = await verify(config, all_services(), environ=environ(info))
    named = [(d.source_id, d.field, d.kind) for d in checked.differences]
    assert named == [("DEV-5", "followingMaillists", "not updatable")]
    assert checked.ok
