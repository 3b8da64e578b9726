"""Failed records grouped by root cause, the commonest first.

A record that failed on its own (a 409 on an issue, a 422 on a comment) is a root; a record
that failed because something it hangs from or points to did ("issue DEV-1 was not loaded",
"component c1 was not loaded, so the issue cannot be made") waits under that record's root
and is counted there, not listed as a cause of its own. Roots whose reasons differ only in
their numbers and quoted names (the key of each conflicting issue) share one cause; its
`reason` is the first of them, as the service worded it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from haul.pipelines.engine import CHANGE, KEPT
from haul.state.store import StagingStore

# the engine's words for a record left failed by another (see `engine`)
WAITING = re.compile(r"^(?P<entity>\S+) (?P<source_id>\S+) was not loaded\b")
_VARIABLE = re.compile(r"'[^']*'|\"[^\"]*\"|[A-Za-z][A-Za-z0-9_]*-\d+|\d+")
_MAX_DEPTH = 20  # a chain longer than any tree haul loads: a cycle, so stop there

Key = tuple[str, str]  # (entity, source_id)


@dataclass
class Cause:
    """One reason records failed: its root records and the records waiting under them."""

    stage: str  # "extract" or "load"
    entity: str
    reason: str
    roots: list[str] = field(default_factory=list)  # source ids
    waiting: Counter[str] = field(default_factory=Counter)  # entity -> records under them

    @property
    def count(self) -> int:
        return len(self.roots)

    @property
    def total(self) -> int:
        return self.count + sum(self.waiting.values())

    def line(self) -> str:
        """One line for a person: how many, of what, why, and how many wait under them."""
        stage = f" ({self.stage})" if self.stage in ("extract", "undo") else ""
        under = sum(self.waiting.values())
        more = f"; {under} record(s) waiting under them" if under else ""
        return f"{self.count} {self.entity}{stage}: {self.reason}{more}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "entity": self.entity,
            "reason": self.reason,
            "count": self.count,
            "waiting": sum(self.waiting.values()),
            "waiting_by_entity": dict(self.waiting),
            "examples": self.roots[:5],
        }


@dataclass
class Failures:
    """Every failed record of a store, sorted into causes (`causes`, commonest first)."""

    causes: list[Cause]
    cause_of: dict[Key, Cause]  # every failed record's cause, roots and waiting alike
    waiting: set[Key] = field(default_factory=set)  # the records failed for another

    @property
    def records(self) -> int:
        return sum(cause.total for cause in self.causes)

    def commonest(self) -> Cause | None:
        return self.causes[0] if self.causes else None

    def rank(self, entity: str, source_id: str) -> tuple[int, bool]:
        """Where a record goes in a listing: by its cause, commonest first; roots first."""
        cause = self.cause_of.get((entity, source_id))
        if cause is None:
            return (len(self.causes), True)
        return (self._place[id(cause)], (entity, source_id) in self.waiting)

    @cached_property
    def _place(self) -> dict[int, int]:
        return {id(cause): rank for rank, cause in enumerate(self.causes)}


def sort_failures(
    failed: Iterable[tuple[str, str, str]], problems: Iterable[tuple[str, str, str]] = ()
) -> Failures:
    """Causes from failed ledger rows and extract problems, each as (entity, id, error)."""
    errors = {(entity, source_id): error or "" for entity, source_id, error in failed}
    groups: dict[tuple[str, str, str], Cause] = {}
    cause_of: dict[Key, Cause] = {}
    waiting: set[Key] = set()

    def cause_for(stage: str, key: Key, reason: str) -> Cause:
        group = (stage, key[0], _VARIABLE.sub("#", reason))
        if group not in groups:
            groups[group] = Cause(stage, key[0], reason)
        return groups[group]

    for entity, source_id, error in problems:  # a change not carried is the load's problem
        stage = problem_stage(entity)
        cause = cause_for(stage, (entity, source_id), error)
        cause.roots.append(source_id)
        cause_of[(entity, source_id)] = cause
    roots = {key: _root(key, errors) for key in errors}
    for key, root in sorted(roots.items(), key=lambda item: item[0] != item[1]):
        if key == root:
            cause = cause_for("load", key, errors[key])
            cause.roots.append(key[1])
        else:
            cause = cause_of[root]
            cause.waiting[key[0]] += 1
            waiting.add(key)
        cause_of[key] = cause
    ordered = sorted(groups.values(), key=lambda c: (-c.total, -c.count, c.entity, c.reason))
    return Failures(ordered, cause_of, waiting)


def problem_stage(entity: str) -> str:
    """The stage a problem kept under `entity` belongs to: a change the load could not carry
    ("<entity>:change"), a record undo kept as a person changed it ("<entity>:kept"), or
    the extract's."""
    if entity.endswith(CHANGE):
        return "load"
    return "undo" if entity.endswith(KEPT) else "extract"


def _root(key: Key, errors: dict[Key, str]) -> Key:
    """The failed record at the top of `key`'s chain of "... was not loaded"."""
    for _ in range(_MAX_DEPTH):
        found = WAITING.match(errors[key])
        above = (found["entity"], found["source_id"]) if found else None
        if above is None or above not in errors or above == key:
            return key
        key = above
    return key


def store_failures(store: StagingStore, entity: str | None = None) -> Failures:
    """The causes of every failed record of `store` (of one entity's records if given; the
    causes are still found across entities, so a comment waits under its issue's cause)."""
    failures = sort_failures(
        ((r.entity, r.source_id, r.error or "") for r in store.ledger.iter_rows(status="failed")),
        ((p.entity, p.source_id, p.error) for p in store.problems),
    )
    if entity is None:
        return failures
    kept = {k: c for k, c in failures.cause_of.items() if k[0] == entity}
    present = {id(cause) for cause in kept.values()}
    causes = [c for c in failures.causes if id(c) in present]
    return Failures(causes, kept, failures.waiting)
