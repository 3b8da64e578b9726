"""`haul plan`: what the load would do, per entity, without writing to the target.

Every ledger row is create (one write), skip (the ledger says done, or the target already holds
it) or conflict (a key taken by something else; a record staged under itself through its
parents, "parent cycle: ..."), as each service's planner decides
(`pipelines.planner`), or blocked: under a record that conflicts (or is blocked), or needing
one (a link's other end), it cannot be made until that is resolved. The writes are timed at
the target's configured write budget. The conflicts are kept in the store (`PLAN_CONFLICTS`):
the load fails those records with the plan's reason instead of sending them, and what is
under them as blocked; each `haul plan` replaces them.
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
from haul.pipelines.engine import PLAN_CONFLICTS
from haul.pipelines.parent_cycles import parent_cycle
from haul.pipelines.planner import DECISIONS, Decision, Planner, SpecPlanner
from haul.pipelines.runner import open_clients, open_store, plan_if_staged_since
from haul.pipelines.specs import EntitySpec, RecordFailure, Ref
from haul.state.ledger import LedgerRow
from haul.state.private import open_private
from haul.state.store import StagedRecord


@dataclass
class LoadPlan:
    """Counts per entity and decision, the conflicts and what they block, and the writes the
    load would send."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)
    blocked: list[tuple[str, str, str]] = field(default_factory=list)
    _stuck: dict[Ref, str] = field(default_factory=dict)  # conflicting or blocked -> why

    @property
    def writes(self) -> int:
        return sum(row.get("create", 0) for row in self.counts.values())

    def entity(self, entity: str) -> dict[str, int]:
        return self.counts.setdefault(entity, dict.fromkeys(DECISIONS, 0))

    def add(self, entity: str, decision: str) -> None:
        self.entity(entity)[decision] += 1

    def record(self, row: LedgerRow, decision: Decision) -> None:
        """Count one row's decision; keep a conflict or a block with its reason."""
        verdict, detail = decision
        self.add(row.entity, verdict)
        ref = Ref(row.entity, row.source_id)
        if verdict == "conflict":
            self.conflicts.append((*ref, detail))
            self._stuck[ref] = f"{ref} conflicts: {detail}"
        elif verdict == "blocked":
            self.blocked.append((*ref, detail))
            self._stuck[ref] = detail

    def blocker(self, row: LedgerRow, spec: EntitySpec, record: StagedRecord) -> str | None:
        """Why the row cannot be made: its parent, or a record it requires, conflicts or is
        blocked (parents are decided before their children: specs come in load order)."""
        needed = [Ref(row.parent_entity, row.parent or "")] if row.parent_entity else []
        if spec.has_requirements:
            needed += spec.requires(record)
        for ref in needed:
            if ref in self._stuck:
                reason = self._stuck[ref]
                return reason if reason.startswith("blocked: ") else f"blocked: {reason}"
        return None


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
                    result.entity(entity)
                    for row in store.ledger.iter_rows(entity=entity):
                        if row.status == "done":
                            result.add(entity, "skip")
                            continue
                        record = store.get_record(spec.staged, row.source_id)
                        if record is None:
                            continue
                        # only a record under its own kind can be its own ancestor
                        own_kind = row.parent_entity == row.entity
                        if own_kind and (cycle := parent_cycle(store.ledger, row)):
                            result.record(row, ("conflict", cycle))
                        elif blocker := result.blocker(row, spec, record):
                            result.record(row, ("blocked", blocker))
                        else:
                            result.record(row, await _decide(planner, row, record))
            store.set_checkpoint(PLAN_CONFLICTS, {"conflicts": result.conflicts})
    return result


async def _decide(planner: Planner, row: LedgerRow, record: StagedRecord) -> Decision:
    """The planner's decision; a record the load could not make (a back-fill's grid page the
    target lacks) is a conflict with the reason the load would fail it with, not a crash."""
    try:
        return await planner.decide(row, record)
    except RecordFailure as exc:
        return ("conflict", str(exc))


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
    """The per-entity table, then the writes and their time, each conflict, what they block
    (per entity: the records are in the --conflicts CSV), and what to do about them."""
    table = Table(title="haul plan")
    table.add_column("entity")
    for column in DECISIONS:
        table.add_column(column, justify="right")
    for entity, row in plan.counts.items():
        table.add_row(entity, *(str(row[c]) for c in DECISIONS))
    console.print(table)
    lines = [f"requests: {plan.writes} writes ({duration(plan.writes, target)})"]
    lines += [
        f"conflict: {entity} {source_id}: {detail}" for entity, source_id, detail in plan.conflicts
    ]
    lines += [
        f"blocked: {entity}: {row['blocked']} (under or needing a conflicting record)"
        for entity, row in plan.counts.items()
        if row["blocked"]
    ]
    if plan.conflicts:
        lines.append(
            "next: haul load fails the conflicts with these reasons and what they block; "
            "free the keys (or map the queue elsewhere), carry a record over a target limit"
            " another way, run haul plan again, then haul load"
        )
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def write_conflicts(path: Path, plan: LoadPlan) -> None:
    """The conflicts, then what they block, as CSV (entity, source_id, reason, decision) for a
    person to review."""
    with open_private(path, newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["entity", "source_id", "reason", "decision"])
        writer.writerows((*row, "conflict") for row in plan.conflicts)
        writer.writerows((*row, "blocked") for row in plan.blocked)
