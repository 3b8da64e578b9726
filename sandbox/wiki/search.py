"""``POST /search``: pages whose title or content holds a text, as hits, only those the caller
may read.

Body ``{"query": text}`` (``text`` is taken too), ``order_by`` (``relevancy``, the count of
matches; ``creation_date``; ``modified_date``); ``page_size`` or ``limit`` and ``cursor`` in
the query. The cursor is a page number from 1 and, as the spec warns, ``next_cursor`` stays
set after the last hit (even on an empty page), so a client stops at the first page without
hits; it is null only when every hit fits the first page. Choices of the sandbox: matching is
a case-insensitive substring; a new page is found at once (no index delay).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.wiki.context import Call, body_of, invalid, page_size
from haul.sandbox.wiki.model import Page, wiki_time

SNIPPET = 200


def _matches(page: Page, text: str) -> int:
    return page.title.lower().count(text) + page.content.lower().count(text)


def _by_relevancy(page: Page, text: str) -> tuple[int, str]:
    return -_matches(page, text), page.slug


def _by_creation(page: Page, text: str) -> tuple[int, str]:
    return -page.created_at, page.slug


def _by_modification(page: Page, text: str) -> tuple[int, str]:
    return -page.modified_at, page.slug


ORDERS: dict[str, Callable[[Page, str], tuple[int, str]]] = {
    "relevancy": _by_relevancy,
    "creation_date": _by_creation,
    "modified_date": _by_modification,
}


def _hit(page: Page) -> dict[str, Any]:
    return {
        "slug": page.slug,
        "title": page.title,
        "content": page.content[:SNIPPET],
        "type": "page",
        "modified_at": wiki_time(page.modified_at),
        "url": f"/{page.slug}",
    }


async def search(request: Request) -> Response:
    call = Call(request)
    body = await body_of(request)
    text = str(body.get("query") or body.get("text") or "").strip().lower()
    if not text:
        raise invalid("query", "value_error.missing", "field required")
    order = body.get("order_by") or "relevancy"
    if order not in ORDERS:
        raise invalid("order_by", "type_error.enum", ", ".join(ORDERS))
    found = [page for page in call.wiki.pages.values() if _matches(page, text)]
    hits = sorted(call.readable(found), key=lambda page: ORDERS[order](page, text))
    size = page_size(request)
    try:
        number = int(request.query_params.get("cursor") or 1)
    except ValueError:
        raise invalid("cursor", "type_error.integer", "a page number from 1") from None
    if number < 1:
        raise invalid("cursor", "value_error.number.not_ge", "a page number from 1")
    start = (number - 1) * size
    only_page = number == 1 and len(hits) <= size
    return JSONResponse(
        {
            "results": [_hit(page) for page in hits[start : start + size]],
            "next_cursor": None if only_page else str(number + 1),
            "prev_cursor": str(number - 1) if number > 1 else None,
        }
    )


API = (("POST", "/search", search),)
