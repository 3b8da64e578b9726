"""A wiki page follows the three-way rule at its grain, over real sockets.

After a first run, people edit pages through the plain API: a page's body edited in the target
only (its title edited at the source, so the next run re-reads it) keeps the person's body and
takes the source's title; a body edited on both sides is a conflict, reported with both values
(status, `haul failures`, exit 3) while the target keeps its body; with `[sync] conflicts =
"source-wins"` the source's body is written over it and what it overwrote is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul.pipelines.config import load_config
from haul.pipelines.runner import run_all
from haul.pipelines.sandbox_config import SandboxConfig, write_sandbox_config
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
    assert (await run_all(config, environ=environ(info))).complete
    mine, both = await _leaves(info, 2)
    await _edit(info, "target", mine, add="\nA person's paragraph in the target.")
    await _edit(info, "source", mine, title="Retitled at the source")
    await _edit(info, "target", both, add="\nThe target's paragraph.")
    await _edit(info, "source", both, add="\nThe source's paragraph.")

    env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
    done = run_haul("run", "--config", path, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
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
    # another run leaves the person's body alone and still reports the conflict
    again = await run_all(config, environ=environ(info))
    assert again.problems == 1
    assert (await _page(info, "target", mine))["content"] == kept["content"]
    assert (await _page(info, "target", both))["content"] == conflicted["content"]


async def test_source_wins_overwrites_a_page_and_records_what_it_overwrote(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = load_config(_config_file(tmp_path, info, '[sync]\nconflicts = "source-wins"\n'))
    assert (await run_all(config, environ=environ(info))).complete
    (both,) = await _leaves(info, 1)
    await _edit(info, "target", both, add="\nThe target's paragraph.")
    await _edit(info, "source", both, add="\nThe source's paragraph.")

    second = await run_all(config, environ=environ(info))

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
