"""How `haul plan` decides one ledger row, with reads only: the contract and the default.

A `Planner` answers create, skip or conflict for a pending row (and why); `haul plan` itself
says `blocked` for a row under (or requiring) one that conflicts or is blocked, before asking. The default,
`SpecPlanner`, decides with the load's own specs: a record whose parent, or a record it
requires (its queue), is not loaded will be created; any other is asked of the target with the
spec's `find`. A service whose records can
conflict with what others made in the target (a key taken) brings a planner of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from haul.pipelines.specs import EntitySpec, target_of
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

Decision = tuple[str, str]  # (create | skip | conflict | blocked, detail)
DECISIONS = ("create", "skip", "conflict", "blocked")


class Planner(Protocol):
    """Decides each pending ledger row of its specs, without writing to the target."""

    @property
    def specs(self) -> dict[str, EntitySpec]: ...

    async def decide(self, row: LedgerRow, record: StagedRecord) -> Decision: ...


@dataclass
class SpecPlanner:
    """Decides with the load's own specs (see the module docstring)."""

    store: StagingStore
    specs: dict[str, EntitySpec]

    async def decide(self, row: LedgerRow, record: StagedRecord) -> Decision:
        """create or skip for one pending ledger row, and why."""
        parent_target = None
        if row.parent_entity:
            parent = self.store.ledger.get(row.parent_entity, row.parent or "")
            if parent is None or parent.status != "done":
                return "create", f"its {row.parent_entity} {row.parent} is not loaded yet"
            parent_target = parent.target_id
        spec = self.specs[row.entity]
        if spec.has_requirements and (first := await self._made_first(spec, record)):
            return "create", first
        group = spec.claim_group
        found = await spec.find(
            record,
            parent_target,
            lambda target_id: not self.store.ledger.is_claimed(group, target_id),
        )
        held = target_of(found)
        return ("skip", f"the target holds it as {held}") if held else ("create", "")

    async def _made_first(self, spec: EntitySpec, record: StagedRecord) -> str | None:
        """Why the record will be created without asking the target: a record it requires (a
        local field's or a trigger's queue) is not loaded and will be created, so the target
        has no place to look for this one in yet."""
        for ref in spec.requires(record):
            needed = self.store.ledger.get(*ref)
            if needed is None or needed.status == "done" or ref.entity not in self.specs:
                continue
            staged = self.store.get_record(self.specs[ref.entity].staged, ref.source_id)
            if staged is not None and (await self.decide(needed, staged))[0] == "create":
                return f"its {ref.entity} {ref.source_id} is created first"
        return None
