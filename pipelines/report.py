"""Reports: per-entity counts from the staging store and the ledger, as a table for people."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from haul.pipelines.services import Service, loadable, optional, staged_only
from haul.pipelines.streams import not_staged
from haul.state.store import StagingStore


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
    used = [s for s in services if present & {e.name for e in s.entities}]
    return used or list(services)


def entity_counts(store: StagingStore, services: Sequence[Service]) -> list[EntityCounts]:
    """Staged (planned ledger rows), loaded, failed and pending, per entity: aggregate queries."""
    ledger = store.ledger.counts()
    staged = store.count_records()
    left_out = not_staged(store)  # by the config: no row of zeros
    rows = []
    for service in services:
        planned = [entity for entity in optional(service) if entity in ledger]
        for entity in (*loadable(service), *planned):
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
        for entity in staged_only(service):
            if entity in left_out and not staged.get(entity):
                continue
            rows.append(EntityCounts(entity, staged.get(entity, 0), 0, 0, 0, loadable=False))
    return rows


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
    """The per-entity table on the console, with a total of the loadable entities ("-" where
    an entity is never loaded)."""
    columns = ("staged", "loaded", "failed", "pending")
    table = Table(title=title)
    table.add_column("entity")
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        if row.loadable:
            table.add_row(row.entity, *(str(getattr(row, c)) for c in columns))
        else:
            table.add_row(f"{row.entity} (staged only)", str(row.staged), "-", "-", "-")
    totals = (sum(getattr(row, c) for row in rows if row.loadable) for c in columns)
    table.add_row("total", *map(str, totals))
    console.print(table)
