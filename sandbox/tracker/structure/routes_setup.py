"""Organisation setup: dictionary values (statuses, issue types, priorities, resolutions) read
one by one, created and edited under a version lock; queues created.

A new value's key must be free in its dictionary (else 409).  New ids lie in a range of
their own per organisation, so they never meet another organisation's ids (see
:mod:`sandbox`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.model import Dictionary, Entry, Org, Queue
from haul.sandbox.tracker.structure import render_structure as render
from haul.sandbox.tracker.workflows.workflows import parse_types_config

Endpoint = Callable[[Request], Awaitable[Response]]
STATUS_TYPES = ("new", "inProgress", "paused", "done", "cancelled")
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}")
_QUEUE_KEY = re.compile(r"[A-Z][A-Z0-9]{0,14}")


def _band(org: Org) -> int:
    """Which hundred the org's seeded dictionary ids lie in (0 for the source, 1, 2, ...)."""
    return (min(entry.id for entry in org.statuses.entries) - 1) // 100


def _new_id(org: Org, dictionary: Dictionary) -> int:
    return 10_000 * (_band(org) + 1) + len(dictionary.entries)


def _entry(dictionary: Dictionary, request: Request) -> Entry:
    wanted = request.path_params["entry_id"]
    found = dictionary.lookup(wanted)
    if found is None:
        raise ApiError(404, "Object does not exist.", errors={dictionary.path: wanted})
    return found


def get_endpoint(path: str) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        call = open_call(request)
        found = _entry(call.view.dictionary(path), request)
        return JSONResponse(render.entry(call.view, path, found, single=True))

    endpoint.__name__ = f"get_{path}"
    return endpoint


def create_endpoint(path: str) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        call = open_call(request, admin=True)
        dictionary = call.view.dictionary(path)
        checks = Checks(call.org, await json_object(request))
        key = checks.text("key", required=True, limit=100)
        if key is not None and not _KEY.fullmatch(key):
            checks.fail("key", "Must be latin letters and digits, starting with a letter")
        draft = _fields(path, checks, Entry(0, key or "", "", "", 0))
        if path == "statuses" and draft.status_type is None:
            checks.fail("type", f"Required: one of {', '.join(STATUS_TYPES)}")
        checks.done()
        if draft.key in dictionary.by_key:
            raise ApiError(409, f"{draft.key!r} already exists", errors={"key": draft.key})
        order = draft.order or (len(dictionary.entries) + 1) * 10
        created = replace(draft, id=_new_id(call.org, dictionary), order=order)
        dictionary.put(created)
        return JSONResponse(render.entry(call.view, path, created, single=True), status_code=201)

    endpoint.__name__ = f"create_{path}"
    return endpoint


def patch_endpoint(path: str) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        call = open_call(request, admin=True)
        dictionary = call.view.dictionary(path)
        found = _entry(dictionary, request)
        check_version(request, found.version)
        checks = Checks(call.org, await json_object(request))
        edited = _fields(path, checks, found)
        checks.done()
        edited = replace(edited, version=found.version + 1)
        dictionary.put(edited)
        return JSONResponse(render.entry(call.view, path, edited, single=True))

    endpoint.__name__ = f"patch_{path}"
    return endpoint


def _fields(path: str, checks: Checks, base: Entry) -> Entry:
    """``base`` with the name, description, order (and a status's type) the body gives."""
    body = checks.body
    name = body.get("name")
    names = (base.name_en, base.name_ru)
    if isinstance(name, str) and name.strip():
        names = (name, name)
    elif isinstance(name, dict) and all(isinstance(name.get(k), str) for k in ("en", "ru")):
        names = (name["en"], name["ru"])
    elif name is not None or not base.name_en:
        checks.fail("name", "Required: a string or {en, ru}")
    order = body.get("order", base.order)
    if isinstance(order, bool) or not isinstance(order, int):
        checks.fail("order", "Must be an integer")
        order = base.order
    status_type = body.get("type", base.status_type) if path == "statuses" else None
    if path == "statuses" and status_type is not None and status_type not in STATUS_TYPES:
        checks.fail("type", f"Must be one of {', '.join(STATUS_TYPES)}")
    description = checks.text("description")
    return replace(
        base,
        name_en=names[0],
        name_ru=names[1],
        order=order,
        status_type=status_type,
        description=description if description is not None else base.description,
    )


async def create_queue(request: Request) -> Response:
    """POST /queues/: key, name, lead, defaultType and defaultPriority required;
    issueTypesConfig (issue type, workflow, resolutions) checked against the dictionaries and
    the workflows, and kept (without it, the queue's types follow the org's defaults)."""
    call = open_call(request, admin=True)
    org = call.org
    checks = Checks(org, await json_object(request))
    key = checks.text("key", required=True, limit=15)
    if key is not None and not _QUEUE_KEY.fullmatch(key):
        checks.fail("key", "Must be capital latin letters and digits, starting with a letter")
    name = checks.text("name", required=True, limit=255)
    lead = checks.user("lead", required=True)
    default_type = _lookup(checks, "defaultType", org.issue_types)
    default_priority = _lookup(checks, "defaultPriority", org.priorities)
    config = parse_types_config(checks, org)
    checks.done()
    assert key is not None and name is not None and lead is not None
    if key in org.queues:
        raise ApiError(409, f"Queue {key} already exists", errors={"key": key})
    queue_id = 1_000 * (_band(org) + 1) + len(org.queues) + 1
    created = Queue(queue_id, key, name, checks.text("description") or "", lead.uid, "", "")
    created.default_type, created.default_priority = default_type or "", default_priority or ""
    org.queues[key] = created
    if config is not None:
        org.queue_types[key] = config
    return JSONResponse(render.queue(call.view, created), status_code=201)


def _lookup(checks: Checks, name: str, dictionary: Dictionary) -> str | None:
    value = checks.body.get(name)
    ref = value.get("key") or value.get("id") if isinstance(value, dict) else value
    found = dictionary.lookup(ref)
    if found is None:
        checks.fail(name, f"Required: a key or id of {dictionary.path} of this organization")
        return None
    return found.key
