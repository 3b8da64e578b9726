"""A wiki page follows the three-way rule at its grain, over real sockets.

After a first run, people edit pages through the plain API: a page's body edited in the target
only (its title edited at the source, so the next run re-reads it) keeps the person's body and
takes the source's title; a body edited on both sides is a conflict, reported with both values
(status, `haul failures`, exit 3; the run's last line names the page) while the target keeps
its body; with `[sync] conflicts =
"source-wins"` the source's body is written over it and what it overwrote is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import TOKEN_ENV, environ
from tests.helpers.wiki_changes import leaf_page, pages_of
from tests.helpers.wiki_fixtures import mapping_for, wiki_client


def _config_file(directory: Path, info: dict[str, Any], sections: str = "") -> Path:
    settings = SandboxConfig(
        source_token_env=TOKEN_ENV, endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=[], services=("wiki",), wiki_mapping=mapping_for(info), sections=sections,
    )  # fmt: skip
    return write_sandbox_config(directory, info, settings)


async def _leaves(info: dict[str, Any], count: int) -> list[str]:
    """Slugs of `count` leaf pages under a root that keeps its slug in the target."""
    mapped = mapping_for(info)
    roots = [root for root in info["wiki_roots"]["source"] if root not in mapped]
    async with wiki_client(info, "source") as source:
        pages = [page for root in roots for page in await pages_of(source, root)]
    leaves = [p["slug"] for p in pages if leaf_page(pages, p) and p["slug"] not in roots]
    assert len(leaves) >= count, leaves
    return leaves[:count]


async def _edit(
    info: dict[str, Any], org: str, slug: str, *, add: str = "", title: str = ""
) -> None:
    async with wiki_client(info, org) as client:
        page = await client.get_page(slug)
        await client.replace_page(
            int(page["id"]), content=page["content"] + add, title=title or None
        )


async def _page(info: dict[str, Any], org: str, slug: str) -> dict[str, Any]:
    async with wiki_client(info, org) as client:
        return await client.get_page(slug)


async def test_a_page_edited_in_the_target_is_kept_and_one_edited_on_both_sides_conflicts(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    path = _config_file(tmp_path, info)
    config = load_config(path)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    mine, both = await _leaves(info, 2)
    await _edit(info, "target", mine, add="\nA person's paragraph in the target.")
    await _edit(info, "source", mine, title="Retitled at the source")
    await _edit(info, "target", both, add="\nThe target's paragraph.")
    await _edit(info, "source", both, add="\nThe source's paragraph.")

    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    done = run_haul("run", "--config", path, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]  # the conflict, by the page's slug
    assert last.startswith("haul: 1 record(s) failed") and f"page '{both}' changed" in last, last
    kept = await _page(info, "target", mine)
    assert kept["content"].endswith("A person's paragraph in the target.")
    assert kept["title"] == "Retitled at the source"
    conflicted = await _page(info, "target", both)
    assert conflicted["content"].endswith("The target's paragraph.")
    with StagingStore.open(config.staging_path) as store:
        (why,) = [p.error for p in store.problems if p.entity == "wiki_page:change"]
    assert "The source's paragraph." in why and "The target's paragraph." in why
    failures = run_haul("failures", "--config", path, env=env)
    assert "The target's paragraph." in failures.stdout, failures.stdout
    checked = await verify(config, all_services(), environ=environ(info))
    kinds = {(d.source_id, d.field): d.kind for d in checked.differences}
    assert kinds[(mine, "content")] == "changed in the target"
    assert kinds[(both, "content")] == "changed on both sides"
    # another run leaves the person's body alone and still reports the conflict
    again = await run_all(config, all_services(), environ=environ(info))
    assert again.problems == 1
    assert (await _page(info, "target", mine))["content"] == kept["content"]
    assert (await _page(info, "target", both))["content"] == conflicted["content"]


async def test_source_wins_overwrites_a_page_and_records_what_it_overwrote(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = load_config(_config_file(tmp_path, info, '[sync]\nconflicts = "source-wins"\n'))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    (both,) = await _leaves(info, 1)
    await _edit(info, "target", both, add="\nThe target's paragraph.")
    await _edit(info, "source", both, add="\nThe source's paragraph.")

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.problems == 0
    assert second.details["changes"]["wiki_page"]["overwritten"] == 1
    assert (await _page(info, "target", both))["content"].endswith("The source's paragraph.")
    with StagingStore.open(config.staging_path) as store:
        (overwritten,) = store.written.iter_overwritten()
    assert (overwritten.entity, overwritten.source_id, overwritten.field) == (
        "wiki_page",
        both,
        "content",
    )
    assert overwritten.target.endswith("The target's paragraph.")


async def _grid_pair(info: dict[str, Any]) -> tuple[str, str, str]:
    """A source grid with three rows or more and a text column, under a root that keeps its
    slug in the target: (source grid id, target grid id, the column's slug)."""
    mapped = mapping_for(info)
    roots = [root for root in info["wiki_roots"]["source"] if root not in mapped]
    async with wiki_client(info, "source") as source, wiki_client(info, "target") as target:
        for page in [p for root in roots for p in await pages_of(source, root)]:
            for ref in page["grids"]:
                grid = await source.get_grid(str(ref["id"]))
                columns = [c for c in grid["structure"]["columns"] if c["type"] == "string"]
                if len(grid["rows"]) < 3 or not columns:
                    continue
                there = await target.get_page(page["slug"])
                theirs = [g async for g in target.iter_grids(int(there["id"]))]
                (same,) = [g for g in theirs if g["title"] == grid["title"]]
                return str(grid["id"]), str(same["id"]), columns[0]["slug"]
    raise AssertionError("no grid with three rows and a text column")


async def _set_cell(
    info: dict[str, Any], org: str, grid_id: str, at: int, slug: str, value: str
) -> None:
    async with wiki_client(info, org) as client:
        grid = await client.get_grid(grid_id)
        cell = {"row_id": grid["rows"][at]["id"], "column_slug": slug, "value": value}
        await client.update_cells(grid_id, str(grid["revision"]), [cell])


async def _cells(info: dict[str, Any], grid_id: str, slug: str) -> list[Any]:
    async with wiki_client(info, "target") as client:
        grid = await client.get_grid(grid_id)
    at = [c["slug"] for c in grid["structure"]["columns"]].index(slug)
    return [row["row"][at] for row in grid["rows"]]


async def test_grid_rows_follow_the_three_way_rule_end_to_end(sandbox: Any, tmp_path: Path) -> None:
    """Row 1 edited in the target, row 2 at the source, row 3 on both sides, a row added by
    hand in the target: 1 and the added row kept, 2 carried, 3 a conflict (exit 3)."""
    info = sandbox.info
    path = _config_file(tmp_path, info)
    config = load_config(path)
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    source_grid, target_grid, slug = await _grid_pair(info)
    await _set_cell(info, "target", target_grid, 0, slug, "A person's cell")
    await _set_cell(info, "source", source_grid, 1, slug, "Edited at the source")
    await _set_cell(info, "target", target_grid, 2, slug, "Cell as the target says")
    await _set_cell(info, "source", source_grid, 2, slug, "Cell as the source says")
    async with wiki_client(info, "target") as target:
        grid = await target.get_grid(target_grid)
        await target.add_rows(target_grid, str(grid["revision"]), [{slug: "Added by hand"}])

    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    done = run_haul("run", "--config", path, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    cells = await _cells(info, target_grid, slug)
    assert cells[:3] == ["A person's cell", "Edited at the source", "Cell as the target says"]
    assert cells[-1] == "Added by hand"
    with StagingStore.open(config.staging_path) as store:
        (why,) = [p.error for p in store.problems if p.entity == "wiki_grid_rows:change"]
    assert (
        f"row 3 {slug}: source 'Cell as the source says', target 'Cell as the target says'" in why
    )
    again = await run_all(config, all_services(), environ=environ(info))
    assert again.problems == 1 and await _cells(info, target_grid, slug) == cells


async def test_source_wins_overwrites_a_grid_cell_and_records_it(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = load_config(_config_file(tmp_path, info, '[sync]\nconflicts = "source-wins"\n'))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    source_grid, target_grid, slug = await _grid_pair(info)
    await _set_cell(info, "target", target_grid, 0, slug, "Cell as the target says")
    await _set_cell(info, "source", source_grid, 0, slug, "Cell as the source says")

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.problems == 0
    assert (await _cells(info, target_grid, slug))[0] == "Cell as the source says"
    with StagingStore.open(config.staging_path) as store:
        (overwritten,) = store.written.iter_overwritten()
    assert (overwritten.entity, overwritten.field) == ("wiki_grid_rows", f"row 1 {slug}")
    assert (overwritten.source, overwritten.target) == (
        "Cell as the source says",
        "Cell as the target says",
    )
