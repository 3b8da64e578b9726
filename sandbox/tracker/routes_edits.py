"""Sandbox only: damage no API call can do. Replace an attachment's bytes (``PUT
/_sandbox/attachments/...``), so that `haul verify` has something to find; plant an entity's
parent past the rule that an entity never lies under itself (``PUT /_sandbox/entities/...``),
as reads taken at different moments can stage it (portfolio A read under B, then B moved
under A and read). The ordinary edits a person makes (transitions, comments, worklogs,
links...) are in :mod:`routes_changes`.

A mail list following an issue: what no tracker call changes. In the service a mail list
starts or stops following an issue from the mail list's own settings, outside the tracker's
API: the import sets an issue's ``followingMaillists``, and an edit ignores it. ``PUT
/_sandbox/issues/{key}/maillists {"followingMaillists": [...]}`` (admin token) stands for that
outside change: the issue's list is replaced and its updatedAt moves, as any change of the
issue does, so a sync test can make a change no update call can carry."""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.context import json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.blobs import StoredBlob
from haul.sandbox.tracker.entities.entities import PARENT_TYPES
from haul.sandbox.tracker.issues import render
from haul.sandbox.tracker.issues.routes_issues import find_issue
from haul.sandbox.tracker.planning.planning import ENTITY_TYPES, planning_of


async def replace_attachment_bytes(request: Request) -> Response:
    """PUT /_sandbox/attachments/{key}/{attachment_id} (body: the new bytes; admin only)."""
    call = open_call(request, admin=True)
    issue = find_issue(call, request.path_params["key"])
    wanted = request.path_params["attachment_id"]
    for attachment in call.org.records(issue).attachments:
        if str(attachment.id) == wanted:
            attachment.blob = StoredBlob(await request.body())
            return Response(status_code=204)
    raise ApiError(404, f"Attachment {wanted} not found")


async def plant_entity_parent(request: Request) -> Response:
    """PUT /_sandbox/entities/{entity_type}/{entity_id}/parent {"parent": id or null} (admin
    only): the entity's primary parent, unchecked, a cycle included."""
    call = open_call(request, admin=True)
    planning = planning_of(call.org)
    kind = request.path_params["entity_type"]
    entity = (
        planning.find_entity(kind, request.path_params["entity_id"])
        if kind in ENTITY_TYPES
        else None
    )
    if entity is None:
        raise ApiError(404, f"Entity {request.path_params['entity_id']} not found")
    wanted = (await json_object(request)).get("parent")
    parent = planning.find_entity(PARENT_TYPES[kind], str(wanted)) if wanted is not None else None
    if wanted is not None and parent is None:
        raise ApiError(404, f"No {PARENT_TYPES[kind]} {wanted} to put {kind} {entity.id} under")
    entity.parent = parent.id if parent is not None else None
    return Response(status_code=204)


FIELD = "followingMaillists"


async def follow_maillists(request: Request) -> Response:
    call = open_call(request, admin=True)
    issue = find_issue(call, request.path_params["key"])
    lists = (await json_object(request)).get(FIELD)
    if not isinstance(lists, list) or not all(isinstance(item, str) for item in lists):
        raise ApiError(400, f"{FIELD} must be a list of mail addresses", errors={FIELD: ""})
    org = call.org
    org.records(issue)  # a generated issue's records come from its header before it changes
    extra, refs = org.values(issue)
    kept = tuple((name, value) for name, value in extra if name != FIELD)
    org.set_values(issue, kept + (((FIELD, tuple(lists)),) if lists else ()), refs)
    org.put_issue(replace(issue, updated_at=max(now_ms(), issue.updated_at)))
    return JSONResponse(render.issue(call.view, org.issues[issue.key]))
