"""The wiki end to end on the sandbox, over sockets: `haul run` moves the tracker and a wiki
tree together; every page, attachment, grid and comment arrives once, and a rerun writes
nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from haul_fixtures import TOKEN_ENV, environ, source_queues, writes, written_since
from wiki_snapshot import wiki_snapshot

from haul.connectors.wiki import WikiClient
from haul.pipelines.config import load_config
from haul.pipelines.runner import run_all
from haul.pipelines.sandbox_config import SandboxConfig, write_sandbox_config
from haul.pipelines.verify import verify
from haul.pipelines.wiki.content import Rewriter, SlugMap

TEXT_CELLS = ("ticket", "string", "ticket_field")


@pytest.fixture(scope="module")
def sandbox() -> Any:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=7) as running:
        yield running


def wiki_client(info: dict[str, Any], org: str) -> WikiClient:
    return WikiClient.connect(
        base_url=info["wiki"], token=info["tokens"]["admin"], org_id=info["orgs"][org]
    )


def mapping_for(info: dict[str, Any]) -> dict[str, str]:
    """The first root moves elsewhere; the others keep their slugs."""
    first = info["wiki_roots"]["source"][0]
    return {first: "archive/" + first.rpartition("/")[2]}


def write_wiki_config(directory: Path, info: dict[str, Any], **options: Any) -> Path:
    settings: dict[str, Any] = {
        "source_token_env": TOKEN_ENV,
        "endpoint_extra": {"read_rps": 2000, "write_rps": 2000},
        "queues": source_queues(info),
        "services": ("tracker", "wiki"),
        "wiki_mapping": mapping_for(info),
    }
    return write_sandbox_config(directory, info, SandboxConfig(**{**settings, **options}))


def snapshots(info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    roots = list(info["wiki_roots"]["source"])
    mapping = mapping_for(info)

    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        async with wiki_client(info, "source") as source, wiki_client(info, "target") as target:
            return (
                await wiki_snapshot(source, {root: root for root in roots}),
                await wiki_snapshot(target, {root: mapping.get(root, root) for root in roots}),
            )

    return asyncio.run(read())


def keys_rewritten(grid: dict[str, Any], rewriter: Rewriter) -> dict[str, Any]:
    """A source grid as the target should hold it: tracker keys in text cells remapped."""
    types = [kind for _, _, kind in grid["columns"]]
    rows = [
        [
            rewriter.keys(value) if isinstance(value, str) and kind in TEXT_CELLS else value
            for value, kind in zip(row, types, strict=False)
        ]
        for row in grid["rows"]
    ]
    return {**grid, "rows": rows}


def test_haul_run_moves_the_wiki_with_the_tracker_and_a_rerun_writes_nothing(sandbox, tmp_path):
    info = sandbox.info
    config = load_config(write_wiki_config(tmp_path, info))
    summary = asyncio.run(run_all(config, environ=environ(info)))
    assert summary.complete, summary
    counts = {row.entity: row for row in summary.counts}
    assert counts["wiki_page"].loaded == counts["wiki_page"].to_load > 0
    for entity in ("wiki_attachment", "wiki_grid", "wiki_grid_rows", "wiki_comment"):
        assert counts[entity].to_load > 0, entity
        assert counts[entity].failed == 0, entity
    assert summary.in_target["wiki_page"] == counts["wiki_page"].to_load

    source, target = snapshots(info)
    assert sorted(target) == sorted(source)
    rewriter = Rewriter(
        SlugMap(tuple(info["wiki_roots"]["source"]), mapping_for(info)), {"TEST": "NEW"}
    )
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
    verified = asyncio.run(verify(config, environ=environ(info)))
    checked = {v.entity: v for v in verified.entities if v.entity.startswith("wiki_")}
    assert verified.ok, verified.differences[:5]
    assert all(v.checked == v.found == v.loaded > 0 for v in checked.values()), checked
    big = [size for page in source.values() for size, _ in page["attachments"].values()]
    assert max(big) > 5 * 1024 * 1024  # one file went up in more than one part

    before = writes(sandbox.stats())
    again = asyncio.run(run_all(config, environ=environ(info)))
    assert again.complete
    assert writes(sandbox.stats()) == before  # nothing changed at the source: nothing written
    assert snapshots(info)[1] == target


def test_a_later_run_carries_what_changed_at_the_source_and_only_that(sandbox, tmp_path):
    """An edited page is replaced in the target, a new comment added; nothing else is written."""
    info = sandbox.info
    config = load_config(write_wiki_config(tmp_path, info, queues=[], services=("wiki",)))
    assert asyncio.run(run_all(config, environ=environ(info))).complete
    root = info["wiki_roots"]["source"][1]  # kept at its own slug

    async def edit() -> None:
        async with wiki_client(info, "source") as source:
            page = await source.get_page(root)
            await source.replace_page(int(page["id"]), content=page["content"] + "\nEdited.")
            await source.create_comment(int(page["id"]), "A later comment.")

    asyncio.run(edit())
    before = writes(sandbox.stats())
    again = asyncio.run(run_all(config, environ=environ(info)))
    assert again.complete
    after = writes(sandbox.stats())
    written = written_since(before, after)
    assert written == {"POST /v1/pages/{idx:int}": 1, "POST /v1/pages/{idx:int}/comments": 1}
    target = snapshots(info)[1]
    assert target[root]["content"].endswith("\nEdited.")
    assert target[root]["comments"][-1][0] == "A later comment."
