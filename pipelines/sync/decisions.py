"""A person's decisions on a sync's conflicts (`haul resolve`), applied by the next refresh.

A conflict is a field changed on both sides since haul wrote it (`pipelines.sync.three_way`).
A decision (`state.conflicts.Decision`) settles it only while both sides still hold the values
it was made against:

    take source   the field is carried: the source's value is written, and becomes the base
    take target   the field is kept: nothing is written; the base becomes the source's value,
                  so from now on the field reads as changed in the target only (the base
                  cannot become the target's value: the source's would then read as a change
                  at the source and be written over the person's choice)
    made against values that moved since
                  the conflict stays open, and its message names the decision it did not apply

    apply_decisions(changes, decisions) -> Decided   plain values, no I/O
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from haul.state.conflicts import Decision

if TYPE_CHECKING:  # three_way applies the decisions: it imports this module
    from haul.pipelines.sync.three_way import FieldChanges

HOW = "haul resolve lists it; decide again"


@dataclass(frozen=True)
class Decided:
    """A record's changes once its decisions are applied: `taken` field -> the side taken,
    `stale` field -> the decision left unapplied (the sides moved since it was made)."""

    changes: FieldChanges
    taken: dict[str, str] = field(default_factory=dict)
    stale: dict[str, Decision] = field(default_factory=dict)

    def stale_note(self) -> str:
        """The decisions not applied, each with the values it was made against ("" if none)."""
        named = "; ".join(
            f"{name}: taking the {d.take} was decided against source {d.source!r}, target"
            f" {d.target!r}, and a side has moved since"
            for name, d in self.stale.items()
        )
        return f" (a decision not applied: {named}; {HOW})" if named else ""


def apply_decisions(changes: FieldChanges, decisions: Mapping[str, Decision]) -> Decided:
    """Move each conflict a decision settles to the carried or the kept fields."""
    carried, kept = dict(changes.carried), dict(changes.kept)
    conflicts: dict[str, tuple[object, object]] = {}
    taken: dict[str, str] = {}
    stale: dict[str, Decision] = {}
    for name, (ours, theirs) in changes.conflicts.items():
        decision = decisions.get(name)
        if decision is None or not decision.made_against((ours, theirs)):
            conflicts[name] = (ours, theirs)
            if decision is not None:
                stale[name] = decision
            continue
        taken[name] = decision.take
        if decision.take == "source":
            carried[name] = ours
        else:
            kept[name] = theirs
    return Decided(replace(changes, carried=carried, kept=kept, conflicts=conflicts), taken, stale)
