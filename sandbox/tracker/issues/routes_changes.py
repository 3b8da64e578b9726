"""The ordinary writes a person makes on an issue (rules in :mod:`changes`): create one, list
and execute transitions, edit and delete comments, worklogs, links and attachments, move an
issue to another queue, and, sandbox only, make an issue vanish."""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms, parse_instant
from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.render_refs import entry_ref
from haul.sandbox.tracker.issues import changes, render
from haul.sandbox.tracker.issues.editing import add_comment
from haul.sandbox.tracker.issues.routes_imports import _single_file
from haul.sandbox.tracker.issues.routes_issues import find_issue
from haul.sandbox.tracker.model import Issue
from haul.sandbox.tracker.workflows.workflows import Transition


def _issue(request: Request, *, admin: bool = False) -> tuple[Call, Issue]:
    call = open_call(request, admin=admin)
    return call, find_issue(call, request.path_params["key"])


def _transition(call: Call, issue: Issue, transition: Transition) -> dict:
    base = f"{call.view.base}/issues/{issue.key}/transitions/{transition.id}"
    status = call.org.statuses.by_key.get(transition.id)
    return {
        "self": base,
        "id": transition.id,
        "display": transition.display,
        "to": entry_ref(call.view, "statuses", transition.id) if status else None,
        "screen": {"self": f"{base}/screen", "id": f"{transition.id}Screen"},
    }


def _transitions(call: Call, issue: Issue) -> list[dict]:
    return [_transition(call, issue, t) for t in changes.transitions_of(call.org, issue)]


async def create_issue(request: Request) -> Response:
    """POST /issues/: a plain create (queue, summary, type, priority, description...)."""
    call = open_call(request)
    body = await json_object(request)
    issue = changes.create_issue(call.org, body, call.user.uid, now_ms())
    return JSONResponse(render.issue(call.view, issue), status_code=201)


async def list_transitions(request: Request) -> Response:
    call, issue = _issue(request)
    return JSONResponse(_transitions(call, issue))


async def get_transition(request: Request) -> Response:
    call, issue = _issue(request)
    wanted = request.path_params["transition"]
    found = next((t for t in changes.transitions_of(call.org, issue) if t.id == wanted), None)
    if found is None:
        raise ApiError(
            404, f"Transition {wanted!r} is not available", errors={"transition": wanted}
        )
    return JSONResponse(_transition(call, issue, found))


async def execute_transition(request: Request) -> Response:
    """POST /issues/{key}/transitions/{id}/_execute: the reply lists the transitions
    available from the new status; the body may set a resolution (and a comment)."""
    call, issue = _issue(request)
    body = await json_object(request)
    transition = request.path_params["transition"]
    moved = changes.execute_transition(call.org, issue, transition, body, call.user.uid, now_ms())
    if isinstance(body.get("comment"), str) and body["comment"]:
        add_comment(call.org, moved, {"text": body["comment"]}, call.user.uid, now_ms())
        moved = call.org.issues[moved.key]
    return JSONResponse(_transitions(call, moved))


async def patch_comment(request: Request) -> Response:
    """PATCH /issues/{key}/comments/{comment_id} {"text": ...}."""
    call, issue = _issue(request)
    text = (await json_object(request)).get("text")
    if not isinstance(text, str) or not text:
        raise ApiError(400, "'text' must be a non-empty string")
    comment = changes.find_comment(call.org, issue, request.path_params["comment_id"])
    fresh = changes.edit_comment(call.org, issue, comment, text, call.user.uid, now_ms())
    return JSONResponse(render.comment(call.view, fresh, comment))


async def delete_comment(request: Request) -> Response:
    call, issue = _issue(request)
    comment = changes.find_comment(call.org, issue, request.path_params["comment_id"])
    changes.delete_comment(call.org, issue, comment, call.user.uid, now_ms())
    return Response(status_code=200)


async def create_worklog(request: Request) -> Response:
    """POST /issues/{key}/worklog {duration, start?, comment?}: 201 with the record."""
    call, issue = _issue(request)
    body = await json_object(request)
    fresh, record = changes.add_worklog(call.org, issue, body, call.user.uid, now_ms())
    return JSONResponse(render.worklog(call.view, fresh, record), status_code=201)


async def get_worklog(request: Request) -> Response:
    call, issue = _issue(request)
    record = changes.find_worklog(call.org, issue, request.path_params["worklog_id"])
    return JSONResponse(render.worklog(call.view, issue, record))


async def patch_worklog(request: Request) -> Response:
    call, issue = _issue(request)
    body = await json_object(request)
    record = changes.find_worklog(call.org, issue, request.path_params["worklog_id"])
    fresh = changes.edit_worklog(call.org, issue, record, body, call.user.uid, now_ms())
    return JSONResponse(render.worklog(call.view, fresh, record))


async def delete_worklog(request: Request) -> Response:
    call, issue = _issue(request)
    record = changes.find_worklog(call.org, issue, request.path_params["worklog_id"])
    changes.delete_worklog(call.org, issue, record, call.user.uid, now_ms())
    return Response(status_code=200)


async def create_link(request: Request) -> Response:
    """POST /issues/{key}/links {relationship, issue}: 201 with the link as seen from here."""
    call, issue = _issue(request)
    link = changes.add_link(call.org, issue, await json_object(request), call.user.uid, now_ms())
    return JSONResponse(render.link(call.view, link, link.source), status_code=201)


async def delete_link(request: Request) -> Response:
    call, issue = _issue(request)
    changes.delete_link(call.org, issue, request.path_params["link_id"], call.user.uid, now_ms())
    return Response(status_code=200)


async def create_attachment(request: Request) -> Response:
    """POST /issues/{key}/attachments?filename= (multipart, one file part)."""
    call, issue = _issue(request)
    data = await _single_file(request)
    if data is None:
        raise ApiError(400, "A multipart/form-data body with one file part is required")
    name = request.query_params.get("filename") or "file"
    mimetype = changes.guess_mimetype(name)
    found = changes.add_attachment(call.org, issue, name, data, mimetype, call.user.uid, now_ms())
    return JSONResponse(render.attachment(call.view, call.org.issues[issue.key], found), 201)


async def delete_attachment(request: Request) -> Response:
    call, issue = _issue(request)
    wanted = request.path_params["attachment_id"]
    changes.delete_attachment(call.org, issue, wanted, call.user.uid, now_ms())
    return Response(status_code=200)


async def move_issue(request: Request) -> Response:
    """POST /issues/{key}/_move?queue=NEW[&initialStatus=true]: the issue under its new key."""
    call, issue = _issue(request)
    queue = request.query_params.get("queue")
    if not queue:
        raise ApiError(400, "The target queue is required", errors={"queue": ""})
    initial = request.query_params.get("initialStatus", "").lower() == "true"
    moved = changes.move_issue(
        call.org, issue, queue, call.user.uid, now_ms(), initial_status=initial
    )
    return JSONResponse(render.issue(call.view, moved))


async def restamp_issue(request: Request) -> Response:
    """PUT /_sandbox/issues/{key}/updated_at {"updatedAt": ...} (admin): the issue's update
    time as a clock that ran ahead leaves it (in the future, say); nothing else changes."""
    call, issue = _issue(request, admin=True)
    when = parse_instant((await json_object(request)).get("updatedAt"))
    if when is None:
        raise ApiError(400, "updatedAt must be a timestamp", errors={"updatedAt": ""})
    call.org.records(issue)  # a generated issue's records come from its header before it changes
    call.org.put_issue(replace(issue, updated_at=when))
    return JSONResponse(render.issue(call.view, call.org.issues[issue.key]))


async def vanish_issue(request: Request) -> Response:
    """DELETE /_sandbox/issues/{key} (admin): the issue is gone, as if an admin purged it."""
    call, issue = _issue(request, admin=True)
    changes.delete_issue(call.org, issue)
    return Response(status_code=200)
