"""A text patch (the description written again once its files are in the target) is
brought up to date only when its text changes at the source, end to end over the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.children.texts import ISSUE_TEXT
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config


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
    assert (await run_all(config, all_services(), environ=environ(info))).complete
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

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.failed == 0 and second.problems == 1  # the conflict, named with both values
    async with client_for(info, "target") as target:
        kept = (await target.get_issue(both.target_id))["description"]
        carried = (await target.get_issue(only_source.target_id))["description"]
    assert kept == edited
    assert carried.endswith("Source words") and "/attachments/" in carried


# the same path under either rule: source-wins (where a false conflict overwrote the person's
# text) runs by default, keep-target (where it was reported on every run, exit 3) in the slow run
@pytest.mark.parametrize(
    "rule", [pytest.param("keep-target", marks=pytest.mark.slow), "source-wins"]
)
async def test_a_description_with_files_edited_only_in_the_target_is_kept_with_no_conflict(
    sandbox: Any, tmp_path: Path, rule: str
) -> None:
    """The base of a description that shows files is what haul wrote once it patched the
    file references: a person's edit in the target, with only the summary and tags changed
    at the source, is "changed in the target": kept, no conflict (the run's exit would be 0),
    under either conflict rule. Neither the issue's refresh nor the patch row (it carries
    the description alone) writes the description back over the person's edit."""
    info = sandbox.info
    extra = f'[sync]\nconflicts = "{rule}"\n'
    config = load_config(write_config(tmp_path, info, queues=source_queues(info), extra=extra))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    with StagingStore.open(config.staging_path) as store:
        row = next(store.ledger.iter_rows(entity=ISSUE_TEXT, status="done"))
    assert row.target_id is not None
    async with client_for(info, "target") as target:
        written = (await target.get_issue(row.target_id))["description"]
        edited = f"A person's words in the target\n\n{written}"
        await target.update_issue(row.target_id, {"description": edited})
    async with client_for(info, "source") as source:
        changed = {"summary": "Renamed at the source", "tags": ["retagged-at-the-source"]}
        await source.update_issue(row.source_id, changed)

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.failed == 0 and second.problems == 0, second.counts
    async with client_for(info, "target") as target:
        issue = await target.get_issue(row.target_id)
    assert issue["description"] == edited
    assert {name: issue[name] for name in changed} == changed
    checked = await verify(
        config, all_services(), environ=environ(info), entities=("issue", ISSUE_TEXT)
    )
    assert checked.ok
    known = {(d.entity, d.field, d.known) for d in checked.differences}
    assert known == {
        ("issue", "description", "changed in the target"),
        (ISSUE_TEXT, "description", "changed in the target"),
    }
    with StagingStore.open(config.staging_path) as store:
        assert list(store.written.iter_overwritten()) == []
