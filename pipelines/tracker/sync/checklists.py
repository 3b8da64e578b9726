"""A checklist edited at the source, replayed in the target item by item.

A checklist has no identity of its own (it is the issue's items, in order), so an edit is
carried by comparing the staged items with what the target lists now: items the source
removed are deleted, the rest paired position by position: an item whose text or done flag
differs is edited in place (PATCH, its id kept), items the source added are appended in one
request (the API appends; it cannot insert). Every step is
decided from the target's listing read just before, so a run killed half way and run again
sends only what is still missing: nothing is written twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from haul.connectors.errors import AmbiguousWriteError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import RecordFailure

Item = dict[str, Any]
ATTEMPTS = 3  # lists read, each followed by the writes it still shows missing


def _shown(item: Item) -> tuple[Any, bool]:
    """What a person sees of an item: its text and whether it is done."""
    return item.get("text"), bool(item.get("checked"))


@dataclass(frozen=True)
class ChecklistEdits:
    """What it takes to turn the target's checklist into the source's."""

    edit: list[tuple[str, Item]]  # (target item id, the source's item)
    add: list[Item]
    remove: list[str]  # target item ids

    @property
    def empty(self) -> bool:
        return not (self.edit or self.add or self.remove)

    def described(self) -> str:
        """In words, for the plan: "1 item edited, 2 added"."""
        parts = [
            (len(self.edit), "edited"),
            (len(self.add), "added"),
            (len(self.remove), "removed"),
        ]
        return ", ".join(f"{n} item{'s' * (n != 1)} {what}" for n, what in parts if n)


def checklist_edits(have: Sequence[Item], wanted: Sequence[Item]) -> ChecklistEdits:
    """The items only the target holds where the rest lines up (a removal at the source)
    are removed; the others are paired position by position: edited where both have an item,
    added or removed past the end of the shorter list (the API appends, it cannot insert)."""
    gone = _removed(have, wanted)
    kept = [item for index, item in enumerate(have) if index not in gone]
    pairs = zip(kept, wanted, strict=False)
    return ChecklistEdits(
        edit=[(str(old["id"]), new) for old, new in pairs if _shown(old) != _shown(new)],
        add=list(wanted[len(kept) :]),
        remove=[str(have[index]["id"]) for index in sorted(gone)]
        + [str(old["id"]) for old in kept[len(wanted) :]],
    )


def _removed(have: Sequence[Item], wanted: Sequence[Item]) -> set[int]:
    """Positions in `have` of the items the source dropped: a block of the target's items
    with fewer (or no) counterparts at the source loses its last ones."""
    matcher = SequenceMatcher(None, [_shown(i) for i in have], [_shown(i) for i in wanted])
    gone: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace") and i2 - i1 > j2 - j1:
            gone.update(range(i1 + (j2 - j1), i2))
    return gone


async def replay_checklist(client: TrackerClient, key: str, wanted: list[Item]) -> bool:
    """Bring the target issue's checklist to `wanted`; True if anything was written. A write
    whose reply was lost is settled by reading the list again: what it did is not sent twice."""
    wrote, uncertain = False, ""
    for _ in range(ATTEMPTS):
        edits = checklist_edits(await client.list_checklist(key), wanted)
        if edits.empty:
            return wrote
        wrote = True
        try:
            await _apply(client, key, edits)
        except AmbiguousWriteError as exc:  # the next turn reads what it did
            uncertain = str(exc)
            continue
        return True
    raise RecordFailure(f"the checklist of {key} stayed uncertain after lost replies: {uncertain}")


async def _apply(client: TrackerClient, key: str, edits: ChecklistEdits) -> None:
    for item_id, item in edits.edit:
        await client.update_checklist_item(key, item_id, item)
    if edits.add:
        await client.add_checklist_items(key, edits.add)
    for item_id in edits.remove:
        await client.delete_record(key, "checklistItems", item_id)
