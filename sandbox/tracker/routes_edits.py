"""Sandbox only: replace an attachment's bytes (``PUT /_sandbox/attachments/...``), a damage no
API call can do, so that `haul verify` has something to find. The ordinary edits a person
makes (transitions, comments, worklogs, links...) are in :mod:`routes_changes`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from haul.sandbox.tracker.blobs import StoredBlob
from haul.sandbox.tracker.context import open_call
from haul.sandbox.tracker.errors import ApiError
from haul.sandbox.tracker.routes_issues import find_issue


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
