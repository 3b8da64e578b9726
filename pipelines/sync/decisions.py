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

    apply_decisions(conflicts, decisions) -> Decided   plain values, no I/O
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from haul.state.conflicts import Decision

HOW = "haul resolve lists it; decide again"


@dataclass(frozen=True)
class Decided:
    """A record's conflicts once its decisions are applied: `carried` field -> the source's
    value (taken), `kept` field -> the target's (taken), `open` field -> both values (no
    decision, or a stale one), `stale` field -> the decision left unapplied (the sides moved
    since it was made)."""

    carried: dict[str, Any] = field(default_factory=dict)
    kept: dict[str, Any] = field(default_factory=dict)
    open: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    stale: dict[str, Decision] = field(default_factory=dict)

    def stale_note(self) -> str:
        """The decisions not applied, each with the values it was made against ("" if none)."""
        named = "; ".join(
            f"{name}: taking the {d.take} was decided against source {d.source!r}, target"
            f" {d.target!r}, and a side has moved since"
            for name, d in self.stale.items()
        )
        return f" (a decision not applied: {named}; {HOW})" if named else ""


def apply_decisions(
    conflicts: Mapping[str, tuple[Any, Any]], decisions: Mapping[str, Decision]
) -> Decided:
    """Each conflict (field -> (the source's value, the target's)) as its decision settles it."""
    decided = Decided()
    for name, (ours, theirs) in conflicts.items():
        decision = decisions.get(name)
        if decision is None or not decision.made_against((ours, theirs)):
            decided.open[name] = (ours, theirs)
            if decision is not None:
                decided.stale[name] = decision
        elif decision.take == "source":
            decided.carried[name] = ours
        else:
            decided.kept[name] = theirs
    return decided
