"""Components and queue versions: list (all, or per queue), get, create, edit under a lock,
delete (200, no body; an issue's ref to a deleted one is no longer rendered).

A component's name is unique within its queue, and so is a version's: a second one is a 409.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.locking import check_version
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


def numeric(request: Request, name: str) -> int:
    value = request.path_params[name]
    if not value.isdigit():
        raise ApiError(404, "Not found", errors={name: value})
    return int(value)


# -- what components and versions share: lists, a lookup by id, get, delete ---------------


@dataclass(frozen=True)
class Kind:
    """One kind of queue-owned object: where the org keeps it and how it is shown."""

    noun: str  # in errors: "Component"
    field: str  # the org structure's dict of them: "components"
    param: str  # the path parameter of its id: "component_id"
    render: Callable[[Any, Any], dict]

    def _all(self, call: Call) -> dict:
        return getattr(call.org.structure, self.field)

    def lookup(self, call: Call, request: Request) -> Any:
        found = self._all(call).get(numeric(request, self.param))
        if found is None:
            what = self.noun.lower()
            raise ApiError(404, f"{self.noun} does not exist.", errors={what: "not found"})
        return found

    async def list_all(self, request: Request) -> Response:
        call = open_call(request)
        return JSONResponse([self.render(call.view, item) for item in self._all(call).values()])

    async def list_queue(self, request: Request) -> Response:
        call = open_call(request)
        queue = queue_of_path(call, request)
        items = [item for item in self._all(call).values() if item.queue == queue.key]
        return JSONResponse([self.render(call.view, item) for item in items])

    async def get(self, request: Request) -> Response:
        call = open_call(request)
        return JSONResponse(self.render(call.view, self.lookup(call, request)))

    async def delete(self, request: Request) -> Response:
        """DELETE: 200 with no body."""
        call = open_call(request, admin=True)
        del self._all(call)[self.lookup(call, request).id]
        return Response(status_code=200)


COMPONENTS = Kind("Component", "components", "component_id", shapes.component)
VERSIONS = Kind("Version", "versions", "version_id", shapes.version)
list_components, list_queue_components = COMPONENTS.list_all, COMPONENTS.list_queue
get_component, delete_component = COMPONENTS.get, COMPONENTS.delete
list_versions, list_queue_versions = VERSIONS.list_all, VERSIONS.list_queue
get_version, delete_version = VERSIONS.get, VERSIONS.delete


def _component(call: Call, request: Request) -> Component:
    found: Component = COMPONENTS.lookup(call, request)
    return found


def _version(call: Call, request: Request) -> Version:
    found: Version = VERSIONS.lookup(call, request)
    return found


# -- components ----------------------------------------------------------------------------


async def create_component(request: Request) -> Response:
    """POST /components: name and queue required; description, lead, assignAuto optional."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", required=True, limit=255)
    queue = find_queue(call.org, body.get("queue"))
    if queue is None:
        checks.fail("queue", "Required: the key of a queue of this organization")
    description = checks.text("description") or ""
    lead = checks.user("lead")
    assign_auto = _flag(checks, "assignAuto")
    checks.done()
    assert queue is not None and name is not None
    structure = call.org.structure
    if any(c.queue == queue.key and c.name == name for c in structure.components.values()):
        raise ApiError(409, f"Component {name!r} already exists in {queue.key}")
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


async def patch_component(request: Request) -> Response:
    call = open_call(request, admin=True)
    found = _component(call, request)
    check_version(request, found.version)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", limit=255)
    description = checks.text("description")
    lead = checks.user("lead")
    assign_auto = _flag(checks, "assignAuto")
    checks.done()
    found.name = name if name is not None else found.name
    found.description = description if description is not None else found.description
    found.lead = lead.uid if lead else found.lead
    found.assign_auto = found.assign_auto if assign_auto is None else assign_auto
    found.version += 1
    return JSONResponse(shapes.component(call.view, found))


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
    name = checks.text("name", required=True, limit=255)
    queue = find_queue(call.org, body.get("queue"))
    if queue is None:
        checks.fail("queue", "Required: the key of a queue of this organization")
    description = checks.text("description") or ""
    start, due = _date(checks, "startDate"), _date(checks, "dueDate")
    released = _flag(checks, "released")
    checks.done()
    assert queue is not None and name is not None
    structure = call.org.structure
    if any(v.queue == queue.key and v.name == name for v in structure.versions.values()):
        raise ApiError(409, f"Version {name!r} already exists in {queue.key}")
    created = Version(
        structure.take("version"), queue.key, name, description, start, due, bool(released)
    )
    structure.versions[created.id] = created
    return JSONResponse(shapes.version(call.view, created), status_code=201)


async def patch_version(request: Request) -> Response:
    call = open_call(request, admin=True)
    found = _version(call, request)
    check_version(request, found.version)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name, description = checks.text("name", limit=255), checks.text("description")
    start, due = _date(checks, "startDate"), _date(checks, "dueDate")
    released, archived = _flag(checks, "released"), _flag(checks, "archived")
    checks.done()
    found.name = name if name is not None else found.name
    found.description = description if description is not None else found.description
    found.start_date = start or found.start_date
    found.due_date = due or found.due_date
    found.released = found.released if released is None else released
    found.archived = found.archived if archived is None else archived
    found.version += 1
    return JSONResponse(shapes.version(call.view, found))


def _date(checks: Checks, name: str) -> str | None:
    value = checks.body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        checks.fail(name, "Must be a date like 2024-01-31")
        return None
    return value
