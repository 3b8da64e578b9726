"""Reports: per-entity counts from the staging store and the ledger, as a table for people.

Two counts that read alike are told apart by name: `staged` is what the extract put in the
staging store (what its progress lines count), `to load` the ledger rows the load sends (a
custom field but not a system one, the sprints of migrated boards, a link once for its two
staged ends); loaded, failed, pending and waiting (for a record a later run brings in: a link
to a queue not migrated yet) split `to load`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from haul.pipelines.services import Service, entity_named, loadable, optional, staged_only
from haul.pipelines.streams import not_staged
from haul.state.store import StagingStore


@dataclass(frozen=True)
class EntityCounts:
    """One entity's line of the report."""

    entity: str
    to_load: int  # its ledger rows
    loaded: int
    failed: int
    pending: int
    loadable: bool = True
    in_store: int | None = None  # its staged records; None: its rows load from another kind's
    waiting: int = 0  # rows waiting for a record a later run brings in (neither done nor failed)
    undone: int = 0  # loaded, then taken out of the target by `haul undo` (counted in loaded)


def in_use(store: StagingStore, services: Sequence[Service]) -> list[Service]:
    """The services with something staged or planned (all of them when the store is empty)."""
    present = set(store.ledger.counts()) | set(store.count_records())
    used = [s for s in services if present & {e.name for e in s.entities}]
    return used or list(services)


def entity_counts(store: StagingStore, services: Sequence[Service]) -> list[EntityCounts]:
    """Staged records, ledger rows to load, loaded, failed and pending, per entity: aggregate
    queries."""
    ledger = store.ledger.counts()
    undone = {
        entity: sum(n for how, n in outcomes.items() if how != "in_flight")
        for entity, outcomes in store.ledger.undo_counts().items()
    }
    staged = store.count_records()
    left_out = not_staged(store)  # by the config: no row of zeros
    rows = []
    for service in services:
        planned = [entity for entity in optional(service) if entity in ledger]
        for entity in (*loadable(service), *planned):
            states = ledger.get(entity, {})
            own_kind = entity_named(services, entity).staged_as == entity
            rows.append(
                EntityCounts(
                    entity,
                    to_load=sum(states.values()),
                    loaded=states.get("done", 0),
                    failed=states.get("failed", 0),
                    pending=states.get("pending", 0) + states.get("in_flight", 0),
                    in_store=staged.get(entity, 0) if own_kind else None,
                    waiting=states.get("waiting", 0),
                    undone=undone.get(entity, 0),
                )
            )
        for entity in staged_only(service):
            if entity in left_out and not staged.get(entity):
                continue
            count = staged.get(entity, 0)
            rows.append(EntityCounts(entity, 0, 0, 0, 0, loadable=False, in_store=count))
    return rows


def print_run(
    counts: list[EntityCounts],
    details: dict[str, object],
    unmapped_users: list[str],
    console: Console,
    title: str,
) -> None:
    """The per-entity table, then a short summary grouped by what a person asks (what this
    command did, source and target counts, each service's requests and waits, changes);
    every raw figure stays in report.json."""
    render_counts(counts, console, title=title)
    for line in summary_lines(details):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if unmapped_users:
        users = ", ".join(unmapped_users)
        console.print(f"users loaded as the default user: {users}", markup=False, soft_wrap=True)


def summary_lines(details: Mapping[str, object]) -> list[str]:
    """The figures of a command as a few lines for people (see `print_run`)."""
    lines = [_did(details), *_in_both(details), *service_lines(details)]
    changes = details.get("changes")
    if isinstance(changes, dict) and changes:
        made = ", ".join(
            f"{entity} {n} {kind}"
            for entity, kinds in sorted(changes.items())
            if isinstance(kinds, dict)
            for kind, n in sorted(kinds.items())
        )
        lines.append(f"changes in the target: {made}")
    warnings = details.get("warnings")
    if isinstance(warnings, list):
        lines += [f"warning: {warning}" for warning in warnings]
    dropped = details.get("not_carried")
    if isinstance(dropped, dict) and dropped:
        lines.append("not carried: " + ", ".join(f"{why} ({n})" for why, n in dropped.items()))
    settled = [
        f"{details[key]} {words}"
        for key, words in SETTLED
        if isinstance(details.get(key), int) and details[key]
    ]
    if settled:
        lines.append("after an interruption: " + ", ".join(settled))
    lines.append("every figure: report.json beside the staging store")
    return [line for line in lines if line]


SETTLED = (
    ("reconciled_found", "found in the target"),
    ("reconciled_missing", "not in the target (sent again)"),
    ("ambiguous_writes", "writes whose reply was lost (looked up)"),
)


def _did(details: Mapping[str, object]) -> str:
    staged = [
        f"{value} {key.removesuffix('_staged').replace('_', ' ')} staged"
        for key, value in details.items()
        if key.endswith("_staged") and isinstance(value, int)
    ]
    loaded = [f"{details[key]} {key}" for key in ("loaded", "failed") if key in details]
    if details.get("waiting"):
        loaded.append(f"{details['waiting']} waiting for a later run")
    return "this command: " + ", ".join(staged + loaded) if staged or loaded else ""


def _in_both(details: Mapping[str, object]) -> list[str]:
    """`issues: 50 in the source, 50 in the target` from source_/target_<entity>_count."""
    entities = sorted(
        {
            key.removeprefix(side).removesuffix("_count")
            for key in details
            for side in ("source_", "target_")
            if key.startswith(side) and key.endswith("_count")
        }
    )
    lines = []
    for entity in entities:
        sides = [
            f"{details[f'{side}_{entity}_count']} in the {side}"
            for side in ("source", "target")
            if f"{side}_{entity}_count" in details
        ]
        lines.append(f"{entity}s: {', '.join(sides)}")
    return lines


def service_lines(details: Mapping[str, object]) -> list[str]:
    """`tracker source: 218 requests, no retries` per service and side."""
    lines = []
    for key, requests in details.items():
        if not key.endswith("_requests"):
            continue
        name = key.removesuffix("_requests")
        retries = details.get(f"{name}_retries") or 0
        waited = details.get(f"{name}_rate_limit_wait_s") or 0
        parts = [f"{requests} requests", f"{retries} retries" if retries else "no retries"]
        if isinstance(waited, (int, float)) and waited >= 1:
            parts.append(f"{waited:.0f} s waiting on rate limits")
        parts.extend(shared_budget_phrases(details.get(f"{name}_shared_budget")))
        lines.append(f"{name.replace('_', ' ')}: {', '.join(parts)}")
    return lines


def shared_budget_phrases(shared: object) -> list[str]:
    """`reads on a shared budget: this process 9.8/s, 4 processes 39.1/s of a limit of 40/s`
    per direction whose budget the process shared with others through a file."""
    if not isinstance(shared, Mapping):
        return []
    phrases = []
    for direction, figures in sorted(shared.items()):
        limit = figures.get("limit_rps")
        against = f"of a limit of {limit:g}/s" if limit else "(no limit met)"
        sharers = figures["sharers"]
        together = f"{sharers} processes {figures['shared_rps']:g}/s" if sharers > 1 else "alone"
        phrases.append(
            f"{direction}s on a shared budget: this process {figures['process_rps']:g}/s, "
            f"{together} {against}"
        )
    return phrases


def summary_json(
    counts: list[EntityCounts], details: Mapping[str, object], unmapped_users: list[str]
) -> dict[str, object]:
    """What `--json` prints: the per-entity counts, the summary lines and every figure."""
    return {
        "counts": [
            {
                "entity": row.entity,
                "staged": row.in_store,
                "to_load": row.to_load if row.loadable else None,
                "loaded": row.loaded if row.loadable else None,
                "failed": row.failed,
                "pending": row.pending,
                "waiting": row.waiting,
            }
            for row in counts
        ],
        "summary": summary_lines(details),
        "unmapped_users": unmapped_users,
        "figures": {k: v for k, v in details.items() if not k.endswith("_rate_history")},
    }


COUNTS_CAPTION = (
    "staged: records in the staging store, as the progress lines count them; to load: the "
    'ledger rows the load sends ("-": staged for exports only; haul status names what else is '
    "staged and not loaded by design)"
)


def render_counts(rows: list[EntityCounts], console: Console, title: str) -> None:
    """The per-entity table on the console, with a total of the loadable entities ("-" where
    a figure does not apply: an entity never loaded, or one loaded from another's records),
    then the line that says what its two first columns count. A `waiting` column only when
    some record waits."""
    columns: tuple[str, ...] = ("to_load", "loaded", "failed", "pending")
    headers: tuple[str, ...] = ("staged", "to load", "loaded", "failed", "pending")
    if any(row.waiting for row in rows):
        columns, headers = (*columns, "waiting"), (*headers, "waiting")
    table = Table(title=title)
    table.add_column("entity")
    for header in headers:
        table.add_column(header, justify="right")
    for row in rows:
        staged = "-" if row.in_store is None else str(row.in_store)
        if row.loadable:
            table.add_row(row.entity, staged, *(str(getattr(row, c)) for c in columns))
        else:
            table.add_row(row.entity, staged, *("-" for _ in columns))
    totals = (sum(getattr(row, c) for row in rows if row.loadable) for c in columns)
    table.add_row("total", "-", *map(str, totals))
    console.print(table)
    console.print(COUNTS_CAPTION, markup=False, highlight=False, soft_wrap=True)
