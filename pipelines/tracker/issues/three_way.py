"""An issue's fields in one form for the source, the base and the target: what a later run
compares three ways (`sync.fields.diff_fields`) and what its edit sends; and `ThreeWay`, the
rule that settles every record a sync edits (issues, comments, worklogs).

The form is verify's (`TrackerVerifier`): people as target uids, dictionary values by key,
structure by name, estimates in milliseconds, custom fields as "field:<target key>". Only the
fields an ordinary edit carries and those no call can change (`sync.fields.ISSUE_FIELDS`) are
kept: status, access, the queue and the times have their own records and rules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from haul.pipelines.specs import Conflicted, Fields
from haul.pipelines.tracker.issues.verify import TrackerVerifier
from haul.pipelines.tracker.sync.fields import (
    ISSUE_FIELDS,
    Carry,
    ConflictRule,
    FieldChanges,
    base_after,
    body_key,
    carry_of,
    conflict_message,
    diff_fields,
    edit_value,
    updatable,
)
from haul.pipelines.tracker.transform import Transform
from haul.state.store import StagedRecord
from haul.state.written import Written

# what the edit sends for a dictionary field: its key (ids differ between orgs)
_KEYED = ("type", "priority")
_KEPT = (Carry.UPDATE, Carry.IMPORT_ONLY)


@dataclass(frozen=True)
class IssueForms:
    """The compared form of an issue's fields, on either side, and the edit that carries them."""

    verifier: TrackerVerifier
    transform: Transform

    def source(self, record: StagedRecord) -> Fields:
        """The staged issue's fields that a sync compares, as the load writes them (every
        field of the table present, empty ones as None)."""
        structure = self.transform.structure
        with structure.counting_nothing() if structure is not None else nullcontext():
            fields = self.verifier.issue_fields(record)
        named = {name: None for name, carry in ISSUE_FIELDS.items() if carry in _KEPT}
        return named | {
            name: value for name, value in fields.items() if carry_of(body_key(name)) in _KEPT
        }

    def target(self, found: Fields, wanted: Fields) -> Fields:
        """The target issue `found`'s fields that a sync compares (those `wanted` names)."""
        fields = self.verifier.target_fields(found, wanted)
        return {name: fields.get(name) for name in wanted}

    def edit(self, record: StagedRecord, source: Fields, names: list[str]) -> dict[str, Any]:
        """The edit body that sets the fields `names` to the source's values."""
        body = self.transform.issue_body(record.raw)
        edit: dict[str, Any] = {}
        for name in names:
            if not updatable(name):
                continue
            key = body_key(name)
            if key in _KEYED:
                edit[key] = {"key": source[name]} if source.get(name) else None
            else:
                edit[key] = edit_value(key, body.get(key))
        return edit


# writes the fields named (the source's values) to the target record
FieldWriter = Callable[[list[str]], Awaitable[object]]


@dataclass
class ThreeWay:
    """One rule for every record a sync edits (an issue's fields, a comment's text, a
    worklog's duration and note): source, base and target compared field by field
    (`sync.fields.diff_fields`), what changed only at the source written, a conflict settled
    by `[sync] conflicts`; the run's changes counted per entity."""

    written: Written
    rule: ConflictRule
    changes: Counter[tuple[str, str]]

    async def settle(
        self,
        entity: str,
        source_id: str,
        compared: tuple[Fields, Fields],
        write: FieldWriter,
        *,
        always: bool = False,
    ) -> Fields:
        """Write what `compared` (source, target) says the target lacks, through `write`
        (`always`: even when that is nothing); the fields haul has written now (the new base).
        Raises `Conflicted` for the conflicts the target keeps."""
        source, target = compared
        base = self.written.base(entity, source_id)
        changes = diff_fields(source, base, target)
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
            raise Conflicted(conflict_message(changes), written)
        return written

    def _count(self, entity: str, changes: FieldChanges, *, edited: bool) -> None:
        if edited:
            self.changes[(entity, "updated")] += 1
        if changes.kept:
            self.changes[(entity, "kept in target")] += 1
        if changes.conflicts:
            what = "overwritten" if self.rule == "source-wins" else "conflict"
            self.changes[(entity, what)] += 1
