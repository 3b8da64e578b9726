"""A text patch (the description written again once its files are in the target) is
brought up to date only when its text changes at the source, end to end over the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul.pipelines.commands.run import run_all
from haul.pipelines.config import load_config
from haul.pipelines.tracker.sync.texts import ISSUE_TEXT
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config


async def test_a_description_edited_in_the_target_is_kept_when_another_field_changes(
    sandbox: Any, tmp_path: Path
) -> None:
    """The row that patched the description's file references carries the description
    alone: a summary edited at the source does not write the description back over the
    target's edit (the issue's own three-way refresh is what decides about it)."""
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=source_queues(info)))
    assert (await run_all(config, environ=environ(info))).complete
    with StagingStore.open(config.staging_path) as store:
        row = next(store.ledger.iter_rows(entity=ISSUE_TEXT, status="done"))
        source_key, target_key = row.source_id, row.target_id
    assert target_key is not None
    async with client_for(info, "target") as target:
        written = (await target.get_issue(target_key))["description"]
        edited = f"{written}\n\nEdited in the target"
        await target.update_issue(target_key, {"description": edited})
    async with client_for(info, "source") as source:
        await source.update_issue(source_key, {"summary": "Renamed at the source"})

    second = await run_all(config, environ=environ(info))

    assert second.complete, second.counts
    async with client_for(info, "target") as target:
        issue = await target.get_issue(target_key)
    assert issue["summary"] == "Renamed at the source"
    assert issue["description"] == edited


async def test_a_description_with_files_changed_on_both_sides_keeps_the_targets(
    sandbox: Any, tmp_path: Path
) -> None:
    """A description that shows files, edited at the source and by a person in the target:
    a conflict (reported, exit 3 under keep-target), and neither the issue's refresh nor the
    patch of its file references writes the source's text over the person's. A description
    patched by haul alone is no edit of the target's: changed only at the source, it is
    carried with no conflict."""
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=source_queues(info)))
    assert (await run_all(config, environ=environ(info))).complete
    with StagingStore.open(config.staging_path) as store:
        rows = list(store.ledger.iter_rows(entity=ISSUE_TEXT, status="done"))
    (both, only_source) = rows[0], rows[1]
    assert both.target_id is not None and only_source.target_id is not None
    async with client_for(info, "source") as source:
        for row in (both, only_source):
            was = (await source.get_issue(row.source_id))["description"]
            await source.update_issue(row.source_id, {"description": f"{was}\n\nSource words"})
    async with client_for(info, "target") as target:
        written = (await target.get_issue(both.target_id))["description"]
        edited = f"{written}\n\nTarget words"
        await target.update_issue(both.target_id, {"description": edited})

    second = await run_all(config, environ=environ(info))

    assert second.failed == 0 and second.problems == 1  # the conflict, named with both values
    async with client_for(info, "target") as target:
        kept = (await target.get_issue(both.target_id))["description"]
        carried = (await target.get_issue(only_source.target_id))["description"]
    assert kept == edited
    assert carried.endswith("Source words") and "/attachments/" in carried
