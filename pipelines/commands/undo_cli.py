"""The `haul undo` command's output: what it takes back and keeps, per entity, each record
kept with what a person can do instead, the pages' recovery tokens, the exit status."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from itertools import groupby

from rich.console import Console
from rich.table import Table

from haul.pipelines.commands.run import Interrupted, open_store
from haul.pipelines.commands.undo import UndoPlan, UndoResult, undo
from haul.pipelines.config import Config
from haul.pipelines.services import Service
from haul.pipelines.stopping import GracefulStop


def run_undo(
    config: Config,
    services: Sequence[Service],
    console: Console,
    *,
    dry_run: bool,
    confirm: Callable[[UndoPlan], bool],
    include_changed: bool = False,
) -> int:
    """Undo (or, with `dry_run`, say what undo would do), print it; return the exit status:
    0 when all undo can delete is gone (what a person changed since haul wrote it is kept and
    named, as is what the API cannot delete), 3 when some deletion failed or a load is in flight;
    a signal stops it after the deletion under way (Interrupted: exit 1, resumable)."""

    def shown(plan: UndoPlan) -> bool:  # the plan is printed before any question
        print_plan(plan, console)
        return confirm(plan)

    async def supervised() -> UndoResult:
        stop = GracefulStop()  # SIGINT or SIGTERM: the deletion under way ends, recorded
        stop.install()
        try:
            return await undo(
                config,
                services,
                dry_run=dry_run,
                include_changed=include_changed,
                confirm=shown,
                stop_requested=stop.requested,
            )
        finally:
            stop.uninstall()

    result = asyncio.run(supervised())
    if dry_run:
        print_plan(result.plan, console, title="haul undo --dry-run: what it would do")
    else:
        print_result(result, console)
    print_kept(result.plan, console)
    if not dry_run:
        print_recovery_tokens(config, console)
    if result.stopped:
        raise Interrupted()  # exit 1: run the same command to resume
    return 0 if dry_run or result.complete else 3


def print_plan(
    plan: UndoPlan, console: Console, *, title: str = "haul undo: what it would do"
) -> None:
    """Per entity: the records to delete, to settle with their parent, to keep."""
    table = Table(title=title)
    table.add_column("entity")
    for column in ("delete", "with parent", "keep"):
        table.add_column(column, justify="right")
    for entity, counts in sorted(plan.counts().items()):
        table.add_row(entity, *(str(counts[c]) for c in ("delete", "with parent", "keep")))
    console.print(table)
    _say(console, f"already taken back by an earlier undo: {plan.undone_before}")
    if plan.found:
        _say(console, f"in the target before the load found them (never deleted): {plan.found}")
    for row in plan.loading:
        _say(
            console,
            f"in flight: {row.entity} {row.source_id} (a load stopped while writing it: run haul"
            " load to settle it, then haul undo again)",
        )


def print_kept(plan: UndoPlan, console: Console) -> None:
    """Each record kept, one line each (for grep), then per entity what to do instead."""
    for kept in plan.kept:
        _say(console, f"kept: {kept.row.entity} {kept.row.source_id} (target {kept.row.target_id})")
    by_entity = groupby(sorted(plan.kept, key=lambda k: k.row.entity), key=lambda k: k.row.entity)
    for entity, group in by_entity:
        rows = list(group)
        _say(console, f"kept {len(rows)} {entity}: {rows[0].why}")


def print_result(result: UndoResult, console: Console) -> None:
    """What was deleted, found gone, settled with its parent, and what failed and why."""
    for label, counts in (
        ("deleted", result.deleted),
        ("gone already", result.gone),
        ("went with their parent", result.with_parent),
    ):
        if counts:
            shown = ", ".join(f"{entity} {n}" for entity, n in sorted(counts.items()))
            _say(console, f"{label}: {shown}")
    for (entity, parent), n in sorted(result.kept_with.items()):
        _say(console, f"kept with their {parent}, which stays: {entity} {n}")
    for kept in result.changed:
        row = kept.row
        _say(console, f"kept as changed: {row.entity} {row.source_id} (target {row.target_id}):"
                      f" {kept.why}")  # fmt: skip
    if result.changed:
        _say(console, f"{len(result.changed)} record(s) kept: a person changed them since haul"
                      " wrote them; haul undo --include-changed deletes them")  # fmt: skip
    for row, why in result.failed:
        _say(console, f"not undone: {row.entity} {row.source_id} (target {row.target_id}): {why}")
    if result.failed:
        _say(console, f"{len(result.failed)} record(s) not undone: fix the cause, then haul undo")


def print_recovery_tokens(config: Config, console: Console) -> None:
    """The recovery token of every page undo deleted (a rerun shows them again)."""
    with open_store(config.staging_path) as store:
        for row in store.ledger.iter_rows(status="done"):
            if row.recovery_token:
                _say(
                    console,
                    f"recovery token: {row.entity} {row.source_id} (target {row.target_id}):"
                    f" {row.recovery_token}",
                )


def _say(console: Console, line: str) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True)
