"""What an issue ``_import`` says about the organisation's structure, checked as the service does.

- ``components``, ``fixVersions``, ``affectedVersions``: lists of ids of this organisation's
  components and versions, of the issue's queue; ``sprint``: a list of sprint ids;
- ``votedBy``, ``favoritedBy``, ``access``: lists of logins or uids of this organisation;
- any other key must name a field: a documented import field, a system field (accepted and
  ignored, like ``aliases``), or a custom field (global, or local to the queue) whose value
  fits its type.  An unknown key is a 422 naming it.

The values become the issue's ``refs`` (ids, uids, raw values), rendered on every read.
"""

from __future__ import annotations

import re

from haul.sandbox.timefmt import format_ms, parse_instant
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.model import Queue
from haul.sandbox.tracker.structure.structure import Field
from haul.sandbox.tracker.system_fields import SYSTEM_FIELD_IDS

IMPORT_FIELDS = frozenset(
    [
        "queue",
        "summary",
        "key",
        "createdAt",
        "createdBy",
        "updatedAt",
        "updatedBy",
        "resolvedAt",
        "resolvedBy",
        "resolution",
        "status",
        "type",
        "priority",
        "deadline",
        "start",
        "end",
        "description",
        "assignee",
        "affectedVersions",
        "fixVersions",
        "components",
        "tags",
        "sprint",
        "followers",
        "access",
        "votedBy",
        "favoritedBy",
        "unique",
        "followingMaillists",
        "originalEstimation",
        "estimation",
        "spent",
        "storyPoints",
    ]
)
# what an edit may change besides custom fields (an import takes these too)
STRUCTURE_FIELDS = frozenset(
    (
        *("components", "fixVersions", "affectedVersions", "sprint"),
        *("votedBy", "favoritedBy", "access", "deadline", "start", "end"),
        *("originalEstimation", "estimation", "spent", "storyPoints"),
    )
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
Pairs = tuple[tuple[str, object], ...]


def issue_refs(checks: Checks, queue: Queue | None, *, strict: bool = True) -> Pairs:
    """The structure values of an import body, each bad one failed in ``checks``; with
    ``strict=False`` (an edit) a key that names no field is ignored, not failed."""
    structure = checks.org.structure
    queue_key = queue.key if queue else None
    found: list[tuple[str, object]] = []
    for name, objects, per_queue in (
        ("components", structure.components, True),
        ("fixVersions", structure.versions, True),
        ("affectedVersions", structure.versions, True),
        ("sprint", structure.sprints, False),
    ):
        ids = _ids(checks, name, objects, queue_key if per_queue else None)
        if ids:
            found.append((name, ids))
    for name in ("votedBy", "favoritedBy", "access"):
        uids = checks.users(name)
        if uids:
            found.append((name, uids))
    for name, value in checks.body.items():
        if name in IMPORT_FIELDS or name in SYSTEM_FIELD_IDS or value is None:
            continue
        field = structure.custom_field(queue_key, name)
        if field is None:
            if strict:
                checks.fail(name, f"Field {name!r} does not exist in this organization or queue")
            continue
        checked = _value(checks, field, name, value)
        if checked is not None:
            found.append((field.id, checked))
    return tuple(found)


def _ids(checks: Checks, name: str, objects: dict, queue: str | None) -> tuple[int, ...]:
    values = checks.body.get(name)
    if values is None:
        return ()
    items = values if isinstance(values, list) else [values]
    ids: list[int] = []
    for item in items:
        ref = item.get("id") if isinstance(item, dict) else item
        number = int(ref) if isinstance(ref, int | str) and str(ref).isdigit() else None
        owner = objects.get(number) if number is not None else None
        if owner is None:
            checks.fail(name, f"Unknown {name} id {ref!r}: ids of this organization")
            return ()
        if queue is not None and getattr(owner, "queue", queue) != queue:
            checks.fail(name, f"{name} id {ref!r} belongs to queue {owner.queue}, not {queue}")
            return ()
        ids.append(number)  # type: ignore[arg-type]
    return tuple(ids)


def _value(checks: Checks, field: Field, name: str, value: object) -> object:
    """The value to keep (a uid for a user field), or None after failing ``name``."""
    kind = field.kind
    ok: bool
    if kind == "user":
        user = checks.org.find_user(value)
        if user is None:
            checks.fail(name, f"User {value!r} does not exist in this organization")
            return None
        return user.uid
    if kind in ("string", "text"):
        ok = isinstance(value, str) and (not field.options or value in field.options)
    elif kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value  # type: ignore[arg-type]
    elif kind == "date":
        ok = isinstance(value, str) and _DATE.fullmatch(value) is not None
    elif kind == "datetime":
        moment = parse_instant(value)
        ok, value = moment is not None, format_ms(moment) if moment is not None else value
    else:
        ok = False
    if not ok:
        wanted = f"one of {', '.join(field.options)}" if field.options else f"a {kind} value"
        checks.fail(name, f"Must be {wanted}")
        return None
    return value
