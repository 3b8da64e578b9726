"""An answer deleted at the source after its back-fill: the next run finds it (one survey read
shows the count fell, one listing names it), `haul status` and the run report list it, the
grid keeps its row; with `[sync] deletions = "mirror"` the grid loses the row and verify
passes; an answer restored at the source is no longer listed as deleted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.status import gather_status
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.forms_backfill import client, source_answers, target_state, write_config
from tests.helpers.haul_fixtures import environ

MIRROR = '\n[sync]\ndeletions = "mirror"\n'


@pytest.fixture(scope="module")
def sandbox() -> Any:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as running:
        yield running


def grid_answers(info: dict[str, Any]) -> list[int]:
    grid = target_state(info)[1]["Feedback"]
    return [row["row"][0] for row in grid["rows"]]


def forms_call(info: dict[str, Any], method: str, path: str) -> None:
    async def call() -> None:
        async with client(info, "forms", "source") as forms:
            await forms.core.request(method, path)

    asyncio.run(call())


def deleted(config: Any) -> dict[str, tuple[int, int]]:
    with StagingStore.open(config.staging_path) as store:
        return gather_status(store, services()).deleted


def test_a_deleted_answer_is_reported_then_left_out_of_the_grid_when_mirroring(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    _, _, feedback = info["surveys"]["source"]
    path = write_config(tmp_path, info)
    config = load_config(path)
    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    gone = source_answers(info, feedback)[1]["id"]
    forms_call(info, "DELETE", f"/surveys/{feedback}/answers/{gone}")

    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    assert deleted(config) == {"survey_answer": (1, 0)}
    assert gone in grid_answers(info)  # reported, not mirrored

    path.write_text(path.read_text(encoding="utf-8") + MIRROR, encoding="utf-8")
    mirror = load_config(path)
    assert asyncio.run(run_all(mirror, all_services(), environ=environ(info))).complete
    assert gone not in grid_answers(info)
    assert deleted(config) == {"survey_answer": (1, 1)}
    assert grid_answers(info) == [a["id"] for a in source_answers(info, feedback)]
    verified = asyncio.run(verify(mirror, all_services(), environ=environ(info)))
    assert verified.ok, verified.differences[:5]

    forms_call(info, "POST", f"/surveys/{feedback}/answers/{gone}/restore")
    assert asyncio.run(run_all(mirror, all_services(), environ=environ(info))).complete
    assert deleted(config) == {}
    assert gone in grid_answers(info)
