"""The pages themselves, and who calls: ``GET /me``; read a page by slug or id (with the
optional blocks ``fields`` names), create, rewrite (``POST``; ``PATCH`` is 405), append to,
delete (with ``recursive``, answering a recovery token) and recover pages; list a page's
descendants by slug or id.

A slug already taken is 409 ``ALREADY_EXISTS``; restore is ``POST
/pages/recovery_tokens/{token}/recover`` (409 ``ALREADY_EXISTS`` when a slug of the deleted
pages was taken meanwhile). Read a page's access with ``fields=access_policy,access_lists``.
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.wiki import routes_access
from haul.sandbox.wiki.context import (
    Call,
    WikiError,
    body_of,
    invalid,
    listing,
    not_found,
    required,
)
from haul.sandbox.wiki.model import Page, user_json, wiki_time

# the append reply names every optional block of a page, null (as the live reply does)
APPEND_NULLS = dict.fromkeys(
    ("access_lists", "access_policy", "actuality", "attributes", "breadcrumbs", "owner", "redirect")
)
PAGE_FIELDS = {"content", "attributes", "breadcrumbs", "redirect", "actuality", "owner",
               "access_policy", "access_lists"}  # fmt: skip


def page_json(call: Call, page: Page, fields: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": page.id,
        "slug": page.slug,
        "title": page.title,
        "page_type": "page",
    }
    wanted = {f.strip() for f in (fields or "").split(",") if f.strip()}
    unknown = wanted - PAGE_FIELDS
    if unknown:
        raise invalid("fields", "type_error.enum", f"unknown field {sorted(unknown)[0]!r}")
    if wanted:  # the live replies carry the revision (and so the author) with any fields
        body["active_revision"] = {
            "author": user_json(page.author),
            "created_at": wiki_time(page.modified_at),
            "id": page.id,
            "page_type": "wysiwyg",
            "publication": None,
            "revision_draft": None,
        }
    if "content" in wanted:
        body["content"] = page.content
    if "attributes" in wanted:
        body["attributes"] = {
            "created_at": wiki_time(page.created_at),
            "modified_at": wiki_time(page.modified_at),
            "lang": "en",
            "is_readonly": False,
            "comments_count": len(page.comments),
            "comments_enabled": True,
            "keywords": [],
            "is_collaborative": False,
            "is_draft": False,
        }
    if "breadcrumbs" in wanted:
        parts = page.slug.split("/")
        body["breadcrumbs"] = [
            {
                "id": (call.wiki.by_slug.get("/".join(parts[: i + 1])) or 0),
                "title": parts[i],
                "slug": "/".join(parts[: i + 1]),
                "page_exists": "/".join(parts[: i + 1]) in call.wiki.by_slug,
            }
            for i in range(len(parts))
        ]
    if "redirect" in wanted:
        body["redirect"] = None
    if "actuality" in wanted:
        body["actuality"] = {"status": "actual"}
    if "owner" in wanted:
        body["owner"] = user_json(page.author)
    if "access_policy" in wanted:
        body["access_policy"] = routes_access.policy_json(call.wiki, page)
    if "access_lists" in wanted:
        body["access_lists"] = routes_access.access_lists_json(call.wiki, page)
    return body


async def get_page(request: Request) -> Response:
    call = Call(request)
    slug = request.query_params.get("slug")
    if not slug:
        raise invalid("slug", "value_error.missing", "field required")
    page = call.page_at(slug)
    return JSONResponse(page_json(call, page, request.query_params.get("fields")))


async def get_page_by_id(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"])
    return JSONResponse(page_json(call, page, request.query_params.get("fields")))


def _slug(value: str) -> str:
    slug = value.strip().strip("/").lower()
    if not slug or "//" in slug or any(c.isspace() for c in slug):
        raise invalid("slug", "value_error.slug", f"{value!r} is not a valid slug")
    return slug


async def create_page(request: Request) -> Response:
    call = Call(request)
    body = await body_of(request)
    slug = _slug(required(body, "slug"))
    title = required(body, "title")
    if not 1 <= len(title) <= 255:
        raise invalid("title", "value_error.any_str.max_length", "1 to 255 characters")
    content = required(body, "content")
    if slug in call.wiki.by_slug:
        raise WikiError(409, "ALREADY_EXISTS", f"Page {slug} already exists")
    now = now_ms()
    page = Page(call.wiki.new_id(), slug, title, content, call.user, now, now)
    parent = call.wiki.parent_of(page)
    if parent is not None:
        call.allowed(parent, "editor")
    if body.get("access_policy") is not None:
        page.access.policy = routes_access.policy_from(body["access_policy"])
    call.wiki.add_page(page)
    reply = page_json(call, page, request.query_params.get("fields") or "content,breadcrumbs")
    return JSONResponse({**reply, "active_revision": None})


async def update_page(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    body = await body_of(request)
    page.content = required(body, "content")
    if body.get("access_policy") is not None:
        policy = routes_access.policy_from(body["access_policy"])
        call.allowed(page, "extra_editor")
        page.access.policy = policy
    if body.get("title"):
        page.title = str(body["title"])
    page.modified_at = now_ms()
    reply = page_json(call, page, request.query_params.get("fields") or "content")
    return JSONResponse({**reply, "active_revision": None})


async def patch_page(request: Request) -> Response:
    raise WikiError(405, "METHOD_NOT_ALLOWED", "Use POST to update a page")


async def append_content(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    body = await body_of(request)
    content = required(body, "content")
    placements = [name for name in ("body", "section", "anchor") if body.get(name)]
    if len(placements) != 1:
        raise invalid("body", "value_error", "exactly one of body, section, anchor is required")
    top = placements[0] == "body" and (body["body"] or {}).get("location") == "top"
    page.content = content + "\n" + page.content if top else page.content + "\n" + content
    page.modified_at = now_ms()
    return JSONResponse(
        {**APPEND_NULLS, **page_json(call, page, "content"), "active_revision": None}
    )


async def delete_page(request: Request) -> Response:
    call = Call(request)
    page = call.page(request.path_params["idx"], need="editor")
    recursive = request.query_params.get("recursive", "false").lower() == "true"
    gone = call.wiki.subtree(page) if recursive else [page]
    for each in gone:
        call.allowed(each, "editor")
    token = str(uuid.uuid4())
    for each in gone:
        call.wiki.pages.pop(each.id, None)
        call.wiki.by_slug.pop(each.slug, None)
        for grid in each.grids:
            call.wiki.grids.pop(grid.id, None)
    call.wiki.deleted[token] = gone
    return JSONResponse({"recovery_token": token})


async def recover(request: Request) -> Response:
    call = Call(request)
    token = request.path_params["token"]
    gone = call.wiki.deleted.get(token)
    if gone is None:
        raise not_found("recovery token")
    taken = [page.slug for page in gone if page.slug in call.wiki.by_slug]
    if taken:
        raise WikiError(409, "ALREADY_EXISTS", f"Page {taken[0]} exists again: move it first")
    del call.wiki.deleted[token]
    for page in gone:
        call.wiki.add_page(page)
        for grid in page.grids:
            call.wiki.grids[grid.id] = grid
    return JSONResponse({"id": gone[0].id, "slug": gone[0].slug, "pages_count": len(gone)})


def _refs(request: Request, root: Page, call: Call) -> Response:
    include_self = request.query_params.get("include_self", "false").lower() == "true"
    pages = [p for p in call.wiki.subtree(root) if include_self or p.id != root.id]
    pages = call.readable(pages)
    return listing(request, pages, lambda p: {"id": p.id, "slug": p.slug})


async def descendants_by_slug(request: Request) -> Response:
    call = Call(request)
    root = call.page_at(request.query_params.get("slug") or "")
    return _refs(request, root, call)


async def descendants_by_id(request: Request) -> Response:
    call = Call(request)
    return _refs(request, call.page(request.path_params["idx"]), call)


async def me(request: Request) -> Response:
    call = Call(request)
    return JSONResponse(
        {
            "identity": {"uid": str(call.user.uid), "cloud_uid": call.user.cloud_uid},
            "username": call.user.login,
            "home_cluster": "sandbox",
            "org": {"dir_id": call.org.id, "collab_id": f"collab-{call.org.id}"},
        }
    )
