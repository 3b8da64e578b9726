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
conflict, settled by `[sync] conflicts` like an issue's field (`pipelines.three_way`). An item
added at the source is appended (or, when the target already holds one that reads the same and
is no other item's, taken as it: an append whose reply was lost); an item the source removed is
deleted unless a person edited it in the target; an item added in the target is the target's,
never deleted. A checklist written before three-way sync (no base) is replayed as above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from haul.connectors.errors import AmbiguousWriteError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import Conflicted, Fields, RecordFailure
from haul.pipelines.three_way import (
    ConflictRule,
    FieldChanges,
    ThreeWay,
    base_after,
    conflict_message,
    diff_fields,
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


# -- three ways, per item -----------------------------------------------------------------

ENTITY = "checklist"
Base = dict[str, Item]  # a source item's id -> {"id": its target id, "text", "checked"}
SourceItem = tuple[str, Item]  # (the source item's id, the body the target should hold)


def source_items(staged: Sequence[Item], bodies: Sequence[Item]) -> list[SourceItem]:
    """The staged items (`staged`, as the source lists them) with their target bodies."""
    return [(str(item.get("id") or f"#{n}"), body) for n, (item, body) in enumerate(zip(staged, bodies, strict=True))]  # fmt: skip


def _fields(item: Item | None) -> Item:
    """What three ways compare of an item (a missing one: nothing)."""
    if item is None:
        return {"text": None, "checked": None}
    return {"text": item.get("text"), "checked": bool(item.get("checked"))}


@dataclass
class ItemSettling:
    """What one run does to a checklist's items, and the base it leaves (see `settle_items`).
    `conflicts`: per item, (the source's, the target's) of each field changed on both sides;
    `overwritten`: those a source-wins run writes over, (name, source's, target's)."""

    edit: list[tuple[str, Item]] = field(default_factory=list)  # (target id, fields to set)
    add: list[SourceItem] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)  # target ids
    base: Base = field(default_factory=dict)  # the added items' ids come after their write
    kept: int = 0  # items whose change in the target is kept
    conflicts: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    overwritten: list[tuple[str, Any, Any]] = field(default_factory=list)

    @property
    def writes(self) -> bool:
        return bool(self.edit or self.add or self.remove)


def settle_items(
    source: Sequence[SourceItem], base: Base, target: Sequence[Item], rule: ConflictRule
) -> ItemSettling:
    """The source's items against the base and the target's listing, item by item."""
    settling = ItemSettling()
    listed = {str(item["id"]): item for item in target}
    claimed = {str(old["id"]) for old in base.values()}
    for position, (source_id, body) in enumerate(source, start=1):
        old = base.get(source_id)
        if old is None:
            _new_at_source(settling, source_id, body, target, claimed)
        else:
            there = listed.get(str(old["id"]))
            _settle_item(settling, f"item {position}", (source_id, body), old, there, rule)
    staged = {source_id for source_id, _ in source}
    for source_id, old in base.items():
        if source_id not in staged:
            _removed_at_source(settling, source_id, old, listed.get(str(old["id"])), rule)
    return settling


def _new_at_source(
    settling: ItemSettling, source_id: str, body: Item, target: Sequence[Item], claimed: set[str]
) -> None:
    """Appended, or taken as it is where the target holds the same item that is no other's."""
    same = (i for i in target if str(i["id"]) not in claimed and _fields(i) == _fields(body))
    found = next(same, None)
    if found is None:
        settling.add.append((source_id, body))
        return
    claimed.add(str(found["id"]))
    settling.base[source_id] = {"id": str(found["id"]), **_fields(body)}


def _settle_item(
    settling: ItemSettling,
    name: str,
    item: SourceItem,
    old: Item,
    there: Item | None,
    rule: ConflictRule,
) -> None:
    """One item both sides had: its text and flag three ways; deleted in the target, it stays
    deleted unless the source edited it too (a conflict: source-wins appends it again)."""
    source_id, body = item
    changes = diff_fields(_fields(body), _fields(old), _fields(there))
    wins = rule == "source-wins"
    _note(settling, name, changes, wins)
    after = base_after(_fields(body), _fields(old), changes, rule)
    if there is None:
        if changes.conflicts and wins:
            settling.add.append(item)
        else:
            settling.base[source_id] = old  # deleted in the target: the target's
        return
    names = [*changes.carried, *(changes.conflicts if wins else ())]
    if names:
        settling.edit.append((str(old["id"]), {n: body[n] for n in names}))
    settling.base[source_id] = {"id": str(old["id"]), **after}


def _removed_at_source(
    settling: ItemSettling, source_id: str, old: Item, there: Item | None, rule: ConflictRule
) -> None:
    """Deleted, unless a person edited it in the target (a conflict; source-wins deletes)."""
    if there is None:
        return  # gone on both sides
    if _fields(there) == _fields(old) or rule == "source-wins":
        settling.remove.append(str(old["id"]))
        if _fields(there) != _fields(old):
            settling.overwritten.append((f"item {old.get('text')!r}", None, _fields(there)))
        return
    settling.conflicts[f"item {old.get('text')!r} (removed at the source)"] = (None, _fields(there))
    settling.base[source_id] = old


def _note(settling: ItemSettling, name: str, changes: FieldChanges, wins: bool) -> None:
    if changes.kept:
        settling.kept += 1
    for field_name, both in changes.conflicts.items():
        if wins:
            settling.overwritten.append((f"{name} {field_name}", *both))
        else:
            settling.conflicts[f"{name} {field_name}"] = both


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
        settling = settle_items(source, base, listed, three_way.rule)
        try:
            await _write_items(client, key, settling)
        except AmbiguousWriteError as exc:  # the next turn reads what it did
            uncertain = str(exc)
            continue
        return await _settled(client, where, settling, three_way)
    raise RecordFailure(f"the checklist of {key} stayed uncertain after lost replies: {uncertain}")


async def _write_items(client: TrackerClient, key: str, settling: ItemSettling) -> None:
    for item_id, fields in settling.edit:
        await client.update_checklist_item(key, item_id, fields)
    if settling.add:
        await client.add_checklist_items(key, [body for _, body in settling.add])
    for item_id in settling.remove:
        await client.delete_record(key, "checklistItems", item_id)


async def _settled(
    client: TrackerClient, where: tuple[str, str], settling: ItemSettling, three_way: ThreeWay
) -> Fields:
    """Count what the run did, record what it overwrote, and the new base: the appended
    items' target ids read back (the last ones listed that no other item holds)."""
    key, record_id = where
    for name, ours, theirs in settling.overwritten:
        three_way.written.overwrote(ENTITY, record_id, name, ours, theirs)
    base = dict(settling.base)
    if settling.add:
        held = {str(old["id"]) for old in base.values()}
        fresh = [i for i in await client.list_checklist(key) if str(i["id"]) not in held]
        for (source_id, body), made in zip(settling.add, fresh[-len(settling.add) :], strict=False):
            base[source_id] = {"id": str(made["id"]), **_fields(body)}
    _count(three_way, settling)
    written = {"items": base}
    if settling.conflicts:
        changes = FieldChanges(conflicts=settling.conflicts)
        raise Conflicted(conflict_message(changes), written)
    return written


def _count(three_way: ThreeWay, settling: ItemSettling) -> None:
    counted = [
        (settling.writes, "updated"),
        (settling.kept, "kept in target"),
        (settling.conflicts, "conflict"),
        (settling.overwritten, "overwritten"),
    ]
    for happened, what in counted:
        if happened:
            three_way.changes[(ENTITY, what)] += 1


async def checklist_base(client: TrackerClient, key: str, source: list[SourceItem]) -> Fields:
    """The base of a checklist the target holds as the source's items (the last ones listed,
    in order): what a first load, or a replay with no base, leaves."""
    listed = await client.list_checklist(key)
    held = listed[-len(source) :] if source else []
    return {
        "items": {
            source_id: {"id": str(made["id"]), **_fields(body)}
            for (source_id, body), made in zip(source, held, strict=False)
        }
    }
