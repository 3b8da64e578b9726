"""What `haul check` and `haul plan` say of entity permissions before anything is written.

Both name each entity that would fail closed (a holder that maps to no target user or group)
with the holders that make it: `haul check` as one warning per holder with the entities it
restricts, `haul plan` as a conflict on the entity's `entity_access` row (the load leaves the
entity team-only to its mapped owner and the migrating admin, and fails the row). Every other
row is decided by the tracker's own planner.
"""

from __future__ import annotations

from dataclasses import dataclass

from haul.pipelines.findings import Finding
from haul.pipelines.planner import Decision, Planner
from haul.pipelines.specs import EntitySpec
from haul.pipelines.tracker.entities.bodies import EntityBodies
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord

SHOWN = 5  # entities named per holder; the rest are counted
FIX = "map it in mapping.users_file (users) or mapping.groups_file (groups), then check again"


def restricted_entities(bodies: EntityBodies, kinds: tuple[str, ...]) -> dict[str, list[str]]:
    """Holder -> the staged entities (``<type> <id>``) it would leave restricted."""
    by_holder: dict[str, list[str]] = {}
    for kind in kinds:
        for record in bodies.store.iter_records(kind):
            if bodies.store.get_record("entity_access", f"{record.source_id}/access") is None:
                continue
            for holder in bodies.access(record).unmapped:
                by_holder.setdefault(holder, []).append(f"{kind} {record.source_id}")
    return by_holder


def entity_findings(bodies: EntityBodies, kinds: tuple[str, ...]) -> list[Finding]:
    """`haul check`'s findings on the target: the holders that map to no one."""
    by_holder = restricted_entities(bodies, kinds)
    findings = []
    for holder, entities in sorted(by_holder.items()):
        named = ", ".join(sorted(entities)[:SHOWN])
        more = f" and {len(entities) - SHOWN} more" if len(entities) > SHOWN else ""
        findings.append(Finding(
            "warning",
            f"entity permissions: {holder} maps to no target holder: {len(entities)} entity(ies)"
            f" will be team-only to their owner and the migrating admin ({named}{more})",
            FIX,
        ))  # fmt: skip
    if not by_holder:
        findings.append(Finding("ok", "entity permissions: every holder maps to the target"))
    return findings


@dataclass
class EntityPlanner:
    """`haul plan` with entities: an access row that fails closed is a conflict naming its
    holders; everything else as `rest` decides."""

    bodies: EntityBodies
    rest: Planner

    @property
    def specs(self) -> dict[str, EntitySpec]:
        return self.rest.specs

    async def decide(self, row: LedgerRow, record: StagedRecord) -> Decision:
        """conflict for an entity access row that fails closed; else as `rest` decides."""
        if row.entity == "entity_access":
            entity = self.bodies.entity(record.parent or "")
            if unmapped := self.bodies.access(entity).unmapped:
                return "conflict", (
                    f"{', '.join(unmapped)} maps to no target holder: the {entity.entity} would"
                    " be team-only to its owner and the migrating admin"
                )
        return await self.rest.decide(row, record)
