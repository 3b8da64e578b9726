"""`haul plan` as a sync dry run: each write the next load would make, one `Change` each.

A pending ledger row is what the service's planner decides (create, skip, conflict, blocked);
a loaded row whose record changed at the source, of a spec that carries changes (`refresh`),
is an update. A service names its changes more precisely through a `ChangePreview`
(`TargetParts.preview`)::

    preview.pending(row, record)         the write a pending row's "create" stands for when it
                                         is not a create (a status row's is a transition, a
                                         deletion row's a delete, or a skip when another row
                                         does its work), as a `Change`; None: a create
    await preview.changes(row, record)   what a loaded record changed at the source makes the
                                         load do: an update with its fields, a move, a conflict

Without one, a changed record is an update of fields it does not name. The plan counts each
change once per action and entity, times the writes at the budget, and lists every change
(`--changes FILE.csv`: entity, source_key, target_key, action, fields, detail).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord

# in the order the plan's table shows them: what writes first, then what does not
ACTIONS = (
    *("create", "update", "transition", "move", "delete", "skip", "conflict", "blocked"),
    "not updatable",  # changed at the source, and no update call can change it: named, no write
)
WRITES = frozenset(("create", "update", "transition", "move", "delete"))
CHANGES_HEADER = ("entity", "source_key", "target_key", "action", "fields", "detail")


@dataclass(frozen=True)
class Change:
    """One write the next load would make (or one it cannot: a conflict, a blocked record).
    `writes`: the requests it takes (an edited checklist: one per item changed)."""

    entity: str
    source_id: str
    target_id: str
    action: str
    fields: tuple[str, ...] = ()
    detail: str = ""
    writes: int = 1

    def row(self) -> tuple[str, ...]:
        """The change as a CSV row (`CHANGES_HEADER`)."""
        fields = ",".join(self.fields)
        return (self.entity, self.source_id, self.target_id, self.action, fields, self.detail)


class ChangePreview(Protocol):
    """What a service says of the changes the next load makes (see the module docstring)."""

    def pending(self, row: LedgerRow, record: StagedRecord) -> Change | None: ...

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]: ...


@dataclass
class UnnamedChanges:
    """The preview of a service that brings none: a changed record is an update."""

    def pending(self, row: LedgerRow, record: StagedRecord) -> Change | None:
        return None

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        return [updated(row, detail="changed at the source")]


def updated(row: LedgerRow, fields: tuple[str, ...] = (), detail: str = "") -> Change:
    """An update of a loaded row's record."""
    return Change(row.entity, row.source_id, row.target_id or "", "update", fields, detail)


def conflicted(row: LedgerRow, conflicts: dict[str, tuple[Any, Any]]) -> Change:
    """Fields (or items) changed on both sides, (the source's value, the target's): no write."""
    detail = "; ".join(
        f"{name}: source {ours!r}, target {theirs!r}" for name, (ours, theirs) in conflicts.items()
    )
    target = row.target_id or ""
    return Change(row.entity, row.source_id, target, "conflict", tuple(conflicts), detail, writes=0)


def how(update: dict[str, tuple[Any, Any]]) -> str:
    """ "summary: 'Old' -> 'New'; tags: [] -> ['x']" (long values cut short)."""
    return "; ".join(
        f"{name}: {_short(old)} -> {_short(new)}" for name, (old, new) in update.items()
    )


def _short(value: Any, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
