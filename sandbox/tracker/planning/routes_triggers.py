"""A queue's triggers and macros (``/queues/{queue}/triggers``, ``/queues/{queue}/macros``), as
the official SDK's ``Triggers`` and ``Macros`` collections read and write them.

Triggers: POST takes ``name`` and ``actions`` (required: a non-empty list of objects with a
``type``), ``conditions`` (a list of such objects; none means "always") and ``active``
(default true); 201 with the trigger. A ``Transition`` action names its status by key, by
``{"key"}`` or by an id of this org, and reads back as the status's reference
(``{self, id, key, display}``, as the v3 reference shows), whether the trigger was seeded or
made through the API. PATCH (under the version lock: ``version`` or
``If-Match``) changes what it is sent and moves the version on. Macros: POST takes ``name``
(required), ``body`` and the field changes, as the v3 reference's ``issueUpdate`` object or the
v2 page's ``fieldChanges`` list (objects with a ``field`` and one of ``set``, ``add``,
``remove``), read back as ``fieldChanges`` (:mod:`macro_forms`); PATCH has no lock. DELETE answers 200 for both.

Every field a condition, action or field change names must exist for the queue (a global field
by id, a local one by its key) and every person named as a user field's value must be a user of
the organisation: 422 otherwise, as the service refuses a rule about a field it does not know.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.collection import Collection
from haul.sandbox.tracker.api.context import open_call
from haul.sandbox.tracker.api.render_refs import View, entry_ref, queue_ref
from haul.sandbox.tracker.model import Org, Queue
from haul.sandbox.tracker.planning.macro_forms import v3_only, written_changes
from haul.sandbox.tracker.structure.routes_structure import queue_of_path
from haul.sandbox.tracker.workflows.queue_rules import Macro, Trigger, rules_of

_CHANGE_VERBS = ("set", "add", "remove")
_VALUE_KEYS = ("value", *_CHANGE_VERBS)


# -- shapes ---------------------------------------------------------------------------------


def trigger_shape(view: View, value: Trigger) -> dict:
    return {
        "self": f"{view.base}/queues/{value.queue}/triggers/{value.id}",
        "id": value.id,
        "queue": queue_ref(view, value.queue),
        "name": value.name,
        "order": f"{value.id / 10_000:.4f}",
        "actions": [_rendered_action(view, action) for action in value.actions],
        "conditions": value.conditions,
        "version": value.version,
        "active": value.active,
    }


def macro_shape(view: View, value: Macro) -> dict:
    return {
        "self": f"{view.base}/queues/{value.queue}/macros/{value.id}",
        "id": value.id,
        "queue": queue_ref(view, value.queue),
        "name": value.name,
        "body": value.body,
        "fieldChanges": value.field_changes,
    }


# -- triggers -------------------------------------------------------------------------------


def _new_trigger(org: Org, queue: Queue) -> Trigger:
    return Trigger(rules_of(org).take(), queue.key, "", [], [])


TRIGGERS = Collection(
    "Trigger", "trigger_id", lambda org: rules_of(org).triggers, trigger_shape,
    queue_of=queue_of_path, locked=True,
)  # fmt: skip
list_triggers, get_trigger, delete_trigger = TRIGGERS.list, TRIGGERS.get, TRIGGERS.delete


async def trigger_firings(request: Request) -> Response:
    """GET /_sandbox/queues/{queue}/triggers/firings (sandbox only): each trigger's firings
    by id, and their total."""
    call = open_call(request, admin=True)
    queue = queue_of_path(call, request)
    rules = rules_of(call.org)
    triggers, _ = rules.of_queue(queue.key)
    fired = {str(t.id): rules.firings[t.id] for t in triggers}
    return JSONResponse({"queue": queue.key, "total": sum(fired.values()), "triggers": fired})


def _trigger_settings(checks: Checks, queue: Queue, *, creating: bool) -> dict[str, object]:
    body = checks.body
    found: dict[str, object] = {}
    if creating or "name" in body:
        found["name"] = checks.text("name", required=True, limit=255)
    if creating or "actions" in body:
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions or not all(map(_typed, actions)):
            checks.fail("actions", "Required: a list of actions, each an object with a type")
        else:
            _check_references(checks, queue, "actions", actions)
            actions = [_stored_action(checks, action) for action in actions]
        found["actions"] = actions
    if "conditions" in body or creating:
        conditions = body.get("conditions") or []
        if not isinstance(conditions, list) or not all(map(_typed, conditions)):
            checks.fail("conditions", "Must be a list of conditions, each an object with a type")
        else:
            _check_references(checks, queue, "conditions", conditions)
        found["conditions"] = conditions
    if "active" in body:
        found["active"] = bool(body["active"])
    return found


create_trigger = TRIGGERS.creator(_trigger_settings, _new_trigger)
patch_trigger = TRIGGERS.editor(_trigger_settings)


def _stored_action(checks: Checks, action: dict) -> dict:
    """A ``Transition`` keeps its status by key, however it was named (a key, ``{"key"}``,
    ``{"id"}`` or an id of this org), so that every trigger reads back alike."""
    if action.get("type") != "Transition" or "status" not in action:
        return action
    named = action["status"]
    key = named.get("key") or named.get("id") if isinstance(named, dict) else named
    statuses = checks.org.statuses
    entry = (statuses.by_key.get(key) if isinstance(key, str) else None) or statuses.lookup_id(key)
    if entry is None:
        checks.fail("actions", f"Unknown status {named!r}: a key or an id of this organization")
        return action
    return {**action, "status": entry.key}


def _rendered_action(view: View, action: dict) -> dict:
    """A ``Transition``'s status as a reference, as the v3 reference shows a trigger's read."""
    if action.get("type") != "Transition" or not isinstance(action.get("status"), str):
        return action
    return {**action, "status": entry_ref(view, "statuses", action["status"])}


# -- macros ---------------------------------------------------------------------------------


def _new_macro(org: Org, queue: Queue) -> Macro:
    return Macro(rules_of(org).take(), queue.key, "")


MACROS = Collection(
    "Macro", "macro_id", lambda org: rules_of(org).macros, macro_shape, queue_of=queue_of_path
)
list_macros, get_macro, delete_macro = MACROS.list, MACROS.get, MACROS.delete


def _macro_settings(checks: Checks, queue: Queue, *, creating: bool) -> dict[str, object]:
    body = checks.body
    found: dict[str, object] = {}
    if creating or "name" in body:
        found["name"] = checks.text("name", required=True, limit=255)
    if "body" in body:
        found["body"] = checks.text("body")
    changes = written_changes(checks)
    if changes is not None:
        if not all(map(_change, changes)):
            checks.fail("fieldChanges", "Must be a list of {field, set | add | remove}")
        else:
            _check_references(checks, queue, "fieldChanges", changes)
        found["field_changes"] = changes
    return found


create_macro = v3_only(MACROS.creator(_macro_settings, _new_macro))
patch_macro = v3_only(MACROS.editor(_macro_settings))


# -- what a rule names ----------------------------------------------------------------------


def _typed(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def _change(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("field"), str)
        and any(verb in value for verb in _CHANGE_VERBS)
    )


def _check_references(checks: Checks, queue: Queue, name: str, items: list[Any]) -> None:
    """Every field named must exist for the queue, every person named must be a user."""
    for item in items:
        if not isinstance(item, dict):
            continue
        _check_references(checks, queue, name, item.get("conditions") or [])
        field_id = item.get("field")
        if field_id is None:
            continue
        structure = checks.org.structure
        known = structure.fields.get(field_id) or structure.custom_field(queue.key, field_id)
        if known is None:
            checks.fail(name, f"Field {field_id!r} does not exist for queue {queue.key}")
            continue
        if known.kind == "user":
            for key in _VALUE_KEYS:
                people = item.get(key)
                for person in people if isinstance(people, list) else [people]:
                    if person is not None and checks.org.find_user(person) is None:
                        checks.fail(name, f"User {person!r} does not exist in this organization")


API = (
    ("GET", "/queues/{queue}/triggers", list_triggers),
    ("POST", "/queues/{queue}/triggers", create_trigger),
    ("GET", "/queues/{queue}/triggers/{trigger_id}", get_trigger),
    ("PATCH", "/queues/{queue}/triggers/{trigger_id}", patch_trigger),
    ("DELETE", "/queues/{queue}/triggers/{trigger_id}", delete_trigger),
    ("GET", "/queues/{queue}/macros", list_macros),
    ("POST", "/queues/{queue}/macros", create_macro),
    ("GET", "/queues/{queue}/macros/{macro_id}", get_macro),
    ("PATCH", "/queues/{queue}/macros/{macro_id}", patch_macro),
    ("DELETE", "/queues/{queue}/macros/{macro_id}", delete_macro),
)
