"""A page already in the target at a migrated slug, made by a person (here the migrating admin
by hand), is a conflict in `haul plan` and in the load, never adopted: its content and readers
stay as they were. The pages haul made carry its line, so a rerun with a lost staging store
finds them (and what hangs under them) instead of failing them or making anything twice."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import environ, lose_store
from tests.helpers.wiki_fixtures import mapping_for, snapshots, wiki_client, write_wiki_config

HAND_MADE = "Written here by hand, before any migration."


@pytest.fixture(scope="module")
def sandbox() -> Any:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=7) as running:
        yield running


def a_leaf_of_the_kept_root(info: dict[str, Any]) -> str:
    """A source page under a root that keeps its slug in the target, with no page under it."""
    root = next(r for r in info["wiki_roots"]["source"] if r not in mapping_for(info))

    async def read() -> str:
        async with wiki_client(info, "source") as source:
            slugs = [str(ref["slug"]) async for ref in source.iter_descendants(root)]
        return next(s for s in reversed(slugs) if not any(o.startswith(s + "/") for o in slugs))

    return asyncio.run(read())


def plant_page(info: dict[str, Any], slug: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A page made at `slug` in the target by hand; it and its access as read back."""

    async def make() -> tuple[dict[str, Any], dict[str, Any]]:
        async with wiki_client(info, "target") as target:
            made = await target.create_page(slug=slug, title="Ours, by hand", content=HAND_MADE)
            return await target.get_page(slug), await target.get_access(int(made["id"]))

    return asyncio.run(make())


def read_back(info: dict[str, Any], slug: str) -> tuple[dict[str, Any], dict[str, Any]]:
    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        async with wiki_client(info, "target") as target:
            page = await target.get_page(slug)
            return page, await target.get_access(int(page["id"]))

    return asyncio.run(read())


def test_a_page_haul_did_not_make_is_a_conflict_and_a_lost_store_finds_haul_s_own(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    taken = a_leaf_of_the_kept_root(info)
    before = plant_page(info, taken)
    config = load_config(write_wiki_config(tmp_path, info))

    first = asyncio.run(run_all(config, all_services(), environ=environ(info)))

    with StagingStore.open(config.staging_path) as store:
        row = store.ledger.get("wiki_page", taken)
        assert row is not None and row.status == "failed", row
        assert "haul did not make" in (row.error or "") and "--retry-failed" in (row.error or "")
        failed = {(r.entity, r.source_id): r.error for r in store.ledger.iter_rows(status="failed")}
    assert ("wiki_page_access", taken) in failed
    assert all(taken in (error or "") for error in failed.values()), failed  # it, or under it
    assert first.failed == len(failed)
    assert read_back(info, taken) == before  # neither its content nor its readers changed
    _, migrated = snapshots(info)

    lose_store(config.staging_path)
    asyncio.run(extract(config, all_services(), environ=environ(info)))
    plan = asyncio.run(make_plan(config, all_services(), environ=environ(info)))

    assert [(e, s) for e, s, _ in plan.conflicts] == [("wiki_page", taken)]
    assert "haul did not make" in plan.conflicts[0][2]
    assert plan.counts["wiki_page"]["skip"] > 0
    assert plan.counts["wiki_page"]["create"] == 0

    second = asyncio.run(run_all(config, all_services(), environ=environ(info)))

    assert second.failed == len(failed), second
    assert read_back(info, taken) == before
    assert snapshots(info)[1] == migrated  # nothing made twice, nothing lost
