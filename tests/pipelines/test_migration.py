"""End to end over real sockets: a tiny org migrated through the sandbox, compared field by field."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.commands.run import extract, load, run_all
from haul.pipelines.commands.status import gather_status
from haul.pipelines.config import load_config
from haul.pipelines.export.command import ExportRequest, run_export
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.pipelines.report.counts import entity_counts
from haul.pipelines.streams import NOT_STAGED
from haul.state.store import StagedRecord, StagingStore
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config
from tests.helpers.org_snapshot import org_snapshot


async def snapshots(
    info: dict[str, Any], queues: list[str], mapping: dict[str, str]
) -> tuple[dict, dict]:
    back = {target: source for source, target in mapping.items()}
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        before = await org_snapshot(source, queues)
        after = await org_snapshot(target, [mapping.get(q, q) for q in queues], rename=back)
    return before, after


async def test_run_moves_every_record_and_field(sandbox: Any, tmp_path: Path) -> None:
    """After `haul run`, the target holds every issue and sub-record of the source, mapped."""
    info = sandbox.info
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues))

    summary = await run_all(config, all_services(), environ=environ(info))

    assert summary.failed == 0
    assert summary.complete
    by_entity = {row.entity: row for row in summary.counts}
    assert by_entity["issue"].loaded == summary.details["source_issue_count"] > 0
    assert by_entity["comment"].loaded > 0 and by_entity["link"].loaded > 0
    before, after = await snapshots(info, queues, {"TEST": "NEW"})
    assert sorted(after) == sorted(before)
    for key in before:
        assert after[key] == before[key], key


@pytest.mark.slow  # one of several full runs of its kind; make test-all runs it
async def test_second_run_changes_nothing(sandbox: Any, tmp_path: Path) -> None:
    """Running again after a complete run neither re-drains nor re-loads anything."""
    info = sandbox.info
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues))
    first = await run_all(config, all_services(), environ=environ(info))
    assert first.complete

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.details["loaded"] == 0
    assert second.details["issues_drained"] == 0
    assert second.complete
    before, after = await snapshots(info, queues, {"TEST": "NEW"})
    assert after == before


async def test_damaged_attachment_bytes_are_never_sent_and_come_back_with_the_next_extract(
    sandbox: Any, tmp_path: Path
) -> None:
    """Blob files are not fsynced, so a power cut after the extract can leave one cut short.
    The load re-hashes each blob before sending it: the damaged one fails its record and is
    not uploaded; the next extract downloads it again, and --retry-failed loads it."""
    info = sandbox.info
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues))
    await extract(config, all_services(), environ=environ(info))
    with StagingStore.open(config.staging_path) as store:
        attachment = next(r for r in store.iter_records("attachment") if r.blob)
        assert attachment.blob is not None
        blob = store.blobs.path(attachment.blob)
    whole = blob.read_bytes()
    blob.write_bytes(whole[: len(whole) // 2])  # what an unsynced file can hold after a power cut

    first = await load(config, all_services(), environ=environ(info))

    assert first.failed == 1
    with StagingStore.open(config.staging_path) as store:
        row = store.ledger.get("attachment", attachment.source_id)
        assert row is not None and row.status == "failed"
        assert "damaged" in (row.error or "") and "haul extract" in (row.error or "")
        assert not store.blobs.exists(attachment.blob)  # thrown away, not sent
        assert store.drained_version(attachment.parent or "") is None
    target_key = (attachment.parent or "").replace("TEST-", "NEW-")
    async with client_for(info, "target") as target:
        names = [a["name"] for a in await target.list_attachments(target_key)]
    assert attachment.raw["name"] not in names

    again = await extract(config, all_services(), environ=environ(info))
    assert again.details["issues_drained"] == 1
    assert blob.read_bytes() == whole
    second = await load(config, all_services(), environ=environ(info), retry_failed=True)

    assert second.failed == 0 and second.complete
    before, after = await snapshots(info, queues, {"TEST": "NEW"})
    assert after == before


async def test_a_redrained_issue_downloads_again_only_the_bytes_no_longer_intact(
    sandbox: Any, tmp_path: Path
) -> None:
    """A drain reuses staged bytes only while they hash to their name: of an issue drained
    again, a damaged blob is downloaded anew and the intact ones are not."""
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=source_queues(info)))
    await extract(config, all_services(), environ=environ(info))
    with StagingStore.open(config.staging_path) as store:
        by_issue: dict[str, list[StagedRecord]] = {}
        for record in store.iter_records("attachment"):
            if record.blob:
                by_issue.setdefault(record.parent or "", []).append(record)
        issue, staged = next((k, rs) for k, rs in by_issue.items() if len(rs) >= 2)
        damaged = staged[0]
        assert damaged.blob is not None
        blob = store.blobs.path(damaged.blob)
        store.forget_drained("issue", source_id=issue)
    whole = blob.read_bytes()
    blob.write_bytes(b"")  # an unsynced file after a power cut
    download = "GET /v3/issues/{key}/attachments/{attachment_id}/{filename}"
    before = sandbox.stats()["by_route"].get(download, 0)

    again = await extract(config, all_services(), environ=environ(info))

    assert again.details["issues_drained"] == 1
    assert sandbox.stats()["by_route"][download] - before == 1  # of len(staged) >= 2
    assert blob.read_bytes() == whole


async def test_incremental_extract_redrains_only_changed_issues(
    sandbox: Any, tmp_path: Path
) -> None:
    """A later extract stages only issues updated since the watermark (minus the lookback)."""
    info = sandbox.info
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues))
    await extract(config, all_services(), environ=environ(info))
    async with client_for(info, "source") as source:
        async with aclosing(
            source.scroll_issues(query=f"Queue: {queues[0]}", per_scroll=1)
        ) as pages:
            changed = (await anext(pages))[0]["key"]
        await source.core.request("POST", f"/issues/{changed}/comments", json={"text": "new today"})

    again = await extract(config, all_services(), environ=environ(info))

    assert again.details["issues_drained"] == 1
    with StagingStore.open(config.staging_path) as store:
        texts = [row.raw["text"] for row in store.iter_records("comment", parent=changed)]
    assert "new today" in texts


async def test_nightly_run_carries_edits_and_new_comments(sandbox: Any, tmp_path: Path) -> None:
    """After a complete run, an edited issue with a new comment reaches the target next run.

    The new comment is dated after the issue's imported updatedAt, so the loader first edits
    the target issue (which moves its window to now), then imports the comment.
    """
    info = sandbox.info
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "source") as source:
        async with aclosing(source.scroll_issues(query="Queue: TEST", per_scroll=1)) as pages:
            changed = (await anext(pages))[0]["key"]
        await source.update_issue(changed, {"summary": "Renamed overnight"})
        await source.core.request("POST", f"/issues/{changed}/comments", json={"text": "late note"})

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete, second.counts
    assert second.details["issues_refreshed"] == 1
    assert second.details["loaded"] == 1
    target_key = changed.replace("TEST-", "NEW-")
    async with client_for(info, "target") as target:
        issue = await target.get_issue(target_key)
        texts = [c["text"] async for c in target.iter_comments(target_key)]
    assert issue["summary"] == "Renamed overnight"
    assert texts.count("late note") == 1


async def test_an_expired_scroll_restarts_from_the_watermark(sandbox: Any, tmp_path: Path) -> None:
    """Slow drains let the scroll expire between pages; extract restarts from its watermark."""
    info = sandbox.info
    queues = source_queues(info)
    tuning = "[tuning]\nconcurrency = 1\nper_scroll = 5\nscroll_ttl_ms = 100\n"
    config = load_config(write_config(tmp_path, info, queues=queues, extra=tuning))
    sandbox.set_faults("latency:30@*/comments")

    summary = await extract(config, all_services(), environ=environ(info))

    sandbox.set_faults("")
    assert summary.details["scroll_restarts"] > 0
    assert summary.details["issues_drained"] == summary.details["source_issue_count"]
    with StagingStore.open(config.staging_path) as store:
        assert store.count_records()["issue"] == summary.details["source_issue_count"]
        assert list(store.needs_drain("issue")) == []


async def test_a_migrations_config_asks_for_no_changelog_and_an_exports_drains_every_issue_once(
    sandbox: Any, tmp_path: Path
) -> None:
    """With the default `changelog = "auto"`, a migration's config (a target, no [export])
    sends no changelog request (and the store says so for `haul export`); a config with an
    [export] section wants it and re-drains every issue once, so none is left without."""
    info = sandbox.info
    queues = source_queues(info)
    skip = load_config(write_config(tmp_path, info, queues=queues))
    changelog_route = "GET /v3/issues/{key}/changelog"

    before = sandbox.stats()["by_route"].get(changelog_route, 0)
    first = await extract(skip, all_services(), environ=environ(info))
    assert sandbox.stats()["by_route"].get(changelog_route, 0) == before
    reason = (
        '[scope] changelog = "auto" skips it in a config with [target] and no [export]; '
        "set it to true to stage it"
    )
    with StagingStore.open(skip.staging_path) as store:
        assert store.count_records().get("changelog", 0) == 0
        assert store.get_checkpoint(NOT_STAGED) == {"changelog": reason}
        # the counts table has no row of zeros for it; `haul status` says why instead
        assert "changelog" not in {row.entity for row in entity_counts(store, services())}
        assert gather_status(store, services()).not_staged == {"changelog": reason}
    exported = run_export(skip, ExportRequest(out=tmp_path / "exports"), services=services())
    (warning,) = exported.warnings  # the config chose so: a warning naming what is left out
    assert warning.startswith("changelog: not staged by the last extract, as the config chose")
    assert reason in warning and "cycle_times" in warning
    assert exported.exit_code == 0 and not exported.failed

    want = load_config(write_config(tmp_path, info, queues=queues, extra="[export]\n"))
    again = await extract(want, all_services(), environ=environ(info))
    issues = first.details["issues_staged"]
    assert again.details["issues_drained"] == issues  # each once, though some came twice
    assert sandbox.stats()["by_route"][changelog_route] - before == issues
    with StagingStore.open(want.staging_path) as store:
        with_changelog = {row.parent for row in store.iter_records("changelog")}
        assert len(with_changelog) == issues
        assert store.get_checkpoint(NOT_STAGED) == {}
        counted = {row.entity: row.in_store for row in entity_counts(store, services())}
        assert counted["changelog"] == store.count_records()["changelog"]
    third = await extract(want, all_services(), environ=environ(info))
    assert third.details["issues_drained"] == 0
