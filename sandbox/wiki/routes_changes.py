"""The changes a person makes to pages beyond writing them: moving a page with its subtree,
and commenting (list a page's comments, add, edit, delete; a comment's thread).

Move (``POST /pages/move``, unpublished upstream) takes ``operations`` of ``{source, target}``
slugs and an explicit ``copy_inherited_access``; it renames the source page and every page
under it (ids, content, attachments, grids and comments stay; ``modified_at`` does not move),
after which the old slugs answer 404. The reply is an operation reference, as the recorded
reply shows; ``GET /operations/move/{id}`` answers ``{status: "success", result:
{page_count}}``. A dry run applies nothing and its operation cannot be polled (404). Choices
where the spec is silent: a target slug already taken is 409 ``ALREADY_EXISTS``, a target
inside the source's own subtree 400; a move is applied at once (it is over when the reply
arrives).

A comment may answer another of the same page (``parent_id``; 400 otherwise); deleting one
answers the page's ``comments_count``. A comment is edited with ``POST /pages/{id}/comments/{comment_id}`` and ``{body}`` (the
spec names no edit; this is the sandbox's choice, the comment keeps its id and time).
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.wiki.context import (
    Call,
    WikiError,
    body_of,
    invalid,
    listing,
    not_found,
    ordered,
    required,
)
from haul.sandbox.wiki.model import Comment, Page, WikiOrg


def _operations(body: dict[str, Any]) -> list[tuple[str, str]]:
    items = required(body, "operations", list)
    if not items:
        raise invalid("operations", "value_error.list.min_items", "at least one")
    pairs = []
    for item in items:
        if not isinstance(item, dict):
            raise invalid("operations", "type_error.dict", "each is {source, target}")
        source = str(required(item, "source")).strip("/").lower()
        target = str(required(item, "target")).strip("/").lower()
        if not target or any(c.isspace() for c in target) or "//" in target:
            raise invalid("target", "value_error.slug", f"{target!r} is not a valid slug")
        pairs.append((source, target))
    return pairs


def _check_move(call: Call, source: str, target: str) -> Page:
    page = call.page_at(source, need="editor")
    if target == source or target.startswith(source + "/"):
        raise invalid("target", "value_error", "a page cannot move under itself")
    if target in call.wiki.by_slug:
        raise WikiError(409, "ALREADY_EXISTS", f"Page {target} already exists")
    for each in call.wiki.subtree(page):
        call.allowed(each, "editor")
    return page


def move_subtree(wiki: WikiOrg, page: Page, target: str) -> int:
    """Rename `page` and every page under it from its slug to `target`; how many moved."""
    source = page.slug
    moved = wiki.subtree(page)
    for each in moved:
        wiki.by_slug.pop(each.slug, None)
    for each in moved:
        each.slug = target + each.slug[len(source) :]
        wiki.by_slug[each.slug] = each.id
    return len(moved)


async def move_pages(request: Request) -> Response:
    call = Call(request)
    body = await body_of(request)
    if not isinstance(body.get("copy_inherited_access"), bool):
        raise invalid(
            "copy_inherited_access", "value_error.missing", "field required (true or false)"
        )
    pairs = _operations(body)
    pages = [(_check_move(call, source, target), target) for source, target in pairs]
    operation = str(uuid.uuid4())
    dry_run = bool(body.get("dry_run"))
    if not dry_run:
        count = sum(move_subtree(call.wiki, page, target) for page, target in pages)
        call.wiki.operations[operation] = {"status": "success", "result": {"page_count": count}}
    return JSONResponse(
        {
            "dry_run": dry_run,
            "operation": {"id": operation, "type": "move"},
            "status_url": f"/v1/operations/move/{operation}",
        }
    )


async def move_status(request: Request) -> Response:
    call = Call(request)
    found = call.wiki.operations.get(request.path_params["task_id"])
    if found is None:
        raise not_found("operation")
    return JSONResponse(found)


async def list_comments(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    items = ordered(request, page.comments, {"created_at": lambda c: (c.created_at, c.id)})
    return listing(request, items, lambda c: {**c.json(), "thread_info": None})


async def create_comment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    body = await body_of(request)
    text = required(body, "body")
    parent = body.get("parent_id")
    if parent is not None and not any(c.id == parent for c in page.comments):
        raise invalid("parent_id", "value_error", f"no comment {parent} on this page")
    comment = Comment(
        call.wiki.new_id(), text, call.user, now_ms(), parent, body.get("inline_text")
    )
    page.comments.append(comment)
    return JSONResponse(comment.json())


async def delete_comment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    cid = request.path_params["cid"]
    before = len(page.comments)
    page.comments = [c for c in page.comments if str(c.id) != cid]
    if len(page.comments) == before:
        raise not_found("comment")
    return JSONResponse({"comments_count": len(page.comments)})


async def comment_thread(request: Request) -> Response:
    call = Call(request)
    call.page(request.path_params["idx"])
    return JSONResponse({"results": [], "next_cursor": None, "prev_cursor": None})


async def edit_comment(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    body = await body_of(request)
    text = required(body, "body")
    for comment in page.comments:
        if str(comment.id) == request.path_params["cid"]:
            if comment.author.uid != call.user.uid:
                call.allowed(page, "editor")  # another's comment: an editor of the page
            comment.body = text
            return JSONResponse(comment.json())
    raise not_found("comment")


API = (
    ("POST", "/pages/move", move_pages),
    ("GET", "/operations/move/{task_id}", move_status),
    ("GET", "/pages/{idx:int}/comments", list_comments),
    ("POST", "/pages/{idx:int}/comments", create_comment),
    ("POST", "/pages/{idx:int}/comments/{cid}", edit_comment),
    ("DELETE", "/pages/{idx:int}/comments/{cid}", delete_comment),
    ("GET", "/pages/{idx:int}/comments/{cid}/thread", comment_thread),
)
