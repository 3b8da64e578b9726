"""Three-way sync, the one rule for every record a later run edits, at whatever grain.

haul keeps, for each record it wrote, the fields as it wrote them (the base, `state.written`).
A later run compares the source, the base and the target field by field (`diff_fields`): a
field changed only at the source is carried, one changed only in the target is kept, one
changed on both sides is a conflict, settled by `[sync] conflicts`: "keep-target" (the default)
leaves the target's value and reports both values (`Conflicted`: status, report, `haul
failures`, exit 3); "source-wins" overwrites it and records what it overwrote. A record is an
issue's fields, a comment's text, a checklist item, a wiki page's title and body: each service
builds the compared form of its records, the rule here knows none of them. A text haul wrote
and then wrote again with its files' target ids is unchanged at the source when the source
reads as that second write (`written_as`, the service's): only a person's edit in the target
is then "changed in the target", never a conflict.

    diff_fields(source, base, target, written_as) -> FieldChanges   plain values, no I/O
    base_after(source, base, changes, rule)                         the base a run leaves
    with_decisions(changes, decisions)       the conflicts a person decided (haul resolve), settled
    ThreeWay.settle(entity, id, (source, target), write) -> the new base, or raises Conflicted
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from haul.pipelines.specs import Conflicted, Fields
from haul.pipelines.sync.decisions import Decided, apply_decisions
from haul.pipelines.sync.references import without_file_ids
from haul.state.conflicts import Conflicts, Decision
from haul.state.written import Written

ConflictRule = Literal["keep-target", "source-wins"]
SHOWN = 200  # characters of a value a conflict message shows (a page body can be long)


@dataclass(frozen=True)
class FieldChanges:
    """One record's fields, three ways: what a run carries, keeps and finds in conflict.

    `carried`: changed at the source only (or the record has no base), field -> the source's
    value; `kept`: changed in the target only, field -> the target's value; `conflicts`: changed
    on both sides to different values, field -> (the source's value, the target's value).
    Fields both sides hold alike are in none of them."""

    carried: dict[str, Any] = field(default_factory=dict)
    kept: dict[str, Any] = field(default_factory=dict)
    conflicts: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.carried or self.kept or self.conflicts)


# whether a value is the one haul wrote as the base's (a text: once it patched its file ids)
WrittenAs = Callable[[Any, Any], bool]


def _equal(written: Any, now: Any) -> bool:
    return bool(written == now)


def diff_fields(
    source: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    target: Mapping[str, Any],
    written_as: WrittenAs = _equal,
) -> FieldChanges:
    """Compare each field of the source, the base (what haul last wrote, None when it kept
    none: then the source's value is carried, as before three-way sync) and the target.
    The source's value is unchanged when `written_as(base's, source's)`: a text whose file
    references haul patched after writing it (`References.written_as`) is compared as patched.

    An absent field, null, an empty string or list are the same empty value."""
    changes = FieldChanges()
    for name in sorted({*source, *(base or {}), *target}):
        ours, theirs = _value(source, name), _value(target, name)
        if ours == theirs:
            continue
        if base is None or _kept_since(_value(base, name), theirs):
            changes.carried[name] = ours
        elif written_as(_value(base, name), ours):
            changes.kept[name] = theirs
        else:
            changes.conflicts[name] = (ours, theirs)
    return changes


def base_after(
    source: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    changes: FieldChanges,
    rule: ConflictRule,
) -> dict[str, Any]:
    """What haul has written of the record once `changes` are applied under `rule`: the
    source's fields, but a conflict the target kept keeps its old base (so it stays a
    conflict until a person settles it)."""
    after = dict(source)
    if rule == "keep-target":
        for name in changes.conflicts:
            after[name] = _value(base or {}, name)
    return after


def with_decisions(
    changes: FieldChanges, decisions: Mapping[str, Decision]
) -> tuple[FieldChanges, Decided]:
    """`changes` once a person's decisions settle their conflicts (`pipelines.sync.decisions`):
    a conflict taken from the source carried, one taken from the target kept."""
    decided = apply_decisions(changes.conflicts, decisions)
    carried, kept = changes.carried | decided.carried, changes.kept | decided.kept
    return FieldChanges(carried, kept, decided.open), decided


def settled_values(changes: FieldChanges, source: Mapping[str, Any], rule: ConflictRule) -> Fields:
    """What the target should hold of each field once `changes` are settled under `rule`:
    the source's value, but the target's where only it changed, or where both did and the
    target keeps its value."""
    values = dict(source) | changes.kept
    if rule == "keep-target":
        values |= {name: theirs for name, (_, theirs) in changes.conflicts.items()}
    return values


def conflict_message(changes: FieldChanges, record: str = "", *, resolvable: bool = False) -> str:
    """The conflicts the target kept, each with both values, and how to settle them (with
    `haul resolve` too when `resolvable`: fields kept in `state.conflicts`); led by `record`
    when given (how a person finds it in the target: "page 'team/a'"), since a run's last line
    quotes the message without the record's id."""
    named = "; ".join(
        f"{name}: source {_shown(ours, theirs)}, target {_shown(theirs, ours)}"
        for name, (ours, theirs) in changes.conflicts.items()
    )
    return (
        f"{record + ' ' if record else ''}changed on both sides, the target keeps its value: "
        f"{named} ({'haul resolve takes one side, or ' if resolvable else ''}make both sides"
        ' agree, or set [sync] conflicts = "source-wins"; then run haul load again)'
    )


def same(one: Any, other: Any) -> bool:
    """Whether two values of a field are alike (every empty value is the same)."""
    return bool(_value({"v": one}, "v") == _value({"v": other}, "v"))


def changed_where(source: Any, base: Any, target: Any, written_as: WrittenAs = _equal) -> str:
    """Why a target's value differs from the source's, given the base (what haul wrote):
    "changed in the target", "changed on both sides", or "" (the target holds what haul
    wrote: the source's change is not carried, a loss)."""
    if _kept_since(_value({"v": base}, "v"), _value({"v": target}, "v")):
        return ""
    unchanged = same(source, base) or written_as(base, source)
    return "changed in the target" if unchanged else "changed on both sides"


# writes the fields named (the source's values) to the target record
FieldWriter = Callable[[list[str]], Awaitable[object]]


@dataclass
class ThreeWay:
    """One rule for every record a sync edits: source, base and target compared field by
    field (`diff_fields`), what changed only at the source written, a conflict settled by
    `[sync] conflicts`; the run's changes counted per entity."""

    written: Written
    rule: ConflictRule
    changes: Counter[tuple[str, str]]
    written_as: WrittenAs = _equal  # the service's texts, their file ids patched (`diff_fields`)
    decisions: Conflicts | None = None  # a person's, for conflicts (`pipelines.sync.decisions`)

    def compare(self, entity: str, source_id: str, compared: tuple[Fields, Fields]) -> FieldChanges:
        """The record's fields three ways: `compared` (source, target) against its base."""
        source, target = compared
        return diff_fields(source, self.written.base(entity, source_id), target, self.written_as)

    async def settle(
        self,
        entity: str,
        source_id: str,
        compared: tuple[Fields, Fields],
        write: FieldWriter,
        *,
        always: bool = False,
        record: str = "",
    ) -> Fields:
        """Write what `compared` (source, target) says the target lacks, through `write`
        (`always`: even when that is nothing); the fields haul has written now (the new base).
        A conflict a person decided (`haul resolve`) is settled as decided. Raises `Conflicted`
        for the conflicts the target keeps (naming `record`, if given)."""
        source, target = compared
        base = self.written.base(entity, source_id)
        decisions = self.decisions.decisions(entity, source_id) if self.decisions else {}
        changes, decided = with_decisions(
            diff_fields(source, base, target, self.written_as), decisions
        )
        if decided.carried or decided.kept:
            self.changes[(entity, "decided")] += 1
        names = list(changes.carried)
        if self.rule == "source-wins":
            for name, (ours, theirs) in changes.conflicts.items():
                self.written.overwrote(entity, source_id, name, ours, theirs)
            names += list(changes.conflicts)
        if names or always:
            await write(names)
        self._count(entity, changes, edited=bool(names) or always)
        written = base_after(source, base, changes, self.rule)
        if changes.conflicts and self.rule == "keep-target":
            message = conflict_message(changes, record, resolvable=True) + decided.stale_note()
            raise Conflicted(message, written, changes.conflicts)
        return written

    def _count(self, entity: str, changes: FieldChanges, *, edited: bool) -> None:
        if edited:
            self.changes[(entity, "updated")] += 1
        if changes.kept:
            self.changes[(entity, "kept in target")] += 1
        if changes.conflicts:
            what = "overwritten" if self.rule == "source-wins" else "conflict"
            self.changes[(entity, what)] += 1


def _kept_since(base: Any, target: Any) -> bool:
    """Whether the target still holds what haul wrote: the same value, or the same text but
    for its file ids (haul writes a text that shows files again once they are in the target,
    with their target ids: that is haul's own write, not a person's edit)."""
    if base == target:
        return True
    if isinstance(base, str) and isinstance(target, str):
        return without_file_ids(base) == without_file_ids(target)
    return False


def _value(fields: Mapping[str, Any], name: str) -> Any:
    value = fields.get(name)
    return None if value in ("", [], {}) else value


def _shown(value: Any, other: Any) -> str:
    """The value as a conflict names it: a long text from a little before where it first
    differs from the `other` side's (a page body differs far from its first line)."""
    if value is None:
        return "(empty)"
    if not isinstance(value, str) or len(value) <= SHOWN:
        return repr(value)
    start = max(0, _common_prefix(value, str(other or "")) - SHOWN // 4)
    part = value[start : start + SHOWN]
    return f"{'...' if start else ''}{part!r}... ({len(value)} characters)"


def _common_prefix(one: str, other: str) -> int:
    """How many characters two texts share from their start."""
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b),
                min(len(one), len(other)))  # fmt: skip
