"""An issue's fields in one form for the source, the base and the target: what a later run
compares three ways (`sync.fields.diff_fields`) and what its edit sends; `ThreeWay`, the rule
that settles every record a sync edits, is every service's (`pipelines.sync.three_way`).

The form is verify's (`TrackerVerifier`): people as target uids, dictionary values by key,
structure by name, estimates in milliseconds, custom fields as "field:<target key>". Only the
fields an ordinary edit carries and those no call can change (`sync.fields.ISSUE_FIELDS`) are
kept: status, access, the queue and the times have their own records and rules.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from haul.pipelines.specs import Fields
from haul.pipelines.sync.three_way import ThreeWay
from haul.pipelines.tracker.issues.verify import TrackerVerifier
from haul.pipelines.tracker.sync.fields import (
    ISSUE_FIELDS,
    Carry,
    body_key,
    carry_of,
    edit_value,
    updatable,
)
from haul.pipelines.tracker.transform import Transform
from haul.state.store import StagedRecord

__all__ = ["IssueForms", "ThreeWay"]

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
