"""`haul resolve`: the conflicts a sync left open, and a person's decision for each.

A field changed on both sides since haul wrote it stays as the target holds it (`[sync]
conflicts = "keep-target"`), and every run exits 3 naming it, until a person settles it. This
command lists the open conflicts from the store (no service is asked), and keeps a decision
per conflict (`state.conflicts`): take the source's value or the target's. The next `haul load`
(or `haul run`) applies it through the load's own path (`pipelines.sync.decisions`): the
source's value is written once, under the ledger, and the conflict leaves `haul status` and
the report; a decision made against values that moved since is not applied, but named.

    haul resolve                                   the open conflicts, as a table
    haul resolve --format csv > conflicts.csv      the same, with an empty `decision` column
    haul resolve --take source --issue DEV-3 --field summary
    haul resolve --from conflicts.csv              each row's decision: source, target, or
                                                   blank (left open)

There is no `--all`: a standing rule for every conflict is the config's `[sync] conflicts =
"source-wins"`; overwriting people's edits in bulk, once, is a list a person reads first (the
CSV). Values in the CSV are JSON (`"text"`, `null`, `["a", "b"]`), as the store keeps them.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from rich.console import Console
from rich.table import Table

from haul.connectors.errors import HaulError
from haul.pipelines.commands.run import open_store, read_store
from haul.pipelines.config import Config
from haul.state.conflicts import Conflict, Take, as_stored
from haul.state.store import StagingStore

HEADER = ("entity", "source_id", "target_id", "field", "source", "target", "decision")
SIDES = ("source", "target")
NEXT = "the next haul load (or haul run) applies the decisions"


class ResolveError(HaulError):
    """A decision names no open conflict, or a side that is not one (exit 2)."""

    exit_code = 2


@dataclass(frozen=True)
class Open:
    """An open conflict and the id its record has in the target (how a person finds it)."""

    conflict: Conflict
    target_id: str

    def row(self, decision: str = "") -> tuple[str, ...]:
        """The conflict as a CSV row (`HEADER`)."""
        c = self.conflict
        return (c.entity, c.source_id, self.target_id, c.field, _json(c.source),
                _json(c.target), decision)  # fmt: skip

    @property
    def name(self) -> str:
        c = self.conflict
        moved = self.target_id not in ("", c.source_id)
        target = f" ({self.target_id} in the target)" if moved else ""
        return f"{c.entity} {c.source_id}{target} {c.field}"


@dataclass
class FromFile:
    """What `--from` decided, left open (a blank decision), and found stale: a row whose
    values are not those the conflict holds now (a run saw the sides move since)."""

    decided: list[tuple[Open, Take]] = field(default_factory=list)
    blank: int = 0
    stale: list[str] = field(default_factory=list)


def list_conflicts(config: Config, console: Console, out: IO[str], *, as_csv: bool) -> None:
    """`haul resolve`: the open conflicts, as a table on `console` or as CSV on `out`."""
    with read_store(config.staging_path) as store:  # a listing only reads
        conflicts = open_conflicts(store)
    if as_csv:
        write_csv(out, conflicts)
    else:
        print_conflicts(conflicts, console)


def take_one(config: Config, console: Console, side: str, which: tuple[str, str, str]) -> int:
    """`haul resolve --take`: decide the conflict `which` (entity, record, field); exit 0."""
    with open_store(config.staging_path) as store:
        found = take(store, side, *which)
    _say(console, f"decided: {found.name}: take the {side}; {NEXT}")
    return 0


def take_from(config: Config, console: Console, path: Path) -> int:
    """`haul resolve --from`: each decision of the CSV at `path`; the exit status."""
    try:
        with (
            open_store(config.staging_path) as store,
            path.open(newline="", encoding="utf-8-sig") as lines,
        ):
            result = decide_from(store, lines, path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ResolveError(f"{path} is not a CSV file haul resolve can read: {exc}") from None
    return print_from(result, console)


def open_conflicts(store: StagingStore) -> list[Open]:
    """Every open conflict, by record and field, with its record's target id."""
    return [Open(c, _target_id(store, c)) for c in store.conflicts.iter_open()]


def take(store: StagingStore, side: str, entity: str, record: str, name: str) -> Open:
    """Decide one conflict: `record` is its source id (or, for an issue, its target key)."""
    if side not in SIDES:
        raise ResolveError(f"--take {side}: take source or target")
    conflicts = [o for o in open_conflicts(store) if _names(o, entity, record)]
    if not conflicts:
        raise ResolveError(f"{entity} {record} has no open conflict (haul resolve lists them)")
    chosen = next((o for o in conflicts if o.conflict.field == name), None)
    if chosen is None:
        fields = ", ".join(o.conflict.field for o in conflicts)
        raise ResolveError(f"{entity} {record} has no conflict in {name!r}, only in: {fields}")
    _decide(store, chosen, cast(Take, side), (chosen.conflict.source, chosen.conflict.target))
    return chosen


def decide_from(store: StagingStore, lines: Iterable[str], path: Path) -> FromFile:
    """Each row's decision of the CSV `lines` (`HEADER`'s columns; `target_id` optional).
    Checked whole before any is kept: a ResolveError names the first bad line."""
    by_key = {(o.conflict.entity, o.conflict.source_id, o.conflict.field): o
              for o in open_conflicts(store)}  # fmt: skip
    result, chosen = FromFile(), []
    for number, row in _rows(lines, path):
        decision = (row.get("decision") or "").strip().lower()
        if not decision:
            result.blank += 1
            continue
        if decision not in SIDES:
            raise ResolveError(
                f"{path}, line {number}: decision {row['decision']!r}: write source, target, "
                "or leave it blank"
            )
        key = (row["entity"] or "", row["source_id"] or "", row["field"] or "")
        found = by_key.get(key)
        if found is None:
            raise ResolveError(
                f"{path}, line {number}: {' '.join(key)} is no open conflict (haul resolve "
                "--format csv writes the open ones)"
            )
        against = (_cell(row, "source", number, path), _cell(row, "target", number, path))
        if against != (as_stored(found.conflict.source), as_stored(found.conflict.target)):
            result.stale.append(f"line {number}: {found.name}: {_moved(found, against)}")
            continue
        chosen.append((found, cast(Take, decision), against))
    with store.transaction():
        for found, side, against in chosen:
            _decide(store, found, side, against)
            result.decided.append((found, side))
    return result


def write_csv(out: IO[str], conflicts: Sequence[Open]) -> None:
    """The conflicts as CSV (`HEADER`), the decision column for a person to fill (empty but
    where a decision is kept already)."""
    writer = csv.writer(out)
    writer.writerow(HEADER)
    writer.writerows(o.row(o.conflict.decision or "") for o in conflicts)


def print_conflicts(conflicts: Sequence[Open], console: Console) -> None:
    """The open conflicts as a table, then what to do."""
    if not conflicts:
        _say(console, "no open conflicts")
        return
    table = Table(title="haul resolve: open conflicts")
    for column in ("record", "field", "source", "target", "decided"):
        table.add_column(column)
    for o in conflicts:
        c = o.conflict
        record = f"{c.entity} {c.source_id}"
        if o.target_id not in ("", c.source_id):
            record += f" ({o.target_id})"
        table.add_row(record, c.field, _shown(c.source), _shown(c.target), c.decision or "")
    console.print(table)
    decided = sum(o.conflict.decision is not None for o in conflicts)
    _say(console, f"{len(conflicts)} open conflict(s), {decided} decided ({NEXT})")
    _say(
        console,
        "next: haul resolve --take source|target --issue KEY --field NAME, or haul resolve "
        "--format csv > conflicts.csv, fill its decision column, then haul resolve --from "
        "conflicts.csv",
    )


def print_from(result: FromFile, console: Console) -> int:
    """What `--from` kept, left open and found stale; the exit status (3: some stale)."""
    for found, side in result.decided:
        _say(console, f"decided: {found.name}: take the {side}")
    for line in result.stale:
        _say(console, f"not decided: {line}")
    _say(
        console,
        f"{len(result.decided)} decided, {result.blank} left open, {len(result.stale)} made "
        f"against values that moved since (haul resolve lists them as they are now); {NEXT}",
    )
    return 3 if result.stale else 0


def _decide(store: StagingStore, found: Open, side: Take, against: tuple[Any, Any]) -> None:
    c = found.conflict
    store.conflicts.decide(c.entity, c.source_id, c.field, side, against)


def _names(found: Open, entity: str, record: str) -> bool:
    c = found.conflict
    return c.entity == entity and record in (c.source_id, found.target_id)


def _target_id(store: StagingStore, conflict: Conflict) -> str:
    row = store.ledger.get(conflict.entity, conflict.source_id)
    return (row.target_id if row is not None else None) or ""


def _rows(lines: Iterable[str], path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(lines)
    missing = [n for n in HEADER if n != "target_id" and n not in (reader.fieldnames or ())]
    if missing:
        raise ResolveError(
            f"{path}: no {', '.join(missing)} column (haul resolve --format csv writes the "
            f"columns {', '.join(HEADER)})"
        )
    for row in reader:
        yield reader.line_num, row


def _cell(row: dict[str, str], name: str, number: int, path: Path) -> Any:
    try:
        return json.loads(row[name])
    except (json.JSONDecodeError, TypeError):
        raise ResolveError(
            f"{path}, line {number}: the {name} value {row[name]!r} is not the JSON haul "
            "resolve --format csv wrote: leave the values as written"
        ) from None


def _moved(found: Open, against: tuple[Any, Any]) -> str:
    return (
        f"decided against source {_shown(against[0])}, target {_shown(against[1])}; now source"
        f" {_shown(found.conflict.source)}, target {_shown(found.conflict.target)}"
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _shown(value: Any, limit: int = 60) -> str:
    if value is None:
        return "(empty)"
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _say(console: Console, line: str) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True)
