"""Edits a person makes in the target after a migration, so that `haul verify` has something
to find: edit a comment's text, delete a worklog, execute a status transition (the real API's
shapes), and, sandbox only, replace an attachment's bytes (``PUT /_sandbox/attachments/...``)."""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker import render
from haul.sandbox.tracker.blobs import StoredBlob
from haul.sandbox.tracker.context import json_object, open_call
from haul.sandbox.tracker.errors import ApiError
from haul.sandbox.tracker.importing import runtime_hex_id
from haul.sandbox.tracker.model import ChangelogEntry, FieldChange
from haul.sandbox.tracker.routes_issues import find_issue


async def patch_comment(request: Request) -> Response:
    """PATCH /issues/{key}/comments/{comment_id} {"text": ...}: edit a comment's text."""
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    text = (await json_object(request)).get("text")
    if not isinstance(text, str) or not text:
        raise ApiError(400, "'text' must be a non-empty string")
    wanted = request.path_params["comment_id"]
    comments = call.org.records(issue).comments
    comment = next((c for c in comments if wanted in (str(c.id), c.long_id)), None)
    if comment is None:
        raise ApiError(404, f"Comment {wanted} not found")
    comment.text, comment.updated_at = text, max(now_ms(), comment.updated_at)
    comment.updated_by, comment.version = call.user.uid, comment.version + 1
    return JSONResponse(render.comment(call.view, issue, comment))


async def delete_worklog(request: Request) -> Response:
    """DELETE /issues/{key}/worklog/{worklog_id}: remove a worklog record."""
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    records = call.org.records(issue)
    before = len(records.worklogs)
    wanted = request.path_params["worklog_id"]
    records.worklogs[:] = [w for w in records.worklogs if str(w.id) != wanted]
    if len(records.worklogs) == before:
        raise ApiError(404, f"Worklog {wanted} not found")
    return Response(status_code=204)


async def execute_transition(request: Request) -> Response:
    """POST /issues/{key}/transitions/{status}/_execute: move the issue to that status key,
    logged as an IssueWorkflow change of status and statusStartTime."""
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    status = request.path_params["transition"]
    if status not in call.org.statuses.by_key:
        raise ApiError(400, f"No transition to status {status!r}")
    now = max(now_ms(), issue.status_start)
    history = call.org.records(issue).changelog  # a generated issue's walks to its old status
    moved = replace(
        issue,
        status=status,
        previous_status=issue.status,
        status_start=now,
        version=issue.version + 1,
    )
    call.org.put_issue(moved)
    entry = ChangelogEntry(
        runtime_hex_id(call.org, "changelog"), "IssueWorkflow", call.user.uid, now
    )
    entry.fields += [
        FieldChange("status", "statuses", issue.status, status),
        FieldChange("statusStartTime", "time", issue.status_start, now),
    ]
    history.append(entry)
    return JSONResponse([render.issue(call.view, moved)])


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
