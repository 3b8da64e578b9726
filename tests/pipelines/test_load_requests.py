"""The load reads nothing a write's reply already holds: counted through the sandbox's request
counters, route by route, on a tiny migration and the sync that follows it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.commands.run import extract, load
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config
from tests.helpers.sync_changes import holding

APPEND = "POST /v3/issues/{key}/checklistItems"
LIST = "GET /v3/issues/{key}/checklistItems"
ISSUE = "GET /v3/issues/{key}"
COMMENTS = "GET /v3/issues/{key}/comments"
COMMENT_EDIT = "PATCH /v3/issues/{key}/comments/{comment_id}"


def _served(sandbox: Any) -> Counter[str]:
    return Counter(sandbox.stats()["by_route"])


async def test_the_load_reads_back_no_checklist_and_no_comment_it_wrote(
    sandbox: Any, tmp_path: Path
) -> None:
    """Each checklist's items go in one request, and their target ids (the base of a later
    sync) come from that request's reply: no listing is read back, at the first load or when
    a sync appends an item added at the source. A comment's text written again with its
    files' target ids is written from what haul wrote of it, without reading the comments;
    an issue is imported without a look for it first."""
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=source_queues(info)))
    await extract(config, all_services(), environ=environ(info))
    with StagingStore.open(config.staging_path) as store:
        checklists = store.count_records()["checklist"]
    before = _served(sandbox)

    assert (await load(config, all_services(), environ=environ(info))).complete

    loaded = _served(sandbox) - before
    assert checklists > 0 and loaded[APPEND] == checklists
    assert loaded[LIST] == 0
    with StagingStore.open(config.staging_path) as store:
        done = {entity: n.get("done", 0) for entity, n in store.ledger.counts().items()}
    assert done["comment_references"] > 0
    assert loaded[COMMENT_EDIT] == done["comment_references"] and loaded[COMMENTS] == 0
    # each access list and description compared before its edit; no issue looked for before
    # its import, though the target's queues were found there (its import refuses a second)
    assert loaded[ISSUE] == done.get("issue_access", 0) + done.get("issue_references", 0)
    async with client_for(info, "source") as source:
        key = (await holding(source, "DEV", "checklistItems", 1))[0]
        await source.add_checklist_items(key, [{"text": "Added at the source"}])
    await extract(config, all_services(), environ=environ(info))
    before = _served(sandbox)

    assert (await load(config, all_services(), environ=environ(info))).complete

    synced = _served(sandbox) - before
    assert synced[APPEND] == 1
    assert synced[LIST] == 1  # the listing the three ways are settled against, none after
    async with client_for(info, "target") as target:
        items = await target.list_checklist(key)
    with StagingStore.open(config.staging_path) as store:
        base = store.written.base("checklist", f"{key}/checklist")
    assert base is not None and items[-1]["text"] == "Added at the source"
    assert str(items[-1]["id"]) in {str(item["id"]) for item in base["items"].values()}


@pytest.mark.parametrize(
    ("faults", "gets"),
    [("", 0), ("error_object:1@/v3/issues/_search", 5)],
    ids=["one search", "a search that fails"],
)
async def test_a_sync_reads_the_issues_it_brings_up_to_date_by_one_search(
    sandbox: Any, tmp_path: Path, faults: str, gets: int
) -> None:
    """Five issues retitled at the source: the sync judges each against the target's issue,
    read by one search of their keys (`{"keys": [...]}`), not by a GET each; each edit names
    the version that search read. A search that answers the tracker's error object where its
    list belongs: each issue is read by itself (a GET), and every edit is still made."""
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=source_queues(info)))
    await extract(config, all_services(), environ=environ(info))
    assert (await load(config, all_services(), environ=environ(info))).complete
    keys = [f"DEV-{n}" for n in range(1, 6)]
    async with client_for(info, "source") as source:
        for key in keys:
            await source.update_issue(key, {"summary": f"{key} retitled at the source"})
    await extract(config, all_services(), environ=environ(info))
    sandbox.set_faults(faults)
    before = _served(sandbox)

    assert (await load(config, all_services(), environ=environ(info))).complete

    synced = _served(sandbox) - before
    assert synced["POST /v3/issues/_search"] == 1
    assert synced[ISSUE] == gets
    assert synced["PATCH /v3/issues/{key}"] == len(keys)
    async with client_for(info, "target") as target:
        for key in keys:
            assert (await target.get_issue(key))["summary"] == f"{key} retitled at the source"
