"""Which issue fields a later run carries, and how: one table for the first load and the sync.

The first load writes an issue through `_import`, whose body `Transform.issue_body` builds; a
later run carries a change through the calls the API offers. `ISSUE_FIELDS` says, for every key
that body can hold, how a later run carries it (any other key is a custom field, global or
queue-local, carried by an ordinary edit like the fields named `UPDATE`):

    UPDATE       an ordinary edit (PATCH /issues/{key}); compared three ways (below)
    TRANSITION   status and resolution: through the target's own workflow (`statuses`)
    ACCESS       the access list: its own ledger record, narrowed, failing closed (`issue_access`)
    MOVE         the queue and the key: moved in the target (`record.move_in_target`)
    IDENTITY     what the issue was made with and never changes (creation, `unique`)
    OWN_TIME     each side's own time of a change
    IMPORT_ONLY  the import sets it and no update call changes it: a change at the source is
                 counted per field and named, and verify names it as a known difference

Three ways, per field (`diff_fields`): haul keeps, for each issue it wrote, the fields as it wrote
them (the base, `state.written`); a field changed only at the source is carried, one changed
only in the target is kept, one changed on both sides is a conflict. Values are compared in
one form for both sides (`verify.IssueForms` builds it); the rule itself is every record's
(`pipelines.sync.three_way`).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from haul.pipelines.sync.three_way import (
    ConflictRule,
    FieldChanges,
    WrittenAs,
    base_after,
    conflict_message,
    diff_fields,
    same,
)

__all__ = ["ConflictRule", "FieldChanges", "base_after", "conflict_message", "diff_fields", "same"]
# the texts written again once the files they show are in (`children.texts`): their rows'
# entities, which verify and the preview name too
ISSUE_TEXT, COMMENT_TEXT = "issue_references", "comment_references"
CUSTOM = "field:"  # a custom field's compared name: "field:<its target key>"


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


def why_differs(
    name: str,
    source: Any,
    base: Mapping[str, Any] | None,
    target: Any,
    written_as: WrittenAs = same,
) -> str:
    """Why the target's `target` differs from the source's `source` for field `name`, given
    the base: "changed in the target", "changed on both sides", "not updatable" (a field no
    update call changes), or "" when the base does not tell (no base: a loss). `written_as`:
    whether the source's value is the base's (a text: once haul patched its file ids)."""
    if carry_of(body_key(name)) is Carry.IMPORT_ONLY:
        return "not updatable"
    if base is None or name not in base or not updatable(name):
        return ""
    written = base.get(name)
    if same(target, written):
        return ""  # the target holds what haul wrote: the source's change is not carried
    unchanged = same(source, written) or written_as(written, source)
    return "changed in the target" if unchanged else "changed on both sides"
