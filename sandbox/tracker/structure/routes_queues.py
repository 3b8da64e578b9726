"""A queue's settings edited: ``PATCH /queues/{key}`` (admin, under the version lock: the
``version`` query parameter or the official SDK's ``If-Match``).

The body may give ``name``, ``description``, ``lead``, ``defaultType``, ``defaultPriority``
and ``issueTypesConfig``; what it gives replaces what the queue had. The issue-type
configuration is a list of ``{"issueType", "workflow", "resolutions"}``: a type and its
resolutions by key, id or a reference to either, a workflow by id or ``{"id": ...}``, each one
the organisation must have (422 names what it lacks). The same list is taken by
``POST /queues/`` (:func:`sandbox.tracker.workflows.workflows.parse_types_config`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.model import Dictionary
from haul.sandbox.tracker.structure import render_structure as render
from haul.sandbox.tracker.structure.routes_structure import queue_of_path
from haul.sandbox.tracker.workflows.workflows import parse_types_config


async def patch_queue(request: Request) -> Response:
    """PATCH /queues/{key}: the queue with its configuration, as ``GET`` shows it."""
    call = open_call(request, admin=True)
    queue = queue_of_path(call, request)
    check_version(request, queue.version)
    org = call.org
    checks = Checks(org, await json_object(request))
    name = checks.text("name", limit=255)
    description = checks.text("description")
    lead = checks.user("lead")
    default_type = _optional_key(checks, "defaultType", org.issue_types)
    default_priority = _optional_key(checks, "defaultPriority", org.priorities)
    config = parse_types_config(checks, org)
    checks.done()
    queue.name = name if name is not None else queue.name
    queue.description = description if description is not None else queue.description
    queue.lead = lead.uid if lead else queue.lead
    queue.default_type = default_type or queue.default_type
    queue.default_priority = default_priority or queue.default_priority
    if config is not None:
        org.queue_types[queue.key] = config
    queue.version += 1
    return JSONResponse(render.queue(call.view, queue, full=True))


def _optional_key(checks: Checks, name: str, dictionary: Dictionary) -> str | None:
    value = checks.body.get(name)
    if value is None:
        return None
    found = dictionary.lookup(
        value.get("key") or value.get("id") if isinstance(value, dict) else value
    )
    if found is None:
        checks.fail(name, f"Unknown {dictionary.path} value {value!r}")
        return None
    return found.key
