"""Reports: per-entity counts from the staging store and the ledger, as a table for people.

pandas is used here, where a table is the point; stages pass plain dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from haul.state.store import StagingStore

if TYPE_CHECKING:
    import pandas as pd

    from haul.pipelines.services import Service


@dataclass(frozen=True)
class EntityCounts:
    """One entity's line of the report."""

    entity: str
    staged: int
    loaded: int
    failed: int
    pending: int
    loadable: bool = True


def in_use(store: StagingStore, services: Sequence[Service]) -> list[Service]:
    """The services with something staged or planned (all of them when the store is empty)."""
    present = set(store.ledger.counts()) | set(store.count_records())
    used = [s for s in services if present & {*s.loadable, *s.optional, *s.staged_only}]
    return used or list(services)


def entity_counts(store: StagingStore, services: Sequence[Service]) -> list[EntityCounts]:
    """Staged (planned ledger rows), loaded, failed and pending, per entity: aggregate queries."""
    ledger = store.ledger.counts()
    staged_only = store.count_records()
    rows = []
    for service in services:
        optional = [entity for entity in service.optional if entity in ledger]
        for entity in (*service.loadable, *optional):
            states = ledger.get(entity, {})
            rows.append(
                EntityCounts(
                    entity,
                    staged=sum(states.values()),
                    loaded=states.get("done", 0),
                    failed=states.get("failed", 0),
                    pending=states.get("pending", 0) + states.get("in_flight", 0),
                )
            )
        for entity in service.staged_only:
            rows.append(EntityCounts(entity, staged_only.get(entity, 0), 0, 0, 0, loadable=False))
    return rows


def counts_frame(rows: list[EntityCounts]) -> pd.DataFrame:
    """The counts as a table indexed by entity, with a total of the loadable ones."""
    import pandas as pd  # only reports need it; keeps every other command's start-up fast

    frame = pd.DataFrame([asdict(row) for row in rows]).set_index("entity")
    frame.loc["total"] = frame[frame["loadable"]].sum(numeric_only=True)
    frame["loadable"] = frame["loadable"].astype(bool)
    return frame


def print_run(
    counts: list[EntityCounts],
    details: dict[str, object],
    unmapped_users: list[str],
    console: Console,
    title: str,
) -> None:
    """The per-entity table, then one `key: value` line per figure (plain, for grep); the
    rate histories are for the report's chart, not for the console."""
    render_counts(counts, console, title=title)
    for key, value in details.items():
        if key.endswith("_rate_history"):
            continue
        console.print(f"{key}: {value}", markup=False, highlight=False, soft_wrap=True)
    if unmapped_users:
        users = ", ".join(unmapped_users)
        console.print(f"users loaded as the default user: {users}", markup=False, soft_wrap=True)


def render_counts(rows: list[EntityCounts], console: Console, title: str) -> None:
    """The per-entity table on the console ("-" where an entity is never loaded)."""
    frame = counts_frame(rows)
    table = Table(title=title)
    table.add_column("entity")
    for column in ("staged", "loaded", "failed", "pending"):
        table.add_column(column, justify="right")
    for entity, row in frame.iterrows():
        note = "" if row["loadable"] or entity == "total" else " (staged only)"
        cells = [
            str(int(row[c])) if row["loadable"] or c == "staged" else "-"
            for c in ("staged", "loaded", "failed", "pending")
        ]
        table.add_row(f"{entity}{note}", *cells)
    console.print(table)
