"""Cycles of parents in the load plan: a record staged under itself through its parents.

The services never hold one (an entity never lies under itself), but reads taken at different
moments can stage one: portfolio A read under B, then B moved under A at the source and read.
The load engine meets a cycle walking up to a tree's root and fails its records, named;
`haul plan` names each record of one as a conflict.
"""

from __future__ import annotations

from haul.pipelines.specs import Ref
from haul.state.ledger import Ledger, LedgerRow


def name_cycle(members: list[Ref]) -> tuple[list[Ref], str]:
    """A cycle of parents from its least member, and its name from there: "parent cycle:
    portfolio 12 -> 15 -> 12" (each lies under the next)."""
    start = members.index(min(members))
    members = members[start:] + members[:start]
    steps = [*members, members[0]]
    if len({ref.entity for ref in members}) == 1:
        named = f"{members[0].entity} " + " -> ".join(ref.source_id for ref in steps)
    else:
        named = " -> ".join(str(ref) for ref in steps)
    return members, f"parent cycle: {named}"


def parent_cycle(ledger: Ledger, row: LedgerRow) -> str | None:
    """The name of the cycle of parents `row` is part of, if it is (for `haul plan`)."""
    path: dict[Ref, None] = {}
    current: LedgerRow | None = row
    while current is not None and current.parent_entity:
        ref = Ref(current.entity, current.source_id)
        if ref in path:
            return None  # a cycle above the row, not through it
        path[ref] = None
        parent = Ref(current.parent_entity, current.parent or "")
        if parent == Ref(row.entity, row.source_id):
            return name_cycle(list(path))[1]
        current = ledger.get(*parent)
    return None
