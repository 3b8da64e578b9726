"""Which issue fields a later run carries, and how: one table for the first load and the sync.

The first load writes an issue through `_import`, whose body `Transform.issue_body` builds; a
later run carries a change through the calls the API offers. `ISSUE_FIELDS` says, for every key
that body can hold, how a later run carries it (any other key is a custom field, global or
queue-local, carried by an ordinary edit like the fields named `UPDATE`):

    UPDATE       an ordinary edit (PATCH /issues/{key}); compared three ways (below)
    TRANSITION   status and resolution: through the target's own workflow (`sync.statuses`)
    ACCESS       the access list: its own ledger record, narrowed, failing closed (`issue_access`)
    MOVE         the queue and the key: moved in the target (`sync.moves`)
    IDENTITY     what the issue was made with and never changes (creation, `unique`)
    OWN_TIME     each side's own time of a change
    IMPORT_ONLY  the import sets it and no update call changes it: a change at the source is
                 counted per field and named, and verify names it as a known difference

Three ways, per field (`diff_fields`): haul keeps, for each issue it wrote, the fields as it wrote
them (the base, `state.written`); a field changed only at the source is carried, one changed
only in the target is kept, one changed on both sides is a conflict. Values are compared in
one form for both sides (`issues.three_way` builds it): plain values, no I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

CUSTOM = "field:"  # a custom field's compared name: "field:<its target key>"
ConflictRule = Literal["keep-target", "source-wins"]


class Carry(Enum):
    """How a later run carries one field of an imported issue (see the module docstring)."""

    UPDATE = "update"
    TRANSITION = "transition"
    ACCESS = "access"
    MOVE = "move"
    IDENTITY = "identity"
    OWN_TIME = "own time"
    IMPORT_ONLY = "import only"


_UPDATE_FIELDS = (
    *("summary", "description", "tags", "assignee", "followers", "type", "priority"),
    *("components", "fixVersions", "affectedVersions", "sprint"),
    *("deadline", "start", "end", "storyPoints"),
    *("originalEstimation", "estimation", "spent", "votedBy", "favoritedBy"),
)
ISSUE_FIELDS: dict[str, Carry] = {
    **dict.fromkeys(_UPDATE_FIELDS, Carry.UPDATE),
    **dict.fromkeys(("status", "resolution"), Carry.TRANSITION),
    "access": Carry.ACCESS,
    **dict.fromkeys(("queue", "key"), Carry.MOVE),
    **dict.fromkeys(("createdAt", "createdBy", "unique"), Carry.IDENTITY),
    **dict.fromkeys(("updatedAt", "updatedBy", "resolvedAt", "resolvedBy"), Carry.OWN_TIME),
    "followingMaillists": Carry.IMPORT_ONLY,  # the edit ignores it: mail lists follow by hand
}
# what an edit sends to empty a field; a field not named here is emptied with null
_EMPTY: dict[str, Any] = {"description": "", "tags": [], "followers": []}


def edit_value(key: str, value: Any) -> Any:
    """What an edit sends for the body's `key` holding `value` (empty: what empties it)."""
    return _EMPTY.get(key) if value is None else value


def carry_of(body_key: str) -> Carry:
    """How a later run carries the import body's `body_key` (a custom field: an edit)."""
    return ISSUE_FIELDS.get(body_key, Carry.UPDATE)


def compared_name(body_key: str) -> str:
    """The name a field is compared under: its own, or "field:<key>" for a custom field."""
    return body_key if body_key in ISSUE_FIELDS else f"{CUSTOM}{body_key}"


def body_key(name: str) -> str:
    """The import and edit body's key of a compared field."""
    return name.removeprefix(CUSTOM)


def updatable(name: str) -> bool:
    """Whether the compared field `name` is carried by an ordinary edit (three ways)."""
    return carry_of(body_key(name)) is Carry.UPDATE


def import_only(names: Mapping[str, Any]) -> list[str]:
    """The fields among `names` that no update call can change."""
    return sorted(name for name in names if carry_of(body_key(name)) is Carry.IMPORT_ONLY)


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


def diff_fields(
    source: Mapping[str, Any], base: Mapping[str, Any] | None, target: Mapping[str, Any]
) -> FieldChanges:
    """Compare each field of the source, the base (what haul last wrote, None when it kept
    none: then the source's value is carried, as before three-way sync) and the target.

    An absent field, null, an empty string or list are the same empty value."""
    changes = FieldChanges()
    for name in sorted({*source, *(base or {}), *target}):
        ours, theirs = _value(source, name), _value(target, name)
        if ours == theirs:
            continue
        if base is None or theirs == _value(base, name):
            changes.carried[name] = ours
        elif ours == _value(base, name):
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


def conflict_message(changes: FieldChanges) -> str:
    """The conflicts the target kept, each with both values, and how to settle them."""
    named = "; ".join(
        f"{name}: source {_shown(ours)}, target {_shown(theirs)}"
        for name, (ours, theirs) in changes.conflicts.items()
    )
    return (
        f"changed on both sides, the target keeps its value: {named} (make both sides agree,"
        ' or set [sync] conflicts = "source-wins"; then run haul load again)'
    )


def same(one: Any, other: Any) -> bool:
    """Whether two values of a field are alike (every empty value is the same)."""
    return bool(_value({"v": one}, "v") == _value({"v": other}, "v"))


def why_differs(name: str, source: Any, base: Mapping[str, Any] | None, target: Any) -> str:
    """Why the target's `target` differs from the source's `source` for field `name`, given
    the base: "changed in the target", "changed on both sides", "not updatable" (a field no
    update call changes), or "" when the base does not tell (no base: a loss)."""
    if carry_of(body_key(name)) is Carry.IMPORT_ONLY:
        return "not updatable"
    if base is None or name not in base or not updatable(name):
        return ""
    if same(target, base.get(name)):
        return ""  # the target holds what haul wrote: the source's change is not carried
    return "changed in the target" if same(source, base.get(name)) else "changed on both sides"


def _value(fields: Mapping[str, Any], name: str) -> Any:
    value = fields.get(name)
    return None if value in ("", [], {}) else value


def _shown(value: Any) -> str:
    return "(empty)" if value is None else repr(value)
