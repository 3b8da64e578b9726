"""`haul status`: where a migration stands, from aggregate queries only (fast on any store).

Per entity: the source's count when the last extract learnt it, staged records, loaded,
skipped (staged but never planned to load by design), staged twice (one record staged under two
parents, as a link is from both its ends: loaded once, from one side, so neither skipped nor
counted twice), failed, pending, waiting (a link whose other end no run brought in yet, each
named with what it waits for);
what the config had the last extract leave out (the changelog of a migration's config);
what a killed load left held in the target (a service that holds anything while it loads says
what, with `held_in_target(store)`: the tracker's triggers switched off);
the last runs with their outcomes (a run whose process died shows as interrupted: its lock is
free); and the next action in one line.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from haul.pipelines.commands.failures import problem_stage
from haul.pipelines.engine import CHANGE, KEPT
from haul.pipelines.report.counts import render_counts
from haul.pipelines.services import Service, entity_named, loadable
from haul.pipelines.streams import not_staged
from haul.pipelines.waiting import SHOWN, Waiting, next_step, waiting_lines, waiting_records
from haul.state.private import open_private
from haul.state.store import StagingStore

VERIFY_CHECKPOINT = "verify.last"  # haul verify's last result, kept in the store


def verify_after(verify: Mapping[str, Any] | None, run_end: str | None) -> Mapping[str, Any] | None:
    """The last verify's result if it speaks of the last run (it ended after the run did); a
    verify from before the run says nothing of what the run changed."""
    if not verify or (run_end and str(verify.get("ended_at") or "") < run_end):
        return None
    return verify


@dataclass(frozen=True)
class StatusLine:
    """One entity's line of `haul status`."""

    entity: str
    source: int | None
    staged: int
    loaded: int
    skipped: int
    failed: int
    pending: int
    twice: int = 0  # records staged under a second parent too (a link's other end)
    waiting: int = 0  # records that wait for one a later run brings in (not failed)


@dataclass
class Status:
    """Everything `haul status` shows."""

    lines: list[StatusLine] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    problems: int = 0  # records the extract could not stage whole
    changes: int = 0  # loaded records whose change at the source the load could not carry
    conflicts: int = 0  # of their fields, those changed on both sides (haul resolve settles)
    decided: int = 0  # of the conflicts, those haul resolve decided: the next load applies them
    not_staged: dict[str, str] = field(default_factory=dict)  # entity -> the setting that says so
    not_carried: dict[str, int] = field(default_factory=dict)  # "field: reason" -> values left out
    # entity -> (records deleted at the source, of them deleted in the target too)
    deleted: dict[str, tuple[int, int]] = field(default_factory=dict)
    verify: Mapping[str, Any] | None = None  # the last verify, if it came after the last run
    # entity -> records still at the source but out of the scope now (left in the target)
    out_of_scope: dict[str, int] = field(default_factory=dict)
    waiting: list[Waiting] = field(default_factory=list)  # the first waiting records, named
    # entity -> (loaded records haul undo took out of the target, those whose DELETE an
    # interrupted undo may not have sent): still counted as loaded, reported missing by verify
    undone: dict[str, tuple[int, int]] = field(default_factory=dict)
    # entity -> loaded records haul undo kept: a person changed them since haul wrote them
    kept_as_changed: dict[str, int] = field(default_factory=dict)
    # what a killed load left held in the target (the next load gives it back), one line each
    held: list[str] = field(default_factory=list)

    @property
    def waiting_total(self) -> int:
        return sum(line.waiting for line in self.lines)

    def next_action(self) -> str:
        """What the person should do next, in one line."""
        failed = sum(line.failed for line in self.lines)
        pending = sum(line.pending for line in self.lines)
        last = self.runs[0] if self.runs else None
        if last is not None and last["outcome"] == "running":
            return f"a haul {last['command']} run is under way (pid {last.get('pid')})"
        if self.held:
            return (
                f"a stopped load left {len(self.held)} held in the target (listed above): run "
                "haul load (or haul run), which gives them back when it ends, or switch them "
                "on again by hand in the target"
            )
        if self.problems:
            return f"{self.problems} records could not be extracted whole: run haul failures"
        if self.decided:
            return f"{self.decided} conflicts decided with haul resolve: run haul load"
        if self.changes:
            settle = (
                f" (haul resolve settles its {self.conflicts} conflicts)" if self.conflicts else ""
            )
            return (
                f"{self.changes} loaded records changed at the source and could not be brought"
                f" up to date: run haul failures{settle}"
            )
        if failed:
            return f"{failed} records failed: run haul failures"
        if any(in_flight for _, in_flight in self.undone.values()):
            sent = sum(in_flight for _, in_flight in self.undone.values())
            return f"{sent} deletions of an interrupted undo may not be sent: run haul undo again"
        if last is not None and last["outcome"] == "interrupted":
            return f"the last run was interrupted: run haul {last['command']} to resume"
        if not any(line.staged for line in self.lines):
            return "nothing staged yet: run haul extract"
        if pending:
            return f"{pending} records wait to load: run haul load"
        if self.waiting_total:
            return next_step(self.waiting_total)
        if self.verify is None:
            return "everything staged is loaded: run haul verify to compare the target"
        if not self.verify.get("ok"):
            return (
                f"haul verify found {self.verify.get('difference_count')} difference(s): read "
                "verify.csv beside the store, correct them (or the config), then run haul verify"
                " again"
            )
        return "nothing: everything staged is loaded and haul verify found the target matching"

    def verify_line(self) -> str:
        """What the verify after the last run found ("" when none came after it)."""
        if self.verify is None:
            return ""
        if self.verify.get("ok"):
            return "verify after the last run: the target matches the staged data"
        count = self.verify.get("difference_count")
        return f"verify after the last run: {count} difference(s) (verify.csv beside the store)"


def lock_held(lock_path: Path) -> bool:
    """Whether a live process holds the store's run lock (the kernel frees it on death)."""
    if not lock_path.exists():
        return False
    fd = os.open(lock_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the shared lock if we got it
    return False


def gather_status(store: StagingStore, services: Sequence[Service], runs: int = 5) -> Status:
    """The status of `store`: counts by GROUP BY queries, the last `runs` runs."""
    ledger = store.ledger.counts()
    records = store.count_records()
    recent = store.recent_runs(runs)
    alive = lock_held(store.path.with_name(store.path.name + ".lock"))
    for index, run in enumerate(recent):
        if run["outcome"] is None:
            run["outcome"] = "running" if alive and index == 0 else "interrupted"
    known = _source_counts(recent, services)
    last_end = recent[0]["ended_at"] if recent else None
    conflicts = list(store.conflicts.iter_open())
    planned: dict[str, int] = {}
    for entity, states in ledger.items():
        kind = entity_named(services, entity).staged_as
        planned[kind] = planned.get(kind, 0) + sum(states.values())
    status = Status(
        runs=recent,
        problems=sum(not p.entity.endswith((CHANGE, KEPT)) for p in store.problems),
        changes=sum(p.entity.endswith(CHANGE) for p in store.problems),
        conflicts=len(conflicts),
        decided=sum(c.decision is not None for c in conflicts),
        not_staged=not_staged(store),
        not_carried=_not_carried(recent),
        deleted=deleted_at_source(store, deletion_kinds(services)),
        verify=verify_after(store.get_checkpoint(VERIFY_CHECKPOINT), last_end),
        out_of_scope=out_of_scope(store, deletion_kinds(services)),
        waiting=waiting_records(store, SHOWN),
        undone=_undone(store),
        kept_as_changed=_kept_as_changed(store),
        held=held_in_target(store, services),
    )
    for service in services:
        for entity in loadable(service):
            states = ledger.get(entity, {})
            kind = entity_named(services, entity).staged_as
            owns_kind = entity == kind
            staged = records.get(kind, 0) if owns_kind else sum(states.values())
            unplanned = max(0, records.get(kind, 0) - planned.get(kind, 0)) if owns_kind else 0
            twice = staged_twice(store, services, kind) if unplanned else 0
            status.lines.append(
                StatusLine(
                    entity,
                    source=known.get(entity),
                    staged=staged,
                    loaded=states.get("done", 0),
                    skipped=max(0, unplanned - twice),
                    failed=states.get("failed", 0),
                    pending=states.get("pending", 0) + states.get("in_flight", 0),
                    twice=twice,
                    waiting=states.get("waiting", 0),
                )
            )
    return status


def staged_twice(store: StagingStore, services: Sequence[Service], kind: str) -> int:
    """How many unplanned staged records of `kind` are a planned one staged under another
    parent: a child's source id is `parent/id`, and the same `id` under two parents is one
    record seen from both (a link between two staged issues). Asked only when some staged
    records are not planned, so a store without any pays nothing."""
    entities = [e.name for s in services for e in s.entities if e.loads and e.staged_as == kind]
    planned = {row.source_id for name in entities for row in store.ledger.iter_rows(entity=name)}
    ids = {source_id.rpartition("/")[2] for source_id in planned if "/" in source_id}
    return sum(
        1
        for source_id in store.source_ids(kind) - planned
        if "/" in source_id and source_id.rpartition("/")[2] in ids
    )


def held_in_target(store: StagingStore, services: Sequence[Service]) -> list[str]:
    """What a killed load left held in the target, from each service that holds something
    while it loads (an optional `held_in_target(store)`, as `shard_units` is)."""
    held: list[str] = []
    for service in services:
        reader = getattr(service, "held_in_target", None)
        if reader is not None:
            held += reader(store)
    return held


def deleted_at_source(
    store: StagingStore, kinds: Sequence[tuple[str, str]] = (("deleted", "deletion"),)
) -> dict[str, tuple[int, int]]:
    """Entity -> (its records a sync found deleted at the source, those deleted in the target).

    A service stages each as a record of its deletions' staged entity naming its `entity`
    (`kinds`: (staged entity, ledger entity) per service); one mirrored in the target is a done
    ledger row of the same source id. A file replaced (``replaced``) changed: not counted."""
    found: dict[str, int] = {}
    replaced: set[str] = set()
    for staged in dict.fromkeys(staged for staged, _ in kinds):
        for record in store.iter_records(staged):
            if record.raw.get("out_of_scope"):  # alive at the source: see out_of_scope()
                continue
            if record.raw.get("replaced"):
                replaced.add(record.source_id)
                continue
            entity = str(record.raw.get("entity"))
            found[entity] = found.get(entity, 0) + 1
    mirrored: dict[str, int] = {}
    for ledger_entity in dict.fromkeys(ledger for _, ledger in kinds):
        for row in store.ledger.iter_rows(status="done", entity=ledger_entity):
            if row.source_id not in replaced:
                entity = row.source_id.split(":", 1)[0]
                mirrored[entity] = mirrored.get(entity, 0) + 1
    return {entity: (n, mirrored.get(entity, 0)) for entity, n in sorted(found.items())}


def out_of_scope(
    store: StagingStore, kinds: Sequence[tuple[str, str]] = (("deleted", "deletion"),)
) -> dict[str, int]:
    """Entity -> its records a sync found still at the source but out of the scope now
    (moved out of it, or no longer matching its query): staged among the deletions with
    ``out_of_scope``, never deleted in the target."""
    found: dict[str, int] = {}
    for staged in dict.fromkeys(staged for staged, _ in kinds):
        for record in store.iter_records(staged):
            if record.raw.get("out_of_scope"):
                entity = str(record.raw.get("entity"))
                found[entity] = found.get(entity, 0) + 1
    return dict(sorted(found.items()))


def deletion_kinds(services: Sequence[Service]) -> list[tuple[str, str]]:
    """(staged entity, ledger entity) of each service's deletions: the entity it declares
    staged as `*deleted` (the ledger's own name, or a staged-only one's)."""
    return [
        (entity.staged_as, entity.name)
        for service in services
        for entity in service.entities
        if entity.staged_as.endswith("deleted")
    ]


def _kept_as_changed(store: StagingStore) -> dict[str, int]:
    """entity -> records haul undo kept because a person changed them since haul wrote them."""
    counts: dict[str, int] = {}
    for problem in store.problems:
        if problem.entity.endswith(KEPT):
            entity = problem.entity.removesuffix(KEPT)
            counts[entity] = counts.get(entity, 0) + 1
    return counts


def _undone(store: StagingStore) -> dict[str, tuple[int, int]]:
    """entity -> (rows haul undo took back, rows it began to take back)."""
    counts = store.ledger.undo_counts()
    return {
        entity: (
            sum(outcomes.values()) - outcomes.get("in_flight", 0),
            outcomes.get("in_flight", 0),
        )
        for entity, outcomes in counts.items()
    }


def _not_carried(runs: list[dict[str, Any]]) -> dict[str, int]:
    """What the newest load (or run) left out of records it loaded."""
    for run in runs:
        if run["command"] in ("load", "run") and run.get("counts"):
            return dict(run["counts"].get("not_carried") or {})
    return {}


def _source_counts(runs: list[dict[str, Any]], services: Sequence[Service]) -> dict[str, int]:
    """Entity -> the source's own count of it, from the newest run that learnt any."""
    keys = {e.name: e.source_count for s in services for e in s.entities if e.source_count}
    for run in runs:
        counts = run.get("counts") or {}
        found = {e: counts[k] for e, k in keys.items() if isinstance(counts.get(k), int)}
        if found:
            return found
    return {}


def print_status(status: Status, counts: list[Any], console: Console, title: str) -> None:
    """The per-entity table (as every command prints it), then the source counts, the
    skipped records, the last runs, and the next action."""
    render_counts(counts, console, title=title)
    for line in status.lines:
        if line.source is not None:
            say(console, f"{line.entity} in the source: {line.source} (at the last extract)")
        if line.twice:
            say(
                console,
                f"{line.entity} staged twice: {line.twice} (one record under two parents, such"
                " as a link seen from both its ends: loaded once)",
            )
        if line.skipped:
            say(console, f"{line.entity} skipped: {line.skipped} (staged, not loaded by design)")
    for entity, why in status.not_staged.items():
        say(console, f"{entity} not staged by the last extract: {why}")
    for held in status.held:
        say(console, f"left by a stopped load in the target: {held}")
    for what, count in status.not_carried.items():
        say(console, f"not carried by the last load: {what}: {count}")
    for entity, (deleted, mirrored) in status.deleted.items():
        left = "" if mirrored == deleted else ' ([sync] deletions = "mirror" deletes the rest)'
        say(
            console,
            f"deleted at the source: {entity}: {deleted}, deleted in the target: {mirrored}{left}",
        )
    for entity, count in status.out_of_scope.items():
        say(
            console,
            f"out of the scope now: {entity}: {count} (still at the source, no longer in the"
            " scope (moved out of it, or no longer matching its query): left in the target as"
            " loaded, never deleted there)",
        )
    for waiting in waiting_lines(status.waiting, status.waiting_total):
        say(console, waiting)
    for entity, (undone, in_flight) in status.undone.items():
        unsure = f", {in_flight} more begun by an interrupted undo" if in_flight else ""
        say(
            console,
            f"undone: {entity}: {undone} loaded, then taken out of the target by haul undo"
            f"{unsure} (counted as loaded above; haul verify reports them missing)",
        )
    if status.conflicts:
        say(
            console,
            f"conflicts: {status.conflicts} fields changed on both sides, the target's value"
            f" kept; {status.decided} decided (haul resolve lists and settles them)",
        )
    for entity, kept in status.kept_as_changed.items():
        say(
            console,
            f"kept by undo: {entity}: {kept} (a person changed them in the target since haul"
            " wrote them; haul failures names them, haul undo --include-changed deletes them)",
        )
    for run in status.runs:
        say(
            console,
            f"run {run['id']}: {run['command']} {run['outcome']} started {run['started_at']}"
            f" ended {run['ended_at'] or '-'}",
        )
    if status.verify_line():
        say(console, status.verify_line())
    say(console, f"next: {status.next_action()}")


def say(console: Console, line: str) -> None:
    """One plain line (no markup, no highlighting), for people and grep alike."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def write_failures_csv(path: Path, problems: Sequence[Any], rows: Sequence[Any]) -> None:
    """Every failure as a CSV row: entity, source_id, stage, attempts, error."""
    import csv

    with open_private(path, newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["entity", "source_id", "stage", "attempts", "error"])
        writer.writerows(
            [p.entity, p.source_id, problem_stage(p.entity), "", p.error] for p in problems
        )
        writer.writerows([r.entity, r.source_id, "load", r.attempts, r.error] for r in rows)
