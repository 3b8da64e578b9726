"""`haul plan`: what the load would do, per entity, without writing to the target.

Every ledger row is create (one write), skip (the ledger says done, or the target already holds
it) or conflict (a key taken by something else; a record staged under itself through its
parents, "parent cycle: ..."), as each service's planner decides
(`pipelines.planner`), or blocked: under a record that conflicts (or is blocked), or needing
one (a link's other end), it cannot be made until that is resolved. The writes are timed at
the target's configured write budget. The conflicts are kept in the store (`PLAN_CONFLICTS`):
the load fails those records with the plan's reason instead of sending them, and what is
under them as blocked; each `haul plan` replaces them.

It is also a sync dry run (`pipelines.sync.preview`): a loaded record changed at the source is
an update (with its fields), a status walk a transition, an issue gone to another queue a
move, a mirrored deletion a delete; every change is listed, and `--changes FILE.csv` writes
them one per row. What the scope cannot carry (a board whose queue is not migrated: `LeftOut`)
is never planned: it is counted per entity and named, and the load does not send it.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from haul.pipelines.commands.run import open_clients, open_store, plan_if_staged_since
from haul.pipelines.config import Config, Endpoint
from haul.pipelines.engine import PLAN_CONFLICTS
from haul.pipelines.engine.parent_cycles import parent_cycle
from haul.pipelines.planner import Decision, Planner, SpecPlanner
from haul.pipelines.services import LeftOut, Service
from haul.pipelines.specs import EntitySpec, RecordFailure, Ref
from haul.pipelines.sync.preview import (
    ACTIONS,
    CHANGES_HEADER,
    WRITES,
    Change,
    ChangePreview,
    UnnamedChanges,
)
from haul.state.ledger import LedgerRow
from haul.state.private import open_private
from haul.state.store import StagedRecord


@dataclass
class LoadPlan:
    """Counts per entity and action, the conflicts and what they block, every change but the
    creates (those too with `list_creates`), and the writes the load would send."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)
    blocked: list[tuple[str, str, str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    list_creates: bool = False  # a first migration's creates are many: listed when asked
    preview: ChangePreview = field(default_factory=UnnamedChanges)
    left_out: list[LeftOut] = field(default_factory=list)  # never planned: the scope says so
    _stuck: dict[Ref, str] = field(default_factory=dict)  # conflicting or blocked -> why

    @property
    def writes(self) -> int:
        creates = sum(row.get("create", 0) for row in self.counts.values())
        listed = (c.writes for c in self.changes if c.action in WRITES and c.action != "create")
        return creates + sum(listed)

    def entity(self, entity: str) -> dict[str, int]:
        return self.counts.setdefault(entity, dict.fromkeys(ACTIONS, 0))

    def add(self, entity: str, decision: str) -> None:
        self.entity(entity)[decision] += 1

    def change(self, change: Change) -> None:
        """Count and keep one change of a loaded record (or a pending row's write)."""
        self.add(change.entity, change.action)
        if change.action != "create" or self.list_creates:
            self.changes.append(change)

    def record(
        self, row: LedgerRow, decision: Decision, record: StagedRecord | None = None
    ) -> None:
        """Count one row's decision (a create as the write it stands for, when the preview
        knows its `record`); keep a conflict or a block with its reason."""
        verdict, detail = decision
        if verdict == "create":
            create = Change(row.entity, row.source_id, row.target_id or "", "create", (), detail)
            change = (self.preview.pending(row, record) if record else None) or create
            if change.action == "skip":
                self.add(row.entity, "skip")
            else:
                self.change(change)
            return
        self.add(row.entity, verdict)
        if verdict != "skip":
            self.changes.append(Change(row.entity, row.source_id, "", verdict, (), detail))
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


async def make_plan(
    config: Config,
    services: Sequence[Service],
    *,
    environ: Mapping[str, str] = os.environ,
    list_creates: bool = False,
) -> LoadPlan:
    """Decide every ledger row with reads only; `list_creates`: keep each create among the
    changes too (for `--changes`), not only counted."""
    target = config.require_target("plan")
    result = LoadPlan(list_creates=list_creates)
    async with open_clients(config, services, environ, target) as (targets,):
        with open_store(config.staging_path) as store:
            plan_if_staged_since(store, config, services)
            for service, client in targets:
                parts = await service.target(config, client, store)
                specs = {spec.name: spec for spec in parts.specs}
                planner: Planner = parts.planner or SpecPlanner(store, specs)
                result.preview = parts.preview or UnnamedChanges()
                result.left_out += parts.left_out()
                for entity, spec in planner.specs.items():
                    result.entity(entity)
                    for row in store.ledger.iter_rows(entity=entity):
                        if row.status == "done":
                            await _loaded(
                                result, row, spec, store.get_record(spec.staged, row.source_id)
                            )
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
                            result.record(row, await _decide(planner, row, record), record)
            store.set_checkpoint(PLAN_CONFLICTS, {"conflicts": result.conflicts})
    return result


async def _loaded(
    plan: LoadPlan, row: LedgerRow, spec: EntitySpec, record: StagedRecord | None
) -> None:
    """A loaded row: skipped, unless its record changed at the source and its spec carries
    changes (then what the service's preview says the load will do)."""
    if not row.changed or spec.refresh is None or record is None:
        plan.add(row.entity, "skip")
        return
    changes = await plan.preview.changes(row, record)
    for change in changes:
        plan.change(change)
    if not changes:  # changed only in what the target already holds
        plan.add(row.entity, "skip")


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


SHOWN = 50  # the sync changes printed; --changes FILE.csv lists every one
ALWAYS = ("create", "skip", "conflict", "blocked")  # a sync's columns show when they count


def print_plan(plan: LoadPlan, target: Endpoint, console: Console) -> None:
    """The per-entity table, then the writes and their time, the sync's changes, each
    conflict, what they block (per entity: the records are in the --conflicts CSV), and what
    to do about them."""
    columns = [c for c in ACTIONS if c in ALWAYS or any(row[c] for row in plan.counts.values())]
    table = Table(title="haul plan")
    table.add_column("entity")
    for column in columns:
        table.add_column(column, justify="right")
    for entity, row in plan.counts.items():
        table.add_row(entity, *(str(row[c]) for c in columns))
    console.print(table)
    lines = [f"requests: {plan.writes} writes ({duration(plan.writes, target)})"]
    synced = [c for c in plan.changes if c.action not in ("create", "blocked")]
    synced = [c for c in synced if c.action != "conflict" or c.fields]  # field conflicts
    lines += [_described(change) for change in synced[:SHOWN]]
    if len(synced) > SHOWN:
        lines.append(f"... and {len(synced) - SHOWN} more changes (--changes FILE.csv lists all)")
    lines += [
        f"conflict: {entity} {source_id}: {detail}" for entity, source_id, detail in plan.conflicts
    ]
    lines += [
        f"blocked: {entity}: {row['blocked']} (under or needing a conflicting record)"
        for entity, row in plan.counts.items()
        if row["blocked"]
    ]
    lines += _left_out_lines(plan.left_out)
    if plan.conflicts:
        lines.append(
            "next: haul load fails the conflicts with these reasons and what they block; "
            "free the keys (or map the queue elsewhere), carry a record over a target limit"
            " another way, run haul plan again, then haul load"
        )
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


NAMED_LEFT_OUT = 20  # records the scope cannot carry named one by one; --conflicts lists all


def _left_out_lines(left_out: list[LeftOut]) -> list[str]:
    """How many records of each entity the scope cannot carry, then the first ones named."""
    counts = Counter(record.entity for record in left_out)
    lines = [
        f"not carried: {entity}: {n} (the scope cannot carry them: the load leaves them out)"
        for entity, n in counts.items()
    ]
    lines += [f"not carried: {record.line()}" for record in left_out[:NAMED_LEFT_OUT]]
    if len(left_out) > NAMED_LEFT_OUT:
        more = len(left_out) - NAMED_LEFT_OUT
        lines.append(f"not carried: ... and {more} more (--conflicts FILE.csv lists them all)")
    return lines


def _described(change: Change) -> str:
    """One sync change in a line: "update: issue DEV-1 (DEV-1): summary: 'a' -> 'b'"; the
    fields named first unless the detail starts with them."""
    where = f" ({change.target_id})" if change.target_id else ""
    what = ", ".join(change.fields)
    if change.fields and change.detail.startswith(change.fields[0]):
        what = ""
    tail = ": ".join(part for part in (what, change.detail) if part)
    return f"{change.action}: {change.entity} {change.source_id}{where}" + (
        f": {tail}" if tail else ""
    )


def write_changes(path: Path, plan: LoadPlan) -> None:
    """Every change the next load would make, one per row (`CHANGES_HEADER`), for a person
    to review before the run."""
    with open_private(path, newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CHANGES_HEADER)
        writer.writerows(change.row() for change in plan.changes)


def write_conflicts(path: Path, plan: LoadPlan) -> None:
    """The conflicts, then what they block, then what the scope cannot carry, as CSV (entity,
    source_id, reason, decision) for a person to review."""
    with open_private(path, newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["entity", "source_id", "reason", "decision"])
        writer.writerows((*row, "conflict") for row in plan.conflicts)
        writer.writerows((*row, "blocked") for row in plan.blocked)
        writer.writerows((r.entity, r.source_id, r.why, "not carried") for r in plan.left_out)
