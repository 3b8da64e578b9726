"""`haul plan`: what the load would do, per entity, without writing to the target.

Every ledger row is create (one write), skip (the ledger says done, or the target already holds
it) or conflict (a key taken by something else), as each service's planner decides
(`pipelines.planner`); the writes are timed at the target's configured write budget.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from haul.pipelines.config import Config, Endpoint
from haul.pipelines.planner import Planner, SpecPlanner
from haul.pipelines.runner import open_clients, open_store, plan_if_staged_since


@dataclass
class LoadPlan:
    """Counts per entity and decision, the conflicts, and the writes the load would send."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return sum(row.get("create", 0) for row in self.counts.values())

    def add(self, entity: str, decision: str) -> None:
        row = self.counts.setdefault(entity, {"create": 0, "skip": 0, "conflict": 0})
        row[decision] += 1


async def make_plan(config: Config, *, environ: Mapping[str, str] = os.environ) -> LoadPlan:
    """Decide every ledger row with reads only."""
    target = config.require_target("plan")
    result = LoadPlan()
    async with open_clients(config, environ, target) as (targets,):
        with open_store(config.staging_path) as store:
            plan_if_staged_since(store, config)
            for service, client in targets:
                parts = await service.target(config, client, store)
                specs = {spec.name: spec for spec in parts.specs}
                planner: Planner = parts.planner or SpecPlanner(store, specs)
                for entity, spec in planner.specs.items():
                    result.counts.setdefault(entity, {"create": 0, "skip": 0, "conflict": 0})
                    for row in store.ledger.iter_rows(entity=entity):
                        if row.status == "done":
                            result.add(entity, "skip")
                            continue
                        record = store.get_record(spec.staged, row.source_id)
                        if record is None:
                            continue
                        decision, detail = await planner.decide(row, record)
                        result.add(entity, decision)
                        if decision == "conflict":
                            result.conflicts.append((entity, row.source_id, detail))
    return result


def duration(writes: int, target: Endpoint) -> str:
    """How long the writes take at the configured budget, in words."""
    rate = target.write_rps if target.write_rps != "auto" else target.max_rps
    if not writes:
        return "no writes"
    if rate is None:
        return "unknown: the auto budget learns the target's limit as it loads (set max_rps)"
    seconds = writes / float(rate)
    prefix = "at least " if target.write_rps == "auto" else ""
    return f"{prefix}{seconds:.0f} s at {float(rate):g} writes/s"


def print_plan(plan: LoadPlan, target: Endpoint, console: Console) -> None:
    """The per-entity table, then the writes and their time, and each conflict."""
    table = Table(title="haul plan")
    table.add_column("entity")
    for column in ("create", "skip", "conflict"):
        table.add_column(column, justify="right")
    for entity, row in plan.counts.items():
        table.add_row(entity, *(str(row[c]) for c in ("create", "skip", "conflict")))
    console.print(table)
    lines = [f"requests: {plan.writes} writes ({duration(plan.writes, target)})"]
    lines += [
        f"conflict: {entity} {source_id}: {detail}" for entity, source_id, detail in plan.conflicts
    ]
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def write_conflicts(path: Path, plan: LoadPlan) -> None:
    """The conflicts as CSV (entity, source_id, reason) for a person to review."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["entity", "source_id", "reason"])
        writer.writerows(plan.conflicts)
