"""How an edited checklist is replayed: the fewest writes that turn the target's items into
the source's (`pipelines.tracker.children.checklist_sync.checklist_edits`)."""

from __future__ import annotations

from typing import Any

from haul.pipelines.tracker.children.checklist_sync import checklist_edits


def _target(*texts: str) -> list[dict[str, Any]]:
    return [{"id": f"t{n}", "text": text, "checked": False} for n, text in enumerate(texts)]


def _source(*texts: str) -> list[dict[str, Any]]:
    return [{"text": text, "checked": False} for text in texts]


def test_an_item_removed_at_the_source_is_removed_and_the_rest_stay() -> None:
    edits = checklist_edits(_target("a", "b", "c", "d"), _source("a", "c", "d"))
    assert (edits.edit, edits.add, edits.remove) == ([], [], ["t1"])


def test_an_edit_a_removal_and_an_addition_take_one_write_each() -> None:
    edits = checklist_edits(_target("a", "b", "c"), _source("a2", "c", "new"))
    assert edits.edit == [("t0", {"text": "a2", "checked": False})]
    assert edits.add == [{"text": "new", "checked": False}] and edits.remove == ["t1"]
    assert edits.described() == "1 item edited, 1 item added, 1 item removed"


def test_a_done_flag_is_an_edit_and_a_same_list_is_no_change() -> None:
    done = [{"text": "a", "checked": True}]
    assert checklist_edits(_target("a"), done).edit == [("t0", done[0])]
    assert checklist_edits(_target("a", "b"), _source("a", "b")).empty


def test_an_item_inserted_mid_list_is_carried_by_position() -> None:
    """The API appends and cannot insert: the items after it are edited, the last added."""
    edits = checklist_edits(_target("a", "c"), _source("a", "b", "c"))
    assert edits.edit == [("t1", {"text": "b", "checked": False})]
    assert edits.add == [{"text": "c", "checked": False}] and not edits.remove
