"""The trees of a load: which rows are roots, what hangs under a row, and failing it all.

    Trees(ledger, specs, writes, parents)
        roots(phase)           -> the roots of every tree of the phase with work left
        children(row)          -> the next level down in the row's own phase, in load order
        fail_subtree(row, why) -> the row failed, and everything under it ("... was not loaded")
        cycles, fail_cycle     a cycle of parents kept under its first member, failed named

A tree is a root (a row whose parent is of an earlier phase, or none) with its children in the
same phase, depth first; a row of a later phase loads as a root of its own phase.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from haul.pipelines.engine.parent_cycles import name_cycle
from haul.pipelines.engine.record import BLOCKED
from haul.pipelines.engine.writes import LedgerWrites
from haul.pipelines.specs import EntitySpec, Phase, Ref
from haul.state.ledger import Ledger, LedgerRow

log = structlog.get_logger(__name__)


class Trees:
    """The shape of one load's ledger, read as trees of the specs' phases."""

    def __init__(
        self, ledger: Ledger, specs: Sequence[EntitySpec], writes: LedgerWrites, parents: set[str]
    ) -> None:
        self.ledger = ledger
        self.specs = specs
        self.writes = writes
        self._parents = parents  # the entities that have children in the ledger
        self._specs = {spec.name: spec for spec in specs}
        self._order = {spec.name: index for index, spec in enumerate(specs)}
        self.cycles: dict[Ref, tuple[list[Ref], str]] = {}  # its first member -> it, named

    def roots(self, phase: Phase) -> list[Ref]:
        """The roots of every tree of `phase` that has a pending row or a changed loaded one."""
        roots: dict[Ref, None] = {}
        found: dict[Ref, Ref] = {}
        for spec in self.specs:
            if spec.phase != phase:
                continue
            for row in self.ledger.iter_rows(status="pending", entity=spec.name):
                roots[self.root_of(row, found)] = None
            if spec.refresh is not None:
                for row in self.ledger.iter_changed(spec.name):
                    roots[self.root_of(row, found)] = None
        return sorted(roots, key=lambda ref: (self._order.get(ref.entity, 0), ref.source_id))

    def phase(self, entity: str) -> Phase | None:
        """The phase the entity loads in; None for one of no spec of this load."""
        spec = self._specs.get(entity)
        return None if spec is None else spec.phase

    def root_of(self, row: LedgerRow, found: dict[Ref, Ref]) -> Ref:
        """Walk up the parents of the row's own phase to the topmost planned row, remembering
        the root of every parent on the way (not of the row itself: rows far outnumber
        parents, and a cache of every row held about 200 bytes per ledger row, 180 MB on the
        100 000-issue org). A parent of another phase loaded before: the row is a root. A
        walk that comes back to a row it passed met a cycle (staged from reads taken at
        different moments): its first member is the root, and its tree fails, named."""
        root = Ref(row.entity, row.source_id)
        phase = self.phase(row.entity)
        path: dict[Ref, None] = {root: None}  # the row, then its parents upwards, in order
        current: LedgerRow | None = row
        while current is not None and current.parent_entity:
            parent = Ref(current.parent_entity, current.parent or "")
            if self.phase(parent.entity) != phase:
                break
            if parent in found:
                root = found[parent]
                break
            if parent in path:
                members = list(path)
                root = self._cycle(members[members.index(parent) :])
                break
            current = self.ledger.get(*parent)
            if current is not None:  # else the parent is not planned: the walk ends below it
                path[parent] = None
                root = parent
        for ref in list(path)[1:]:
            found[ref] = root
        return root

    def _cycle(self, members: list[Ref]) -> Ref:
        """Keep a cycle of parents under its first member, named from there."""
        members, named = name_cycle(members)
        self.cycles[members[0]] = (members, named)
        return members[0]

    def fail_cycle(self, root: Ref) -> None:
        """Fail every record of the cycle kept under `root`, and everything under them."""
        members, named = self.cycles[root]
        log.warning("parent_cycle", entity=root.entity, record=root.source_id, cycle=named)
        reason = (
            f"{named} (each is staged under the next): give one of them another parent at"
            " the source, run haul extract, then haul load --retry-failed"
        )
        rows = [row for ref in members if (row := self.ledger.get(*ref)) is not None]
        for row in rows:
            self.writes.fail_pending(row, reason)
        seen = set(members)
        for row in rows:
            self.fail_below(row, f"{row.entity} {row.source_id} was not loaded", seen)

    def children(self, row: LedgerRow) -> list[LedgerRow]:
        """The next level down in the row's own phase: in spec order, then sibling order
        (children of a later phase load as roots of their own phase)."""
        if row.entity not in self._parents:
            return []
        phase = self.phase(row.entity)
        rows = [
            child
            for child in self.ledger.children(row.entity, row.source_id)
            if self.phase(child.entity) == phase
        ]
        return sorted(rows, key=lambda child: self._order[child.entity])

    def fail_subtree(self, row: LedgerRow, reason: str, seen: set[Ref] | None = None) -> None:
        """Fail the row (unless it is loaded or failed already) and everything under it."""
        self.writes.fail_pending(row, reason)
        blocked = BLOCKED in reason  # what a conflict blocks, it blocks all the way down
        below = reason if blocked else f"{row.entity} {row.source_id} was not loaded"
        self.fail_below(row, below, seen)

    def fail_below(self, row: LedgerRow, reason: str, seen: set[Ref] | None = None) -> None:
        """Fail what waits below a record that did not load; deferred phases judge for
        themselves. `seen`: rows already failed here (a cycle's, which would lead back)."""
        for child in self.children(row):
            ref = Ref(child.entity, child.source_id)
            if seen is not None and ref in seen:
                continue
            if seen is not None:
                seen.add(ref)
            self.fail_subtree(child, reason, seen)
