"""A board goes with its queue: a config that moves the wiki and the planning entities but no
queue stages every board, and carries none of them (their queues, and the statuses their
columns name, are not made in the target: the service would refuse them with a raw 422).
`haul check` and `haul plan` name them, the load sends none, the run counts them as not
carried, and verify counts them too."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.plan import make_plan, write_conflicts
from haul.pipelines.commands.run import extract, load
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.organisation.boards import carried_boards, left_out
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import TOKEN_ENV, environ


def target_boards(info: dict[str, Any]) -> list[str]:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}",
               "X-Org-ID": info["orgs"]["target"]}  # fmt: skip
    reply = httpx.get(f"{info['tracker']}/boards", headers=headers, timeout=30)
    reply.raise_for_status()
    return [str(board["name"]) for board in reply.json()]


def test_boards_whose_queue_is_not_migrated_are_named_and_never_sent(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    before = target_boards(info)
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        queues=[],
        queue_mapping={},
        services=("tracker", "wiki"),
        endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        scope_extra={"entities": "all"},
    )
    config = load_config(write_sandbox_config(tmp_path, info, options))
    asyncio.run(extract(config, all_services(), environ=environ(info)))

    checked = [
        f
        for f in asyncio.run(run_check(config, all_services(), environ(info)))
        if "board" in f.what
    ]
    assert [f.level for f in checked] == ["warning"], checked
    assert "3 board(s), with their" in checked[0].what
    assert "'Development board', queue DEV" in checked[0].what

    plan = asyncio.run(make_plan(config, all_services(), environ=environ(info)))
    assert {r.entity for r in plan.left_out} == {"board", "board_column", "sprint"}
    assert not any(plan.counts[kind]["create"] for kind in ("board", "board_column", "sprint"))
    write_conflicts(tmp_path / "conflicts.csv", plan)
    with (tmp_path / "conflicts.csv").open(encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["decision"] == "not carried"]
    assert len(rows) == len(plan.left_out)
    board = next(row for row in rows if row["entity"] == "board")
    assert "its queue is not migrated" in board["reason"]

    summary = asyncio.run(load(config, all_services(), environ=environ(info)))
    assert summary.complete, summary
    assert target_boards(info) == before  # none sent
    counted = {key.split(":")[0]: n for key, n in summary.details["not_carried"].items()
               if key.startswith(("board", "sprint"))}  # fmt: skip
    assert counted == {kind: sum(r.entity == kind for r in plan.left_out)
                       for kind in ("board", "board_column", "sprint")}  # fmt: skip
    assert counted["board"] == 3

    verified = asyncio.run(verify(config, all_services(), environ=environ(info)))
    seen = {v.entity: v.not_carried for v in verified.entities if v.not_carried}
    assert seen == counted


@pytest.mark.fast
def test_a_board_goes_with_a_queue_of_the_scope_or_of_the_staged_issues(tmp_path: Path) -> None:
    """No issue staged (a shard manifest's first part): the boards of scope.queues are
    carried; with issues, the boards of their queues too; any other is left out whole, its
    columns and sprints named under it."""
    with StagingStore.open(tmp_path / "haul.db") as store:
        boards = [("1", "DEV"), ("2", "OPS"), ("3", "TEST")]
        store.upsert_records("board", [{"source_id": board, "updated_at": "t1",
                                        "raw": {"name": f"{queue} board", "filter": {"queue": queue}}}
                                       for board, queue in boards])  # fmt: skip
        store.replace_children("2", "board_column", [{"source_id": "2/5", "raw": {}}])
        store.upsert_records("sprint", [{"source_id": "9", "raw": {"board": {"id": "2"}},
                                         "updated_at": "t1"}])  # fmt: skip
        assert carried_boards(store, ["DEV"]) == {"1"}
        store.upsert_records("issue", [{"source_id": "TEST-1", "raw": {"queue": {"key": "TEST"}},
                                        "updated_at": "t1"}])  # fmt: skip
        assert carried_boards(store, ["DEV"]) == {"1", "3"}
        left = [(r.entity, r.source_id, r.detail) for r in left_out(store, ["DEV"])]
    assert left == [("board", "2", "'OPS board', queue OPS"), ("board_column", "2/5", "board 2"),
                    ("sprint", "9", "board 2")]  # fmt: skip
