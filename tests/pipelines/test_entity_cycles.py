"""A cycle in entity parents, as reads taken at different moments can stage it (portfolio A read
under B, then B moved under A and read; a goal under itself): `haul plan` names it as a
conflict, the load fails the records of the cycle, naming it, and what hangs under them, and
loads the rest; it never spins."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.entity_snapshot import found, sdk_client
from tests.helpers.haul_fixtures import environ, source_queues, write_config


def ids_by_summary(info: dict[str, Any], kind: str) -> dict[str, str]:
    return {e["fields"]["summary"]: str(e["id"]) for e in found(sdk_client(info, "source"), kind)}


def plant_parent(info: dict[str, Any], kind: str, entity: str, parent: str) -> None:
    """Put `entity` under `parent` at the source past the service's own rule (see the sandbox's
    `routes_edits`)."""
    base = info["tracker"].removesuffix("/v3")
    reply = httpx.put(
        f"{base}/_sandbox/entities/{kind}/{entity}/parent",
        json={"parent": parent},
        headers={
            "Authorization": f"OAuth {info['tokens']['admin']}",
            "X-Org-ID": info["orgs"]["source"],
        },
    )
    assert reply.status_code == 204, reply.text


@pytest.mark.timeout(120)  # before the fix, the load spun here for good
def test_a_cycle_in_entity_parents_fails_its_records_named_and_the_rest_loads(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    portfolios, goals = ids_by_summary(info, "portfolio"), ids_by_summary(info, "goal")
    top, under = portfolios["Platform"], portfolios["Customer experience"]
    plant_parent(info, "portfolio", top, under)  # each now the other's parent
    own = goals["Ship a stable platform"]
    plant_parent(info, "goal", own, own)
    path = write_config(tmp_path, info, queues=source_queues(info), scope={"entities": "all"})
    config = load_config(path)
    first, second = sorted((top, under))
    cycle = f"parent cycle: portfolio {first} -> {second} -> {first}"
    asyncio.run(extract(config, all_services(), environ=environ(info)))

    plan = asyncio.run(make_plan(config, all_services(), environ=environ(info)))

    assert {(entity, source, why) for entity, source, why in plan.conflicts} == {
        ("portfolio", top, cycle),
        ("portfolio", under, cycle),
        ("goal", own, f"parent cycle: goal {own} -> {own}"),
    }

    summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))

    with StagingStore.open(config.staging_path) as store:
        ledger = store.ledger
        for portfolio in (top, under):
            row = ledger.get("portfolio", portfolio)
            assert row is not None and row.status == "failed" and cycle in (row.error or ""), row
        row = ledger.get("goal", own)
        assert row is not None and row.status == "failed", row
        assert f"parent cycle: goal {own} -> {own}" in (row.error or "")
        failed = list(ledger.iter_rows(status="failed"))
        assert all(
            "parent cycle" in (r.error or "") or "was not loaded" in (r.error or "") for r in failed
        ), [r.error for r in failed]
        other = goals["Grow active customers by 20%"]
        assert ledger.get("goal", other).status == "done"  # type: ignore[union-attr]
        counts = ledger.counts()
        assert counts["issue"] == {"done": sum(counts["issue"].values())}
    assert summary.failed == len(failed) > 0
