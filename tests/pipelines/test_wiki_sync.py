"""A later run carries every kind of change made to the sandbox wiki: a page rewritten, a
page moved, a file replaced and a grid cell changed on pages whose text did not move, a comment
edited, another deleted, a page deleted. Each record then reads the same in source and target
(through the plain API), verify passes, another run writes nothing; deletions are reported by
default and mirrored only when asked, with the run details saying what changed; a page
restored at the source comes back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.status import gather_status
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.pipelines.wiki.content import Rewriter
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import TOKEN_ENV, environ, writes, written_since
from tests.helpers.wiki_changes import change_everything, leaf_page, pages_of
from tests.helpers.wiki_fixtures import (
    keys_rewritten,
    mapping_for,
    rewriter_for,
    snapshots,
    wiki_client,
)

MIRROR = '[sync]\ndeletions = "mirror"\n'


def wiki_config(directory: Path, info: dict[str, Any], sections: str = "") -> Config:
    settings = SandboxConfig(
        source_token_env=TOKEN_ENV, endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=[], services=("wiki",), wiki_mapping=mapping_for(info), sections=sections,
    )  # fmt: skip
    return load_config(write_sandbox_config(directory, info, settings))


def as_migrated(page: dict[str, Any], key: str, rewriter: Rewriter) -> dict[str, Any]:
    """A source page as the target should hold it."""
    return {
        **page,
        "content": rewriter.rewrite(page["content"], key),
        "grids": [keys_rewritten(grid, rewriter) for grid in page["grids"]],
        "comments": [
            (rewriter.rewrite(body, key), None if parent is None else rewriter.rewrite(parent, key))
            for body, parent in page["comments"]
        ],
    }


def differing(info: dict[str, Any]) -> list[str]:
    """The pages (root-relative keys) that differ between source and target, or are on one
    side only."""
    source, target = snapshots(info)
    rewriter = rewriter_for(info, ("wiki",))
    keys = sorted(set(source) | set(target))
    return [
        key
        for key in keys
        if key not in source
        or key not in target
        or as_migrated(source[key], key, rewriter) != target[key]
    ]


def test_every_kind_of_change_reaches_the_target(sandbox: Any, tmp_path: Path) -> None:
    info = sandbox.info
    config = wiki_config(tmp_path, info)
    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    roots = list(info["wiki_roots"]["source"])

    async def change() -> dict[str, str]:
        async with wiki_client(info, "source") as source:
            return await change_everything(source, roots, tmp_path)

    changed = asyncio.run(change())
    reported = asyncio.run(run_all(config, all_services(), environ=environ(info)))

    assert reported.complete, reported
    made = reported.details["changes"]
    assert made["wiki_page"]["moved"] == 1 and made["wiki_page"]["updated"] >= 2
    assert made["wiki_page"]["deleted_at_source"] == 1
    assert made["wiki_attachment"] == {"created": 1, "replaced": 1}
    assert made["wiki_grid"] == {"updated": 1}
    # the edited comment, and those of the moved pages (their provenance names the slug)
    assert made["wiki_comment"]["updated"] > 1 and made["wiki_comment"]["deleted_at_source"] == 1
    assert differing(info) == sorted([changed["page_deleted"], changed["comment_deleted"]])
    with StagingStore.open(config.staging_path) as store:
        assert gather_status(store, services()).deleted == {
            "wiki_comment": (1, 0),
            "wiki_page": (1, 0),
        }

    mirror = wiki_config(tmp_path, info, MIRROR)
    mirrored = asyncio.run(run_all(mirror, all_services(), environ=environ(info)))

    assert mirrored.complete, mirrored
    assert mirrored.details["changes"]["wiki_page"]["deleted"] == 1
    assert mirrored.details["changes"]["wiki_comment"]["deleted"] == 1
    assert differing(info) == []
    with StagingStore.open(config.staging_path) as store:
        assert gather_status(store, services()).deleted == {
            "wiki_comment": (1, 1),
            "wiki_page": (1, 1),
        }
        (token,) = [
            row.target_id
            for row in store.ledger.iter_rows(status="done", entity="wiki_deletion")
            if row.source_id.startswith("wiki_page:")
        ]
    assert str(token).startswith("recovery_token:")
    verified = asyncio.run(verify(mirror, all_services(), environ=environ(info)))
    assert verified.ok, verified.differences[:5]

    before = writes(sandbox.stats())
    assert asyncio.run(run_all(mirror, all_services(), environ=environ(info))).complete
    assert written_since(before, writes(sandbox.stats())) == {}

    # the deleted page restored at the source: made again in the target, no longer listed
    async def restore() -> None:
        async with wiki_client(info, "source") as source:
            path = f"/pages/recovery_tokens/{changed['recovery_token']}/recover"
            await source.core.post_json(path)

    asyncio.run(restore())
    restored = asyncio.run(run_all(mirror, all_services(), environ=environ(info)))
    assert restored.complete and restored.details["changes"]["wiki_page"]["created"] == 1
    assert differing(info) == []
    with StagingStore.open(config.staging_path) as store:
        assert gather_status(store, services()).deleted == {"wiki_comment": (1, 1)}


def test_a_page_moved_out_of_the_scope_is_out_of_scope_not_deleted(
    sandbox: Any, tmp_path: Path
) -> None:
    """A page moved at the source to a slug outside `scope.wiki_roots` is alive: reported as
    out of the scope, never as deleted nor mirrored as a deletion; it stays in the target."""
    info = sandbox.info
    config = wiki_config(tmp_path, info, MIRROR)
    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    root = info["wiki_roots"]["source"][0]

    async def move_a_leaf_out() -> str:
        async with wiki_client(info, "source") as source:
            pages = await pages_of(source, root)
            leaf = next(p for p in pages if p["slug"] != root and leaf_page(pages, p))
            await source.move_page(leaf["slug"], f"outside-the-scope-{leaf['id']}")
            return str(leaf["slug"])

    moved = asyncio.run(move_a_leaf_out())
    with StagingStore.open(config.staging_path) as store:
        row = store.ledger.get("wiki_page", moved)
    assert row is not None and row.target_id is not None
    second = asyncio.run(run_all(config, all_services(), environ=environ(info)))

    assert second.complete, second
    assert second.details["changes"]["wiki_page"] == {"out_of_scope": 1}
    with StagingStore.open(config.staging_path) as store:
        status = gather_status(store, services())
    assert status.deleted == {} and status.out_of_scope == {"wiki_page": 1}

    async def still_in_target() -> dict[str, Any]:
        async with wiki_client(info, "target") as target:
            return await target.get_page_by_id(int(str(row.target_id)), fields=None)

    assert asyncio.run(still_in_target())["id"] == int(str(row.target_id))
