"""What `haul status`, `haul report` and `haul verify` say over a shard manifest.

Status shows every part: its scope, its store, whether it ended (and how), and what its ledger
holds (loaded, failed, waiting, pending). The report and verify read the last part's store,
which is the union of every part's (`haul.state.union`): one report over the whole migration;
verify also counts the source against the manifest's shards (`pipelines.shards.coverage`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from haul.pipelines.commands.run import open_store
from haul.pipelines.config import Config, load_config
from haul.pipelines.shards.manifest import LAST, Manifest, Part
from haul.pipelines.shards.parts import PartNotReady, finished, part_config


@dataclass(frozen=True)
class PartStatus:
    """One part as `haul status --manifest` shows it."""

    part: str
    scope: str
    store: str
    state: str  # "not started", "running or stopped", "done", "done, records failed"
    ledger: dict[str, int]  # status -> rows

    def as_json(self) -> dict[str, Any]:
        return {
            "part": self.part,
            "scope": self.scope,
            "store": self.store,
            "state": self.state,
            "ledger": self.ledger,
        }


def describe_scope(part: Part) -> str:
    """The part's scope in a few words."""
    if part.scope is None:
        return {
            "first": "organisation, planning layer staged",
            LAST: "union: links, planning, autoactions",
        }.get(part.name, "")
    pieces = [*part.scope.queues, *(f"wiki:{root}" for root in part.scope.wiki_roots)]
    pieces += [f"survey:{survey}" for survey in part.scope.surveys]
    window = f" [{part.scope.query}]" if part.scope.query else ""
    return ", ".join(pieces) + window


def part_status(manifest: Manifest, part: Part) -> PartStatus:
    """Where `part` is: not started, under way (or stopped), or ended and how."""
    path = manifest.store_path(part)
    if not path.exists():
        return PartStatus(part.name, describe_scope(part), str(path), "not started", {})
    ended = finished(manifest, part)
    with open_store(path) as store:
        ledger: dict[str, int] = {}
        for states in store.ledger.counts().values():
            for status, count in states.items():
                ledger[status] = ledger.get(status, 0) + count
    if ended is None:
        state = "running, or stopped: run it again"
    else:
        state = "done" if ended.get("exit") == 0 else "done, records failed (haul failures)"
    return PartStatus(part.name, describe_scope(part), str(path), state, ledger)


def manifest_status(manifest: Manifest) -> list[PartStatus]:
    """Every part's status, in the manifest's order."""
    return [part_status(manifest, part) for part in manifest.parts]


def print_parts(statuses: list[PartStatus], console: Console) -> None:
    """One table row per part."""
    table = Table(title="haul status: shard manifest")
    for column in ("part", "scope", "state", "done", "failed", "waiting", "pending"):
        table.add_column(column)
    for row in statuses:
        counts = [str(row.ledger.get(s, 0)) for s in ("done", "failed", "waiting", "pending")]
        table.add_row(row.part, row.scope, row.state, *counts)
    console.print(table)


def print_manifest(manifest: Manifest, console: Console) -> None:
    """What `haul plan --shards` wrote: one line per part."""
    for part in manifest.parts:
        line = f"part {part.name}: {describe_scope(part)}; {part.records:,} records; {part.store}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def union_config(manifest: Manifest) -> Config:
    """The last part's config (its store is the union), once the last part has run."""
    last = manifest.part(LAST)
    if finished(manifest, last) is None and not manifest.store_path(last).exists():
        raise PartNotReady(
            "the last part has not run: haul report and haul verify over a manifest read its "
            "store (run haul run --manifest FILE --part last)"
        )
    return part_config(manifest, last, load_config(manifest.config_path))
