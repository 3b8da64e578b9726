"""A checklist edited at the source, replayed in the target item by item, three ways.

A checklist has no identity of its own (it is the issue's items, in order), so an edit is
carried by comparing the staged items with what the target lists now: items the source
removed are deleted, the rest paired position by position: an item whose text or done flag
differs is edited in place (PATCH, its id kept), items the source added are appended in one
request (the API appends; it cannot insert). Every step is
decided from the target's listing read just before, so a run killed half way and run again
sends only what is still missing: nothing is written twice.

Three ways, per item (`settle_items`): haul keeps, for each checklist it wrote, each source
item's target id with its text and done flag as written (the base, `state.written`). An item
edited only at the source is edited in the target; one edited (or deleted) only in the target
is kept; one edited on both sides, or edited on one side and deleted on the other, is a
conflict, settled by `[sync] conflicts` like an issue's field (`pipelines.sync.three_way`). An item
added at the source is appended (or, when the target already holds one that reads the same and
is no other item's, taken as it: an append whose reply was lost); an item the source removed is
deleted unless a person edited it in the target; an item added in the target is the target's,
never deleted. A checklist written before three-way sync (no base) is replayed as above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from haul.connectors.errors import AmbiguousWriteError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import Conflicted, Fields, RecordFailure
from haul.pipelines.sync.three_way import ConflictRule, FieldChanges, ThreeWay, conflict_message
from haul.pipelines.sync.three_way_items import (
    Base,
    ItemRule,
    ItemSettling,
    SourceItem,
    appended_base,
    count_settling,
    paired_base,
    settle_items,
)

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


# -- three ways, per item (`pipelines.sync.three_way_items`) ----------------------------------

ENTITY = "checklist"


def source_items(staged: Sequence[Item], bodies: Sequence[Item]) -> list[SourceItem]:
    """The staged items (`staged`, as the source lists them) with their target bodies."""
    pairs = enumerate(zip(staged, bodies, strict=True))
    return [(str(item.get("id") or f"#{n}"), body) for n, (item, body) in pairs]


def item_fields(item: Item) -> Fields:
    """What three ways compare of an item: its text and whether it is done."""
    return {"text": item.get("text"), "checked": bool(item.get("checked"))}


def item_rule(rule: ConflictRule) -> ItemRule:
    """A checklist's items: compared by text and done flag."""
    return ItemRule(item_fields, "item", rule)


async def settle_checklist(
    client: TrackerClient, where: tuple[str, str], source: list[SourceItem], base: Base,
    three_way: ThreeWay,
) -> Fields:  # fmt: skip
    """Carry the source's items to the target issue `key` three ways; the new base. Every step
    is decided from the listing read just before it, so a lost reply (or a run killed half way)
    is settled by reading again. Raises `Conflicted` for the items the target keeps.
    `where`: the target issue's key and the checklist's source id."""
    key, uncertain = where[0], ""
    for _ in range(ATTEMPTS):
        listed = await client.list_checklist(key)
        settling = settle_items(source, base, listed, item_rule(three_way.rule))
        try:
            appended = await _write_items(client, key, settling)
        except AmbiguousWriteError as exc:  # the next turn reads what it did
            uncertain = str(exc)
            continue
        return _settled(where, settling, appended, three_way)
    raise RecordFailure(f"the checklist of {key} stayed uncertain after lost replies: {uncertain}")


async def _write_items(
    client: TrackerClient, key: str, settling: ItemSettling
) -> list[Item] | None:
    """Edit, append (one request for every added item), delete; the list the append's reply
    holds (None when nothing was appended)."""
    for item_id, fields in settling.edit:
        await client.update_checklist_item(key, item_id, fields)
    appended = None
    if settling.add:
        reply = await client.add_checklist_items(key, [fields for _, fields in settling.add])
        appended = await listed_after_append(client, key, reply)
    for item_id in settling.remove:
        await client.delete_record(key, "checklistItems", item_id)
    return appended


def _settled(
    where: tuple[str, str], settling: ItemSettling, appended: list[Item] | None,
    three_way: ThreeWay,
) -> Fields:  # fmt: skip
    """Count what the run did, record what it overwrote, and the new base (the appended
    items' target ids as the append's reply lists them)."""
    record_id = where[1]
    for name, ours, theirs in settling.overwritten:
        three_way.written.overwrote(ENTITY, record_id, name, ours, theirs)
    base = settling.base
    if settling.add and appended is not None:
        base = appended_base(base, settling.add, appended, item_rule(three_way.rule))
    count_settling(three_way, ENTITY, settling)
    written = {"items": base}
    if settling.conflicts:
        raise Conflicted(conflict_message(FieldChanges(conflicts=settling.conflicts)), written)
    return written


async def checklist_base(
    client: TrackerClient, key: str, source: list[SourceItem], listed: list[Item] | None = None
) -> Fields:
    """The base of a checklist the target holds as the source's items: as `listed` (an
    append's reply) or, without it, as the target lists them now."""
    if listed is None:
        listed = await client.list_checklist(key)
    return {"items": paired_base(source, listed, item_rule("keep-target"))}


async def listed_after_append(client: TrackerClient, key: str, reply: Item) -> list[Item]:
    """The issue's items after an append: its reply is the issue with its `checklistItems`
    (reference/live-replies/tracker/checklists/create.json), so none is read back unless a
    reply lacks them."""
    items = reply.get("checklistItems")
    if isinstance(items, list) and all(isinstance(item, dict) and "id" in item for item in items):
        return items
    return await client.list_checklist(key)
