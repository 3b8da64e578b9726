"""Components and queue versions: list (all, or per queue), get, create, edit under a lock,
delete (200, no body; an issue's ref to a deleted one is no longer rendered).

A component's name is unique within its queue, and so is a version's: a second one is a 409.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.collection import Collection
from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.model import Org, Queue
from haul.sandbox.tracker.structure import render_structure as shapes
from haul.sandbox.tracker.structure.structure import Component, Version

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def find_queue(org: Org, ref: object) -> Queue | None:
    """A queue by key or numeric id (an int, digits, or ``{"key": ...}`` / ``{"id": ...}``)."""
    if isinstance(ref, dict):
        ref = ref.get("key") or ref.get("id")
    if isinstance(ref, str) and ref in org.queues:
        return org.queues[ref]
    return next((q for q in org.queues.values() if str(q.id) == str(ref)), None)


def queue_of_path(call: Call, request: Request) -> Queue:
    wanted = request.path_params["queue"]
    queue = find_queue(call.org, wanted)
    if queue is None:
        raise ApiError(404, "Queue does not exist.", errors={"queue": wanted})
    return queue


# -- what components and versions share: lists, a lookup by id, get, delete ---------------


COMPONENTS = Collection(
    "Component", "component_id", lambda org: org.structure.components, shapes.component,
    locked=True,
)  # fmt: skip
VERSIONS = Collection(
    "Version", "version_id", lambda org: org.structure.versions, shapes.version, locked=True
)
QUEUE_COMPONENTS = replace(COMPONENTS, queue_of=queue_of_path)
QUEUE_VERSIONS = replace(VERSIONS, queue_of=queue_of_path)
list_components, list_queue_components = COMPONENTS.list, QUEUE_COMPONENTS.list
get_component, delete_component = COMPONENTS.get, COMPONENTS.delete
list_versions, list_queue_versions = VERSIONS.list, QUEUE_VERSIONS.list
get_version, delete_version = VERSIONS.get, VERSIONS.delete


# -- components ----------------------------------------------------------------------------


async def create_component(request: Request) -> Response:
    """POST /components: name and queue required; description, lead, assignAuto optional."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name, queue = _name_and_queue(checks)
    description = checks.text("description") or ""
    lead = checks.user("lead")
    assign_auto = _flag(checks, "assignAuto")
    checks.done()
    assert queue is not None and name is not None
    _check_unused(COMPONENTS, call.org, queue, name)
    structure = call.org.structure
    created = Component(
        structure.take("component"),
        name,
        queue.key,
        description,
        lead.uid if lead else None,
        bool(assign_auto),
    )
    structure.components[created.id] = created
    return JSONResponse(shapes.component(call.view, created), status_code=201)


def _component_edits(checks: Checks, queue: Queue, *, creating: bool) -> dict[str, object]:
    """What a PATCH of a component sets: name, description, lead, assignAuto, those sent."""
    name = checks.text("name", limit=255)
    description = checks.text("description")
    lead = checks.user("lead")
    assign_auto = _flag(checks, "assignAuto")
    edits = {"name": name, "description": description, "lead": lead.uid if lead else None}
    return _sent({**edits, "assign_auto": assign_auto})


patch_component = COMPONENTS.editor(_component_edits)


def _name_and_queue(checks: Checks) -> tuple[str | None, Queue | None]:
    """What a component or a version is created with: its name and its queue, both required."""
    name = checks.text("name", required=True, limit=255)
    queue = find_queue(checks.org, checks.body.get("queue"))
    if queue is None:
        checks.fail("queue", "Required: the key of a queue of this organization")
    return name, queue


def _check_unused(kind: Collection[Any], org: Org, queue: Queue, name: str) -> None:
    """A name is unique within its queue: a second component (version) of that name is a 409."""
    if any(item.queue == queue.key and item.name == name for item in kind.records(org).values()):
        raise ApiError(409, f"{kind.noun} {name!r} already exists in {queue.key}")


def _flag(checks: Checks, name: str) -> bool | None:
    value = checks.body.get(name)
    if value is not None and not isinstance(value, bool):
        checks.fail(name, "Must be true or false")
        return None
    return value


# -- versions ------------------------------------------------------------------------------


async def create_version(request: Request) -> Response:
    """POST /versions: queue and name required; description, startDate, dueDate optional."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name, queue = _name_and_queue(checks)
    description = checks.text("description") or ""
    start, due = _date(checks, "startDate"), _date(checks, "dueDate")
    released = _flag(checks, "released")
    checks.done()
    assert queue is not None and name is not None
    _check_unused(VERSIONS, call.org, queue, name)
    structure = call.org.structure
    created = Version(
        structure.take("version"), queue.key, name, description, start, due, bool(released)
    )
    structure.versions[created.id] = created
    return JSONResponse(shapes.version(call.view, created), status_code=201)


def _version_edits(checks: Checks, queue: Queue, *, creating: bool) -> dict[str, object]:
    """What a PATCH of a version sets: name, description, dates, released, archived, those sent."""
    name, description = checks.text("name", limit=255), checks.text("description")
    start, due = _date(checks, "startDate"), _date(checks, "dueDate")
    released, archived = _flag(checks, "released"), _flag(checks, "archived")
    edits = {"name": name, "description": description, "start_date": start, "due_date": due}
    return _sent({**edits, "released": released, "archived": archived})


patch_version = VERSIONS.editor(_version_edits)


def _sent(edits: dict[str, object]) -> dict[str, object]:
    """The edits a body makes: a field not sent (or sent empty) keeps its value."""
    return {name: value for name, value in edits.items() if value is not None}


def _date(checks: Checks, name: str) -> str | None:
    value = checks.body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        checks.fail(name, "Must be a date like 2024-01-31")
        return None
    return value
