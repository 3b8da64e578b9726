"""Issue endpoints: myself, search (pages and scroll), count, scroll clear, get, edit, unique."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import format_duration, now_ms
from haul.sandbox.tracker.api.context import Call, json_body, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError, issue_not_found
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.issues import render
from haul.sandbox.tracker.issues.editing import (
    add_checklist_items,
    delete_checklist_items,
    edit_checklist_item,
    edit_issue,
)
from haul.sandbox.tracker.model import Issue
from haul.sandbox.tracker.search.paging import int_param, page_of
from haul.sandbox.tracker.search.query import Selection, parse_body, sort_issues
from haul.sandbox.tracker.search.scroll import ScrollPage, scrolls_of
from haul.sandbox.tracker.structure import render_structure
from haul.sandbox.tracker.structure.queue_access import may_read

MAX_PER_SCROLL = 1000
DEFAULT_TTL_MS = 60_000


async def myself(request: Request) -> Response:
    call = open_call(request)
    return JSONResponse(render_structure.user(call.view, call.user))


def find_issue(call: Call, key: str) -> Issue:
    issue = call.org.find_issue(key)
    if issue is None:
        raise issue_not_found(key)
    if not call.admin and not may_read(call.org, issue.queue, call.user):
        raise ApiError(403, f"You have no access to issue {key}: its queue is not readable to you")
    return issue


async def search(request: Request) -> Response:
    """POST /issues/_search: page pagination, or a scroll when scrollType/scrollId is given."""
    call = open_call(request)
    body = await json_body(request, default={})
    params = request.query_params
    if params.get("scrollId"):
        return _scroll_next(request, call, params["scrollId"])
    selection = parse_body(body)
    selection.linked_queues = linked_queues_of(request, call)
    if params.get("scrollType") is not None:
        if selection.kind in ("queue", "keys"):
            raise ApiError(400, "Scroll is not supported for a queue or keys request")
        return _scroll_open(request, call, selection)
    hits = sort_issues(_matching(call, selection), selection, by_update=False)
    page = page_of(request, hits)
    expand = _expand(request)
    return JSONResponse(
        [_issue_body(call, hit, expand) for hit in page.items], headers=page.headers
    )


async def count(request: Request) -> Response:
    """POST /issues/_count: a bare JSON number, never capped."""
    call = open_call(request)
    selection = parse_body(await json_body(request, default={}))
    selection.linked_queues = linked_queues_of(request, call)
    return JSONResponse(len(_matching(call, selection)))


def _matching(call: Call, selection: Selection) -> list[Issue]:
    """The issues the selection matches, of the queues the caller may read."""
    hidden = {q for q in call.org.queues if not call.admin and not may_read(call.org, q, call.user)}
    return [
        issue
        for issue in call.org.issues.values()
        if issue.queue not in hidden and selection.matches(issue)
    ]


def _scroll_open(request: Request, call: Call, selection: Selection) -> Response:
    scroll_type = request.query_params["scrollType"]
    if scroll_type not in ("sorted", "unsorted"):
        raise ApiError(400, "scrollType must be 'sorted' or 'unsorted'")
    per_scroll = int_param(request, "perScroll", 100, high=MAX_PER_SCROLL)
    ttl = int_param(request, "scrollTTLMillis", DEFAULT_TTL_MS)
    hits = sort_issues(_matching(call, selection), selection, by_update=scroll_type == "sorted")
    page = scrolls_of(request).open(
        call.org.id, hits, per_scroll=per_scroll, ttl_ms=ttl, scroll_type=scroll_type
    )
    return _scroll_reply(request, call, page)


def _scroll_next(request: Request, call: Call, scroll_id: str) -> Response:
    ttl = int_param(request, "scrollTTLMillis", 0, low=0) or None
    page = scrolls_of(request).page(call.org.id, scroll_id, ttl)
    if page is None:
        raise ApiError(
            404, f"Scroll {scroll_id} has expired or is unknown", errors={"scrollId": scroll_id}
        )
    return _scroll_reply(request, call, page)


def _scroll_reply(request: Request, call: Call, page: ScrollPage) -> Response:
    session = page.session
    base = f"{request.url.scheme}://{request.url.netloc}{request.url.path}"
    first = urlencode(
        {
            "scrollType": session.scroll_type,
            "perScroll": session.per_scroll,
            "scrollTTLMillis": session.ttl_ms,
        }
    )
    links = [f'<{base}?{first}>; rel="first"']
    headers = {"X-Total-Count": str(page.total)}
    if page.next_id and page.next_token:
        following = urlencode(
            {
                "scrollTTLMillis": session.ttl_ms,
                "scrollId": page.next_id,
                "scrollToken": page.next_token,
            }
        )
        links.append(f'<{base}?{following}>; rel="next"')
        headers |= {"X-Scroll-Id": page.next_id, "X-Scroll-Token": page.next_token}
    headers["Link"] = ", ".join(links)
    expand = _expand(request)
    return JSONResponse([_issue_body(call, hit, expand) for hit in page.hits], headers=headers)


async def clear_scroll(request: Request) -> Response:
    """POST /system/search/scroll/_clear with ``{scrollId: scrollToken, ...}``."""
    open_call(request)
    body = await json_object(request)
    scrolls_of(request).clear([str(scroll_id) for scroll_id in body])
    return JSONResponse({})


async def get_issue(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    return JSONResponse(_issue_body(call, issue, _expand(request) | {"records"}))


def _expand(request: Request) -> set[str]:
    return set(request.query_params.get("expand", "").split(",")) - {""}


def _issue_body(call: Call, issue: Issue, expand: set[str]) -> dict:
    """An issue as the service shows it. What comes from its sub-records (the checklist, the
    time spent, with ``expand=attachments`` the attachment refs) is added for a single issue,
    and for search hits when ``expand`` is given: generating a 100 000-issue org's records
    for a plain scroll would cost the sandbox more than it shows (see
    :mod:`sandbox.tracker.model`)."""
    body = render.issue(call.view, issue)
    if not expand:
        return body
    records = call.org.records(issue)
    if records.checklist:
        body["checklistItems"] = [render.checklist_item(call.view, i) for i in records.checklist]
        body["checklistDone"] = sum(item.checked for item in records.checklist)
        body["checklistTotal"] = len(records.checklist)
    spent = sum(worklog.duration_ms for worklog in records.worklogs)
    if spent:
        body["spent"] = format_duration(spent)
    if expand & {"attachments", "all"}:  # the listing's objects, with a display name as refs have
        body["attachments"] = [
            {**render.attachment(call.view, issue, a), "display": a.name}
            for a in records.attachments
        ]
    return body


async def patch_issue(request: Request) -> Response:
    """PATCH /issues/{key}: under the version lock when the caller names the version it read
    (the documented ``version`` query parameter, or the SDK's ``If-Match``): stale is a 409."""
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    check_version(request, issue.version)
    body = await json_object(request)
    updated = edit_issue(call.org, issue, body, call.user.uid, now_ms())
    return JSONResponse(render.issue(call.view, updated))


async def find_by_unique(request: Request) -> Response:
    """POST /issues/_findByUnique?unique=...: the issue created with that unique, or 404."""
    call = open_call(request, admin=True)
    unique = request.query_params.get("unique")
    issue = call.org.find_unique(unique) if unique else None
    if issue is None:
        raise ApiError(404, "Issue does not exist.", errors={"unique": unique or ""})
    return JSONResponse(render.issue(call.view, issue))


async def post_checklist(request: Request) -> Response:
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    body = await json_body(request)
    updated = add_checklist_items(call.org, issue, body, call.user.uid, now_ms())
    return JSONResponse(_issue_body(call, updated, {"records"}))


async def patch_checklist_item(request: Request) -> Response:
    """PATCH /issues/{key}/checklistItems/{item_id}: the issue with its checklist."""
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    body = await json_body(request)
    item = request.path_params["item_id"]
    updated = edit_checklist_item(call.org, issue, item, body, call.user.uid, now_ms())
    return JSONResponse(_issue_body(call, updated, {"records"}))


async def delete_checklist(request: Request) -> Response:
    """DELETE /issues/{key}/checklistItems[/{item_id}]: one item, or the whole checklist."""
    call = open_call(request)
    issue = find_issue(call, request.path_params["key"])
    item = request.path_params.get("item_id")
    updated = delete_checklist_items(call.org, issue, item, call.user.uid, now_ms())
    return JSONResponse(_issue_body(call, updated, {"records"}))


# -- what the "Have Links To Queue" condition sees of an issue's links ---------------------
#
# What the ``"Have Links To Queue"`` condition sees of an issue's links.
#
# The condition matches an issue with a link of any type to an issue of one of the named queues
# (the service's query-filter documentation). A link whose other end sits in a queue the caller
# may not read is not seen by the search: the issue is found only through its other links,
# which is why a client that trusts the condition must audit it. The ``links_missed`` fault
# makes the search miss a share of the issues it should find (see `sandbox.faults`).


def linked_queues_of(request: Request, call: Call) -> Callable[[Issue], set[str]]:
    """Per issue, the queues its links reach that the caller may read (none for a missed one)."""
    fault = request.app.state.faults.served("links_missed")
    missed = fault.rate if fault is not None else 0.0

    def readable(queue: str) -> bool:
        return call.admin or may_read(call.org, queue, call.user)

    def linked_queues(issue: Issue) -> set[str]:
        if missed and _share(issue.key) < missed:
            return set()
        queues = set()
        for link in call.org.links_of(issue.key):
            other = call.org.issues.get(link.target if link.source == issue.key else link.source)
            if other is not None and readable(other.queue):
                queues.add(other.queue)
        return queues

    return linked_queues


def _share(key: str) -> float:
    """A stable number in [0, 1) for an issue key: the same issues are missed every time."""
    digest = hashlib.sha256(f"links_missed:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
