"""Write rules of entities (projects, portfolios, goals): the ``{fields: {...}}`` envelope,
parents, deletion; a broken rule is a 422 naming the field (history: :mod:`entity_history`,
links: :mod:`entity_links`).

- ``summary`` is required on create (and on import, which also takes ``createdAt`` and
  ``createdBy`` as the issue import does: createdAt <= now, ``updatedAt``+``updatedBy`` as a
  pair in [createdAt, now]; they may sit beside ``fields`` or inside it).
- ``entityStatus`` is a key of the type's statuses; ``lead``, ``author``, ``teamUsers``,
  ``clients``, ``followers`` are users of this org (a list replaces, ``{"add"|"remove"|"set":
  [...]}`` edits); ``start``/``end`` are timestamps or dates.
- The parent (``parent`` or ``parentEntity: {primary, secondary}``) of a project or portfolio
  is a portfolio, of a goal a goal; an entity is never its own ancestor.
- Every change is an event in the entity's history; the version counts changes.
"""

from __future__ import annotations

from haul.sandbox.timefmt import format_ms, parse_instant
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.entities.entity_history import add_comment, new_hex_id, record, touch
from haul.sandbox.tracker.entities.entity_links import add_link, check_link
from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.planning.planning import Change, Entity, EntityEvent, Planning

STATUSES = {
    "project": ("draft", "in_progress", "launched", "postponed", "at_risk", "blocked"),
    "portfolio": ("draft", "in_progress", "launched", "postponed", "at_risk", "blocked"),
    "goal": (
        "draft",
        "according_to_plan",
        "at_risk",
        "blocked",
        "achieved",
        "partially_achieved",
        "not_achieved",
        "exceeded",
        "cancelled",
    ),
}
PARENT_TYPES = {"project": "portfolio", "portfolio": "portfolio", "goal": "goal"}
_USER_LISTS = {"teamUsers": "team", "clients": "clients", "followers": "followers"}
_KNOWN = {
    "summary",
    "description",
    "lead",
    "author",
    "entityStatus",
    "start",
    "end",
    "parent",
    "parentEntity",
    "tags",
    "teamAccess",
    "markupType",
    "keyResultItems",
    *_USER_LISTS,
}


def envelope(body: dict) -> dict:
    """The ``fields`` object of a body (422 if it is not an object)."""
    fields = body.get("fields", {})
    if not isinstance(fields, dict):
        raise ApiError(422, "'fields' must be an object", errors={"fields": "Must be an object"})
    return fields


def create_entity(
    org: Org, planning: Planning, kind: str, fields: dict, by: int, at: int, *, created_by: int
) -> Entity:
    """A new entity of ``kind`` from its fields, created by ``created_by`` at ``at``."""
    checks = Checks(org, fields)
    summary = checks.text("summary", required=True, limit=255)
    checks.done()
    entity = Entity(
        id=new_hex_id(planning, "entity"),
        short_id=planning.take(f"short:{kind}"),
        type=kind,
        summary=summary or "",
        created_by=created_by,
        created_at=at,
        updated_at=at,
        author=created_by,
        status=STATUSES[kind][0],
    )
    _apply(org, planning, entity, fields)
    planning.entities[entity.id] = entity
    record(planning, entity, "Entity created", by, at, (Change("summary", summary or ""),))
    return entity


def import_entity(org: Org, planning: Planning, kind: str, body: dict, now: int) -> Entity:
    """An entity with its original creation (and last update) time and people."""
    fields = envelope(body)
    merged = {**fields, **{k: v for k, v in body.items() if k != "fields"}}
    checks = Checks(org, merged)
    created = checks.instant("createdAt", required=True)
    creator = checks.user("createdBy", required=True)
    if created is not None and created > now:
        checks.fail("createdAt", "Must not lie in the future")
    updated, updater = None, None
    if checks.together("updatedAt", "updatedBy"):
        updated, updater = checks.instant("updatedAt"), checks.user("updatedBy")
        if created is not None:
            checks.within("updatedAt", updated, created, now, "[createdAt, now]")
    checks.done()
    assert created is not None and creator is not None
    plain = {k: v for k, v in fields.items() if k not in ("createdAt", "createdBy")}
    plain = {k: v for k, v in plain.items() if k not in ("updatedAt", "updatedBy")}
    entity = create_entity(org, planning, kind, plain, creator.uid, created, created_by=creator.uid)
    if updated is not None and updater is not None:
        entity.updated_at = updated
        entity.events.append(
            EntityEvent(new_hex_id(planning, "event"), "Entity updated", updater.uid, updated)
        )
    return entity


def update_entity(
    org: Org, planning: Planning, entity: Entity, body: dict, by: int, at: int
) -> None:
    """Apply a PATCH body: ``fields``, an optional ``comment`` and ``links`` to add; all of it
    is checked before anything changes."""
    fields = envelope(body)
    specs = _link_specs(body)
    for spec in specs:
        check_link(org, planning, entity, spec)
    before = _snapshot(entity)
    _apply(org, planning, entity, fields)
    changes = tuple(
        Change(name, f"{old} → {new}")
        for name, (old, new) in _diff(before, _snapshot(entity)).items()
    )
    for spec in specs:
        add_link(org, planning, entity, spec, by, at)
    if isinstance(body.get("comment"), str) and body["comment"].strip():
        add_comment(planning, entity, body["comment"], (), by, at)
    if changes:
        touch(planning, entity, "Entity updated", by, at, changes)


def _link_specs(body: dict) -> list[dict]:
    links = body.get("links") or []
    if not isinstance(links, list) or not all(isinstance(spec, dict) for spec in links):
        raise ApiError(422, "'links' must be a list of objects", errors={"links": "Must be a list"})
    return links


def _apply(org: Org, planning: Planning, entity: Entity, fields: dict) -> None:
    checks = Checks(org, fields)
    unknown = sorted(set(fields) - _KNOWN)
    for name in unknown:
        checks.fail(name, "Unknown entity field")
    values: dict[str, object] = {}
    if "summary" in fields:
        values["summary"] = checks.text("summary", required=True, limit=255)
    if "description" in fields:
        values["description"] = checks.text("description") or None
    for name in ("lead", "author"):
        if name in fields:
            user = checks.user(name)
            values[name] = user.uid if user else None
    if "entityStatus" in fields:
        status = fields["entityStatus"]
        if status not in STATUSES[entity.type]:
            checks.fail("entityStatus", f"Must be one of: {', '.join(STATUSES[entity.type])}")
        values["status"] = status
    for name in ("start", "end"):
        if name in fields:
            values[name] = _moment(checks, name)
    for name, attribute in _USER_LISTS.items():
        if name in fields:
            values[attribute] = _user_list(checks, name, getattr(entity, attribute))
    if "tags" in fields:
        values["tags"] = _tags(checks, entity.tags)
    if "teamAccess" in fields:
        values["team_access"] = bool(fields["teamAccess"])
    if "keyResultItems" in fields:
        values["key_results"] = _key_results(checks, entity)
    parents = _parents(checks, planning, entity, fields)
    checks.done()
    for attribute, value in values.items():
        if attribute != "author" or value is not None:
            setattr(entity, attribute, value)
    if parents is not None:
        entity.parent, entity.secondary = parents


def _key_results(checks: Checks, entity: Entity) -> tuple[dict, ...]:
    """A goal's key results (the spec names the block, not its items' shape): a list of
    objects, kept as given; any other entity has none."""
    items = checks.body.get("keyResultItems")
    if entity.type != "goal":
        checks.fail("keyResultItems", "Only a goal has key results")
        return ()
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        checks.fail("keyResultItems", "Must be a list of objects")
        return ()
    return tuple(dict(item) for item in items)


def _moment(checks: Checks, name: str) -> int | None:
    value = checks.body.get(name)
    if value is None:
        return None
    moment = parse_instant(value)
    if moment is None:
        checks.fail(name, "Must be a timestamp like 2024-01-01T00:00:00.000+0000 or a date")
    return moment


def _user_list(checks: Checks, name: str, current: tuple[int, ...]) -> tuple[int, ...]:
    value = checks.body.get(name)
    if isinstance(value, dict):
        ops = {op: _uids(checks, name, value[op]) for op in ("set", "add", "remove") if op in value}
        result = list(ops.get("set", current))
        result += [uid for uid in ops.get("add", ()) if uid not in result]
        return tuple(uid for uid in result if uid not in ops.get("remove", ()))
    return _uids(checks, name, value or [])


def _uids(checks: Checks, name: str, values: object) -> tuple[int, ...]:
    values = values if isinstance(values, list) else [values]
    found = [checks.org.find_user(v.get("id") if isinstance(v, dict) else v) for v in values]
    if any(user is None for user in found):
        checks.fail(name, "Every entry must be a user of this organization")
        return ()
    return tuple(user.uid for user in found if user is not None)


def _tags(checks: Checks, current: tuple[str, ...]) -> tuple[str, ...]:
    value = checks.body.get("tags")
    if isinstance(value, dict):
        result = list(value.get("set", current))
        result += [tag for tag in value.get("add", []) if tag not in result]
        return tuple(tag for tag in result if tag not in value.get("remove", []))
    return checks.strings("tags")


def _parents(
    checks: Checks, planning: Planning, entity: Entity, fields: dict
) -> tuple[str | None, tuple[str, ...]] | None:
    """(primary, secondary) parents when the fields name them, else None."""
    if "parentEntity" in fields:
        block = fields["parentEntity"]
        if not isinstance(block, dict):
            checks.fail("parentEntity", "Must be an object {primary, secondary}")
            return None
        primary, secondary = block.get("primary"), block.get("secondary") or []
    elif "parent" in fields:
        primary, secondary = fields["parent"], []
    else:
        return None
    if isinstance(primary, dict):
        primary = primary.get("id")
    wanted = PARENT_TYPES[entity.type]
    refs = [primary] if primary is not None else []
    refs += secondary if isinstance(secondary, list) and entity.type != "goal" else []
    found = [planning.find_entity(wanted, str(ref)) for ref in refs]
    if any(parent is None for parent in found):
        checks.fail("parentEntity", f"The parent of a {entity.type} must be a {wanted} here")
        return None
    ids = [parent.id for parent in found if parent is not None]
    if any(_is_ancestor(planning, entity.id, parent_id) for parent_id in ids):
        checks.fail("parentEntity", "An entity cannot lie under itself")
        return None
    if primary is None:
        return None, tuple(ids)
    return ids[0], tuple(ids[1:])


def _is_ancestor(planning: Planning, entity_id: str, start: str) -> bool:
    """True if ``entity_id`` is ``start`` or one of its ancestors."""
    seen: set[str] = set()
    current: str | None = start
    while current is not None and current not in seen:
        if current == entity_id:
            return True
        seen.add(current)
        parent = planning.entities.get(current)
        current = parent.parent if parent else None
    return False


def _snapshot(entity: Entity) -> dict[str, object]:
    return {
        "summary": entity.summary,
        "description": entity.description,
        "lead": entity.lead,
        "entityStatus": entity.status,
        "start": format_ms(entity.start) if entity.start is not None else None,
        "end": format_ms(entity.end) if entity.end is not None else None,
        "parentEntity": entity.parent,
        "teamUsers": entity.team,
        "tags": entity.tags,
    }


def _diff(before: dict, after: dict) -> dict[str, tuple[object, object]]:
    return {name: (before[name], after[name]) for name in before if before[name] != after[name]}


def delete_entity(planning: Planning, entity: Entity) -> None:
    """Remove the entity and its links; its children lose it as a parent."""
    del planning.entities[entity.id]
    for link in planning.links_of(entity.id):
        del planning.links[link.id]
    for child in planning.entities.values():
        if child.parent == entity.id:
            child.parent = None
        child.secondary = tuple(p for p in child.secondary if p != entity.id)
