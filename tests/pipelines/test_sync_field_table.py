"""The sync's field table and its three-way rule, read without I/O.

One table (`pipelines.tracker.issues.fields.ISSUE_FIELDS`) says how a later run carries each
field the first load's `_import` carries; the sandbox, faithful to the service, says which
fields its import takes and which its ordinary edit changes: the two must agree."""

from __future__ import annotations

from haul.pipelines.tracker.issues.fields import (
    ISSUE_FIELDS,
    Carry,
    FieldChanges,
    base_after,
    carry_of,
    diff_fields,
    why_differs,
)
from haul.sandbox.tracker.issues.editing import EDITED_FIELDS
from haul.sandbox.tracker.issues.import_fields import IMPORT_FIELDS


def test_every_field_the_import_takes_is_in_the_table() -> None:
    """No import field is carried by a later run without the table saying how."""
    assert set(IMPORT_FIELDS) == set(ISSUE_FIELDS)


def test_the_fields_carried_by_an_edit_are_those_the_edit_changes() -> None:
    """An edit changes each field the table carries by an edit (and the access list, which
    has its own record); what the table calls import-only, no edit changes."""
    by_edit = {name for name, carry in ISSUE_FIELDS.items() if carry is Carry.UPDATE}
    assert by_edit | {"access"} == EDITED_FIELDS
    only_import = {name for name, carry in ISSUE_FIELDS.items() if carry is Carry.IMPORT_ONLY}
    assert only_import == {"followingMaillists"} and not only_import & EDITED_FIELDS


def test_a_custom_field_is_carried_by_an_edit() -> None:
    assert carry_of("customerName") is Carry.UPDATE


def test_changed_at_the_source_only_is_carried_in_the_target_only_kept_on_both_a_conflict() -> None:
    base = {"summary": "a", "storyPoints": 3, "tags": ["x"], "field:budget": 1.0}
    source = {"summary": "b", "storyPoints": 3, "tags": ["x"], "field:budget": 2.0}
    target = {"summary": "a", "storyPoints": 5, "tags": ["x"], "field:budget": 9.0}

    changes = diff_fields(source, base, target)

    assert changes == FieldChanges(
        carried={"summary": "b"},
        kept={"storyPoints": 5},
        conflicts={"field:budget": (2.0, 9.0)},
    )


def test_both_sides_alike_is_no_change_and_every_empty_value_is_the_same() -> None:
    """A change both sides made alike (a write that landed before a crash) is settled; null,
    an empty string and an empty list are one empty value."""
    changes = diff_fields(
        {"summary": "b", "description": None, "components": []},
        {"summary": "a", "description": "", "components": None},
        {"summary": "b", "description": "", "components": []},
    )
    assert not changes


def test_without_a_base_the_source_is_carried() -> None:
    """A record written before haul kept bases: the source's value, as before."""
    changes = diff_fields({"summary": "b"}, None, {"summary": "a"})
    assert changes.carried == {"summary": "b"} and not changes.conflicts


def test_a_conflict_the_target_keeps_stays_one_until_settled() -> None:
    source, base = {"summary": "b", "storyPoints": 8}, {"summary": "a", "storyPoints": 3}
    changes = diff_fields(source, base, {"summary": "c", "storyPoints": 3})

    kept = base_after(source, base, changes, "keep-target")
    won = base_after(source, base, changes, "source-wins")

    assert kept == {"summary": "a", "storyPoints": 8}
    assert diff_fields(source, kept, {"summary": "c", "storyPoints": 8}).conflicts
    assert won == source


def test_verify_names_why_a_field_differs() -> None:
    base = {"summary": "a", "storyPoints": 3}
    assert why_differs("summary", "a", base, "edited") == "changed in the target"
    assert why_differs("summary", "b", base, "edited") == "changed on both sides"
    assert why_differs("summary", "b", base, "a") == ""  # the source's change never arrived
    assert why_differs("summary", "b", None, "edited") == ""
    assert why_differs("followingMaillists", ["x"], base, []) == "not updatable"
