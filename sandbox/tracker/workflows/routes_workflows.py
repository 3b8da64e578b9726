"""Workflows over the wire: ``GET/POST /workflows/``, ``GET/PATCH /workflows/{id}``, and a
queue's own (``GET /queues/{queue}/workflows``).

The spec shows no workflow path; the shape follows the official SDK's ``Workflows``
collection (``id``, ``self``, ``version``, ``name``, ``steps``, ``initialAction``) and what the
vendor's importer reads and sends: a step per status, ``{"status": ref, "actions": [{"id",
"name", "target": ref}]}``, and ``initialAction: {"id", "name", "target": ref}``. Beside them
each workflow also shows the flat view haul's sync plans paths with: ``initialStatus``,
``statuses`` and ``transitions`` (``id``, ``display``, ``to``, ``from``).

A new workflow takes the ``id`` its body names (latin letters and digits; a taken one is a
409) or one made from its name: the notes are silent on how the service names them, and a
migration matches workflows by this key. Every status a workflow names must exist (422). The
sandbox names a transition by the status it leads to, so an action's own ``id`` is not kept:
two actions into one status are one transition leaving from both steps. An edit (PATCH,
under the version lock) replaces what its body gives.
"""

from __future__ import annotations

import re
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.api.render_refs import View, entry_ref
from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.workflows.workflows import (
    Transition,
    Workflow,
    queue_workflows,
    workflows_of,
)

_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,99}")


def render(view: View, workflow: Workflow) -> dict:
    """A workflow as the service shows it (see the module docstring)."""

    def status(key: str) -> dict | None:
        return entry_ref(view, "statuses", key)

    known = [key for key in workflow.statuses if key in view.org.statuses.by_key]
    steps = [
        {
            "status": status(key),
            "actions": [
                {"id": t.id, "name": t.display, "target": status(t.id)}
                for t in workflow.available(key)
                if t.id in known
            ],
        }
        for key in known
    ]
    transitions = [
        {
            "id": t.id,
            "display": t.display,
            "to": status(t.id),
            "from": [status(source) for source in t.sources if source in known],
        }
        for t in workflow.transitions
        if t.id in known
    ]
    return {
        "self": f"{view.base}/workflows/{workflow.id}",
        "id": workflow.id,
        "version": workflow.version,
        "name": workflow.name,
        "display": workflow.name,
        "initialAction": {"id": "create", "name": "Create", "target": status(workflow.initial)},
        "steps": steps,
        "initialStatus": status(workflow.initial),
        "statuses": [status(key) for key in known],
        "transitions": transitions,
    }


def _workflow(call: Call, request: Request) -> Workflow:
    wanted = request.path_params["workflow_id"]
    found = workflows_of(call.org).get(wanted)
    if found is None:
        raise ApiError(404, "Workflow does not exist.", errors={"workflow": wanted})
    return found


async def list_workflows(request: Request) -> Response:
    """GET /workflows/: every workflow of the organisation."""
    call = open_call(request)
    return JSONResponse([render(call.view, w) for w in workflows_of(call.org).values()])


async def get_workflow(request: Request) -> Response:
    call = open_call(request)
    return JSONResponse(render(call.view, _workflow(call, request)))


async def create_workflow(request: Request) -> Response:
    """POST /workflows/ {id?, name, steps, initialAction} (admin): 201 with the workflow."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ApiError(422, "Required: 'name', a string", errors={"name": "required"})
    workflows = workflows_of(call.org)
    wanted = body.get("id") if body.get("id") is not None else _free_id(call.org, name)
    if not isinstance(wanted, str) or not _ID.fullmatch(wanted):
        raise ApiError(422, "'id' must be latin letters and digits", errors={"id": str(wanted)})
    if wanted in workflows:
        raise ApiError(409, f"Workflow {wanted!r} already exists", errors={"id": wanted})
    initial, transitions = _parse(call.org, body)
    if initial is None:
        raise ApiError(422, "Required: 'initialAction' with a target status")
    created = Workflow(wanted, name, initial, transitions)
    workflows[wanted] = created
    return JSONResponse(render(call.view, created), status_code=201)


async def patch_workflow(request: Request) -> Response:
    """PATCH /workflows/{id} {name?, steps?, initialAction?} (admin), under the version lock."""
    call = open_call(request, admin=True)
    found = _workflow(call, request)
    check_version(request, found.version)
    body = await json_object(request)
    initial, transitions = _parse(call.org, body)
    name = body.get("name")
    edited = replace(
        found,
        name=name if isinstance(name, str) and name.strip() else found.name,
        initial=initial or found.initial,
        transitions=transitions if "steps" in body else found.transitions,
        version=found.version + 1,
    )
    workflows_of(call.org)[found.id] = edited
    return JSONResponse(render(call.view, edited))


async def list_queue_workflows(request: Request) -> Response:
    """GET /queues/{queue}/workflows: each workflow the queue's configuration names, with the
    queue's issue types that follow it."""
    call = open_call(request)
    wanted = request.path_params["queue"]
    queue = call.org.queues.get(wanted) or next(
        (q for q in call.org.queues.values() if str(q.id) == wanted), None
    )
    if queue is None:
        raise ApiError(404, "Queue does not exist.", errors={"queue": wanted})
    return JSONResponse(
        [
            {**render(call.view, w), "issueTypes": [entry_ref(call.view, "issuetypes", k)
                                                   for k in kinds]}
            for w, kinds in queue_workflows(call.org, queue)
        ]
    )  # fmt: skip


def _free_id(org: Org, name: str) -> str:
    base = re.sub(r"[^A-Za-z0-9]+", "", name)[:40] or "workflow"
    base = base[0].lower() + base[1:] if base[0].isalpha() else f"w{base}"
    taken, candidate, n = workflows_of(org), base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}{n}"
    return candidate


def _status_key(org: Org, ref: object) -> str:
    """A status named by key, id, or a reference to either; 422 when the org lacks it."""
    if isinstance(ref, dict):
        ref = ref.get("key") or ref.get("id")
    found = org.statuses.lookup(ref)
    if found is None:
        raise ApiError(422, f"Unknown status {ref!r}", errors={"status": str(ref)})
    return found.key


def _display(action: dict, fallback: str) -> str:
    name = action.get("name")
    if isinstance(name, dict):
        name = name.get("en") or name.get("ru")
    return name if isinstance(name, str) and name else fallback


def _parse(org: Org, body: dict) -> tuple[str | None, tuple[Transition, ...]]:
    """The initial status and the transitions a body's ``initialAction`` and ``steps`` give."""
    start = body.get("initialAction")
    initial = _status_key(org, start.get("target")) if isinstance(start, dict) else None
    steps = body.get("steps") or []
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise ApiError(422, "'steps' must be a list of {status, actions}")
    sources: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for step in steps:
        status = _status_key(org, step.get("status"))
        for action in step.get("actions") or []:
            if not isinstance(action, dict):
                raise ApiError(422, "an action must be {id, name, target}")
            target = _status_key(org, action.get("target"))
            names.setdefault(target, _display(action, target))
            sources.setdefault(target, [])
            if status not in sources[target]:
                sources[target].append(status)
    transitions = tuple(Transition(to, tuple(sources[to]), names[to]) for to in sources)
    return initial, transitions
