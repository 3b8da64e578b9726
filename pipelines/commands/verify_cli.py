"""The `haul verify` command's output: counts per entity, each difference, the CSV, the status."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from haul.pipelines.commands.verify import Difference, VerifyResult, verify, write_csv
from haul.pipelines.config import Config
from haul.pipelines.services import Service

SHOWN = 50


def run_verify(
    config: Config,
    services: Sequence[Service],
    sample: int | None,
    entities: str | None,
    csv_path: Path | None,
    console: Console,
    found_before: Sequence[Difference] = (),
) -> int:
    """Verify, print the result, write the CSV; return 0 when all match, else 3.
    `found_before`: differences found another way, reported first (what a shard manifest
    does not cover)."""
    wanted = [name.strip() for name in (entities or "").split(",") if name.strip()]
    result = asyncio.run(verify(config, services, sample=sample, entities=wanted))
    result.differences[:0] = found_before
    print_result(result, console)
    path = csv_path or config.staging_path.with_name("verify.csv")
    write_csv(path, result.differences)
    if result.ok:
        console.print("verify: the target matches the staged data", highlight=False)
        return 0
    console.print(
        f"verify: {len(result.differences)} difference(s); all of them in {path}",
        markup=False,
        highlight=False,
    )
    return 3


def print_result(result: VerifyResult, console: Console) -> None:
    """The per-entity table, then one line per difference (both sides)."""
    table = Table(title="haul verify")
    table.add_column("entity")
    for column in ("staged", "loaded", "checked", "found", "differing"):
        table.add_column(column, justify="right")
    for v in result.entities:
        if not v.compared:
            table.add_row(f"{v.entity} (not compared)", str(v.staged), str(v.loaded), "-", "-", "-")
            continue
        table.add_row(
            v.entity, *(str(n) for n in (v.staged, v.loaded, v.checked, v.found, v.differing))
        )
    console.print(table)
    for v in result.entities:
        if not v.compared and v.loaded:
            console.print(
                f"not compared: {v.entity} ({v.loaded} loaded): haul cannot read it back yet",
                markup=False,
                highlight=False,
            )
    for v in result.entities:
        if v.not_carried:
            console.print(
                f"not carried: {v.entity}: {v.not_carried} (the scope cannot carry them: haul plan"
                " names them)",
                markup=False,
                highlight=False,
            )
    for item in result.differences[:SHOWN]:
        console.print(
            f"differs: {item.entity} {item.source_id} (target {item.target_id}) {item.field}: "
            f"source {item.source!r} target {item.target!r}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if len(result.differences) > SHOWN:
        console.print(f"... {len(result.differences) - SHOWN} more in the CSV", highlight=False)
    left = result.by_kind().get("source reference", 0)  # the cut-over's own figure, 0 too
    console.print(f"references to the source left in the target: {left}", highlight=False)
    if result.differences:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(result.by_kind().items()))
        console.print(f"differences by kind: {kinds}", markup=False, highlight=False)
