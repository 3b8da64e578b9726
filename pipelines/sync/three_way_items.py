"""The three-way rule for a list of items that has no identity of its own (a checklist's
items, a grid's rows): each item settled at its grain against the base (`pipelines.sync.three_way`).

The base of such a list is, per source item, the target item haul wrote for it: its target id
and its compared fields (`Base`: source id -> {"id", "fields"}). `settle_items` compares the
source's items, the base and the target's listing:

    new at the source              appended; or, when the target holds one that reads the same
                                   and is no other item's, taken as it is (a lost reply's append)
    in the base, in the target     its fields three ways: carried, kept or in conflict
    in the base, not in the target deleted by a person: stays deleted, unless the source changed
                                   it too (a conflict; source-wins appends it again)
    in the base, not at the source removed at the source: deleted, unless a person changed it
                                   in the target (a conflict; source-wins deletes it)
    in the target only             added by a person: the target's, never deleted

Plain values, no I/O: each service writes what the settling says and reads back the ids of the
items it appended (`appended_base`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from haul.pipelines.specs import Fields
from haul.pipelines.sync.three_way import (
    ConflictRule,
    FieldChanges,
    ThreeWay,
    base_after,
    diff_fields,
)

Item = dict[str, Any]
Base = dict[str, Item]  # a source item's id -> {"id": its target id, "fields": as written}
SourceItem = tuple[str, Item]  # (the source item's id, the body the target should hold)
ItemFields = Callable[[Item], Fields]  # an item's compared fields


@dataclass
class ItemSettling:
    """What one run does to a list's items, and the base it leaves. `conflicts`: per item and
    field, (the source's, the target's); `overwritten`: those a source-wins run writes over,
    (name, the source's, the target's)."""

    edit: list[tuple[str, Fields]] = field(default_factory=list)  # (target id, fields to set)
    add: list[SourceItem] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)  # target ids
    base: Base = field(default_factory=dict)  # the appended items' ids come after their write
    kept: int = 0  # items whose change in the target is kept
    conflicts: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    overwritten: list[tuple[str, Any, Any]] = field(default_factory=list)

    @property
    def writes(self) -> bool:
        return bool(self.edit or self.add or self.remove)


@dataclass(frozen=True)
class ItemRule:
    """How one kind of list is compared: a target item's fields (`fields`) and a source
    body's (`compared`; the same function when not given), what an item is called in a
    conflict ("item", "row"), and `[sync] conflicts`."""

    fields: ItemFields
    noun: str
    rule: ConflictRule
    compared: ItemFields | None = None

    def ours(self, body: Item) -> Fields:
        return (self.compared or self.fields)(body)

    @property
    def wins(self) -> bool:
        return self.rule == "source-wins"


def settle_items(
    source: Sequence[SourceItem], base: Base, target: Sequence[Item], how: ItemRule
) -> ItemSettling:
    """The source's items against the base and the target's listing, item by item."""
    settling = ItemSettling()
    listed = {str(item["id"]): item for item in target}
    claimed = {str(old["id"]) for old in base.values()}
    for position, item in enumerate(source, start=1):
        old = base.get(item[0])
        if old is None:
            _new_at_source(settling, item, target, claimed, how)
            continue
        there = listed.get(str(old["id"]))
        theirs = None if there is None else how.fields(there)
        _settle_item(settling, f"{how.noun} {position}", item, old, theirs, how)
    staged = {source_id for source_id, _ in source}
    for source_id, old in base.items():
        if source_id not in staged:
            there = listed.get(str(old["id"]))
            _removed_at_source(settling, source_id, old, None if there is None else how.fields(there), how)  # fmt: skip
    return settling


def _new_at_source(
    settling: ItemSettling,
    item: SourceItem,
    target: Sequence[Item],
    claimed: set[str],
    how: ItemRule,
) -> None:
    source_id, ours = item[0], how.ours(item[1])
    same = (i for i in target if str(i["id"]) not in claimed and how.fields(i) == ours)
    found = next(same, None)
    if found is None:
        settling.add.append(item)
        return
    claimed.add(str(found["id"]))
    settling.base[source_id] = {"id": str(found["id"]), "fields": ours}


def _settle_item(
    settling: ItemSettling,
    name: str,
    item: SourceItem,
    old: Item,
    theirs: Fields | None,
    how: ItemRule,
) -> None:
    source_id, body = item
    ours, written = how.ours(body), old["fields"]
    gone = dict.fromkeys(ours)  # a deleted item: every field empty
    changes = diff_fields(ours, written, gone if theirs is None else theirs)
    _note(settling, name, changes, how)
    if theirs is None:
        if changes.conflicts and how.wins:
            settling.add.append(item)
        else:
            settling.base[source_id] = old  # deleted in the target: the target's
        return
    names = [*changes.carried, *(changes.conflicts if how.wins else ())]
    if names:
        settling.edit.append((str(old["id"]), {n: body.get(n) for n in names}))
    after = base_after(ours, written, changes, how.rule)
    settling.base[source_id] = {"id": str(old["id"]), "fields": after}


def _removed_at_source(
    settling: ItemSettling, source_id: str, old: Item, theirs: Fields | None, how: ItemRule
) -> None:
    if theirs is None:
        return  # gone on both sides
    name = f"{how.noun} {_label(old['fields'])} (removed at the source)"
    if theirs == old["fields"] or how.wins:
        settling.remove.append(str(old["id"]))
        if theirs != old["fields"]:
            settling.overwritten.append((name, None, theirs))
        return
    settling.conflicts[name] = (None, theirs)
    settling.base[source_id] = old


def _note(settling: ItemSettling, name: str, changes: FieldChanges, how: ItemRule) -> None:
    if changes.kept:
        settling.kept += 1
    for field_name, both in changes.conflicts.items():
        if how.wins:
            settling.overwritten.append((f"{name} {field_name}", *both))
        else:
            settling.conflicts[f"{name} {field_name}"] = both


def _label(fields: Fields) -> str:
    """An item named by its first non-empty field ("'Buy milk'")."""
    return next((repr(value) for value in fields.values() if value not in (None, "")), "(empty)")


def appended_base(
    base: Base, added: Sequence[SourceItem], listed: Sequence[Item], how: ItemRule
) -> Base:
    """`base` with the appended items' target ids: the last ones listed that no item of the
    base holds, in the order they were appended."""
    held = {str(old["id"]) for old in base.values()}
    fresh = [item for item in listed if str(item["id"]) not in held]
    made = fresh[-len(added) :] if added else []
    after = dict(base)
    for (source_id, body), item in zip(added, made, strict=False):
        after[source_id] = {"id": str(item["id"]), "fields": how.ours(body)}
    return after


def paired_base(source: Sequence[SourceItem], listed: Sequence[Item], how: ItemRule) -> Base:
    """The base of a list the target holds as the source's items (the last ones listed, in
    order): what a first load, or a replay with no base, leaves."""
    held = listed[-len(source) :] if source else []
    return {
        source_id: {"id": str(item["id"]), "fields": how.ours(body)}
        for (source_id, body), item in zip(source, held, strict=False)
    }


def count_settling(three_way: ThreeWay, entity: str, settling: ItemSettling) -> None:
    """The run's changes of one list, counted once per list (updated, kept, in conflict,
    overwritten)."""
    counted = [
        (settling.writes, "updated"),
        (settling.kept, "kept in target"),
        (settling.conflicts, "conflict"),
        (settling.overwritten, "overwritten"),
    ]
    for happened, what in counted:
        if happened:
            three_way.changes[(entity, what)] += 1
