"""The wiki end to end on the sandbox, over sockets: `haul run` moves the tracker and a wiki
tree together; every page, attachment, grid and comment arrives once, and a rerun writes
nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from tests.helpers.haul_fixtures import environ, writes, written_since
from tests.helpers.wiki_fixtures import (
    keys_rewritten,
    mapping_for,
    rewriter_for,
    snapshots,
    wiki_client,
    write_wiki_config,
)


@pytest.fixture(scope="module")
def sandbox() -> Any:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=7) as running:
        yield running


def test_haul_run_moves_the_wiki_with_the_tracker_and_a_rerun_writes_nothing(sandbox, tmp_path):
    info = sandbox.info
    config = load_config(write_wiki_config(tmp_path, info))
    summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert summary.complete, summary
    counts = {row.entity: row for row in summary.counts}
    assert counts["wiki_page"].loaded == counts["wiki_page"].to_load > 0
    for entity in ("wiki_attachment", "wiki_grid", "wiki_grid_rows", "wiki_comment"):
        assert counts[entity].to_load > 0, entity
        assert counts[entity].failed == 0, entity
    assert summary.in_target["wiki_page"] == counts["wiki_page"].to_load

    source, target = snapshots(info)
    assert sorted(target) == sorted(source)
    rewriter = rewriter_for(info)
    moved_root = next(iter(mapping_for(info)))
    for key, page in source.items():
        migrated = target[key]
        assert migrated["content"] == rewriter.rewrite(page["content"], key), key
        assert f"](/{moved_root}/" not in migrated["content"], key
        assert migrated["title"] == page["title"]
        assert migrated["attachments"] == page["attachments"], key
        assert migrated["grids"] == [keys_rewritten(grid, rewriter) for grid in page["grids"]], key
        assert [body for body, _ in migrated["comments"]] == [
            rewriter.rewrite(body, key) for body, _ in page["comments"]
        ], key
        assert [parent is None for _, parent in migrated["comments"]] == [
            parent is None for _, parent in page["comments"]
        ], key
    verified = asyncio.run(verify(config, all_services(), environ=environ(info)))
    checked = {v.entity: v for v in verified.entities if v.entity.startswith("wiki_")}
    assert verified.ok, verified.differences[:5]
    assert all(v.checked == v.found == v.loaded > 0 for v in checked.values()), checked
    big = [size for page in source.values() for size, _ in page["attachments"].values()]
    assert max(big) > 5 * 1024 * 1024  # one file went up in more than one part

    before = writes(sandbox.stats())
    again = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert again.complete
    assert writes(sandbox.stats()) == before  # nothing changed at the source: nothing written
    assert snapshots(info)[1] == target


def test_a_later_run_carries_what_changed_at_the_source_and_only_that(sandbox, tmp_path):
    """An edited page is replaced in the target, a new comment added; nothing else is written."""
    info = sandbox.info
    config = load_config(write_wiki_config(tmp_path, info, queues=[], services=("wiki",)))
    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    root = info["wiki_roots"]["source"][1]  # kept at its own slug

    async def edit() -> None:
        async with wiki_client(info, "source") as source:
            page = await source.get_page(root)
            await source.replace_page(int(page["id"]), content=page["content"] + "\nEdited.")
            await source.create_comment(int(page["id"]), "A later comment.")

    asyncio.run(edit())
    before = writes(sandbox.stats())
    again = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert again.complete
    after = writes(sandbox.stats())
    written = written_since(before, after)
    assert written == {"POST /v1/pages/{idx:int}": 1, "POST /v1/pages/{idx:int}/comments": 1}
    target = snapshots(info)[1]
    assert target[root]["content"].endswith("\nEdited.")
    assert target[root]["comments"][-1][0] == "A later comment."
