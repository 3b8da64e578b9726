"""A macro's field changes as the v3 reference writes them, a transition's status by key."""

from __future__ import annotations

import pytest

from haul.pipelines.tracker.planning.rule_forms import status_by_key, written

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_macros_field_changes_are_written_as_issue_update() -> None:
    """Each field's operators under its id (a read's `value` is a set), a field named twice
    keeps them all; a trigger is written as it is."""
    read = {
        "name": "Triage",
        "body": None,
        "fieldChanges": [
            {"field": "tags", "add": ["triage"]},
            {"field": "tags", "remove": ["new"]},
            {"field": "resolution", "value": None},
            {"field": "assignee", "set": "alice"},
        ],
    }
    assert written("macro", read) == {
        "name": "Triage",
        "body": None,
        "issueUpdate": {
            "tags": {"add": ["triage"], "remove": ["new"]},
            "resolution": {"set": None},
            "assignee": {"set": "alice"},
        },
    }
    trigger = {"name": "t", "actions": [{"type": "Transition", "status": "open"}]}
    assert written("trigger", trigger) == trigger


def test_a_transition_names_its_status_by_key() -> None:
    reference = {"self": "https://x/v3/statuses/12", "id": "12", "key": "open", "display": "Open"}
    assert status_by_key({"type": "Transition", "status": reference}) == {
        "type": "Transition",
        "status": "open",
    }
    other = {"type": "CreateComment", "text": "hi"}
    assert status_by_key(other) == other
