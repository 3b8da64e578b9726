"""How listings page: one small contract, one short class per kind of pagination.

A paginator is a fresh, stateful object per listing. ``paginate`` drives it::

    begin(request)                     shape the first request (page size, scroll options)
    loop:
        response = send(request)
        body = response.json()               parsed once per page
        records = extract_records(body)
        update_state(response, body, records)  read the cursor; sets has_next_page
        yield records
        update_request(request)           put the cursor into the next request

A paginator raises PageProblem for a page it cannot follow (a cursor or page it has seen
before, a body of the wrong shape); the driver turns that into PaginationError with the
request's context, so a confused server ends the run instead of looping forever.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import httpx

from haul.connectors.decoding import decode_json, json_problem
from haul.connectors.errors import HaulHTTPError, PaginationError, ScrollExpiredError

if TYPE_CHECKING:
    from haul.connectors.http import HttpCore


@dataclass
class PageRequest:
    """The part of a page request a paginator may change: the path and the query."""

    path: str
    params: dict[str, Any] = field(default_factory=dict)


class PageProblem(Exception):
    """A page the paginator cannot follow; reported as PaginationError by the driver."""


class Paginator:
    """The contract, with defaults: the reply body (or ``body[records_key]``) is the page."""

    records_key: str | None = None

    def __init__(self) -> None:
        self.has_next_page = True
        self._seen: set[Hashable] = set()
        self._begun = False

    def begin(self, request: PageRequest) -> None:
        """Start the one listing this paginator serves."""
        if self._begun:
            raise RuntimeError("a paginator serves one listing; make a fresh one")
        self._begun = True
        self.init_request(request)

    def init_request(self, request: PageRequest) -> None:
        """Add the first request's paging parameters."""

    def extract_records(self, body: Any) -> list[Any]:
        """The records of one page's decoded body."""
        if self.records_key is None:
            records = body
        else:
            records = body.get(self.records_key) if isinstance(body, dict) else None
        if not isinstance(records, list):
            where = f"under {self.records_key!r}" if self.records_key else "as the body"
            raise PageProblem(f"expected a list {where}, got {type(records).__name__}")
        return records

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        """Read the next cursor from this page; clear has_next_page at the end."""
        raise NotImplementedError

    def update_request(self, request: PageRequest) -> None:
        """Point ``request`` at the next page."""
        raise NotImplementedError

    def on_error(self, error: HaulHTTPError) -> HaulHTTPError:
        """The error to raise when a page request fails (by default, the same)."""
        return error

    def remember(self, marker: Hashable, what: str) -> None:
        """Note a cursor (or page) as seen; raise PageProblem on the second sighting."""
        if marker in self._seen:
            raise PageProblem(f"the server repeated {what} {marker!r}")
        self._seen.add(marker)


class ScrollPaginator(Paginator):
    """Tracker scroll: ``X-Scroll-Id`` -> ``?scrollId=``; ends without the header or records."""

    def __init__(self, *, per_scroll: int, ttl_ms: int, scroll_type: str = "sorted") -> None:
        super().__init__()
        self.ttl_ms = ttl_ms
        self.options = {
            "scrollType": scroll_type,
            "perScroll": per_scroll,
            "scrollTTLMillis": ttl_ms,
        }
        self.scrolls: dict[str, str] = {}  # every scrollId seen -> its scrollToken, for _clear
        self.scroll_id: str | None = None

    def init_request(self, request: PageRequest) -> None:
        request.params.update(self.options)

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        self.scroll_id = response.headers.get("X-Scroll-Id") or None
        self.has_next_page = bool(self.scroll_id and records)
        if self.scroll_id:
            self.scrolls[self.scroll_id] = response.headers.get("X-Scroll-Token", "")
        if self.has_next_page:
            # an id may legitimately stay the same across pages (search engines reuse their
            # scroll context); the same id with the same page again is a loop
            self.remember((self.scroll_id, page_fingerprint(records)), "scroll page")

    def update_request(self, request: PageRequest) -> None:
        request.params.pop("scrollType", None)
        request.params.pop("perScroll", None)
        # the TTL goes on every request: each one keeps a slow consumer's scroll alive
        request.params.update(scrollId=self.scroll_id, scrollTTLMillis=self.ttl_ms)

    def on_error(self, error: HaulHTTPError) -> HaulHTTPError:
        if self.scroll_id and error.status in (400, 404):
            self.scrolls.clear()  # gone on the server: nothing left to release
            message = f"scroll expired or unknown: {error.message}"
            return ScrollExpiredError(message, **error.context())
        return error


class PageNumberPaginator(Paginator):
    """``?page=&perPage=``; ``X-Total-Pages`` wins over short pages, else ``hasNext``."""

    def __init__(self, *, per_page: int, records_key: str | None = None) -> None:
        super().__init__()
        self.per_page = per_page
        self.records_key = records_key
        self.page = 1

    def init_request(self, request: PageRequest) -> None:
        request.params.update(page=self.page, perPage=self.per_page)

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        if not records:
            self.has_next_page = False
            return
        self.remember(page_fingerprint(records), "page")
        total_pages = response.headers.get("X-Total-Pages")
        if total_pages is not None:
            self.has_next_page = self.page < int(total_pages)
        elif isinstance(body, dict) and "hasNext" in body:
            self.has_next_page = bool(body["hasNext"])
        else:  # no hint at all: only a full page can have a successor
            self.has_next_page = len(records) >= self.per_page

    def update_request(self, request: PageRequest) -> None:
        self.page += 1
        request.params["page"] = self.page


class OffsetLimitPaginator(Paginator):
    """Forms surveys: ``?offset=&limit=`` over ``{links, result}``, until a short page."""

    def __init__(self, *, limit: int, records_key: str = "result") -> None:
        super().__init__()
        self.limit = limit
        self.records_key = records_key
        self.offset = 0

    def init_request(self, request: PageRequest) -> None:
        request.params.update(offset=self.offset, limit=self.limit)

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        if records:
            self.remember(page_fingerprint(records), "page")
        self.has_next_page = len(records) >= self.limit

    def update_request(self, request: PageRequest) -> None:
        self.offset += self.limit
        request.params["offset"] = self.offset


class RelativeIdPaginator(Paginator):
    """Tracker relative listings: follow ``Link: <...>; rel="next"`` by its query string only.

    The tracker prints these links without a scheme (``<host:port/v3/...?id=9&perPage=50>``),
    so they cannot be followed as URLs; the query is merged onto our own request.
    """

    def __init__(self) -> None:
        super().__init__()
        self.next_query: dict[str, str] = {}

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        link = response.links.get("next")
        self.has_next_page = bool(link and records)
        if link and self.has_next_page:
            self.next_query = query_of(link["url"])
            self.remember(tuple(sorted(self.next_query.items())), "next link")

    def update_request(self, request: PageRequest) -> None:
        request.params.update(self.next_query)


class FromCursorPaginator(Paginator):
    """Tracker entities' ``_relative`` listings: ``{<records_key>: [...], hasNext}``; the next
    page starts after the last record's id (``?from=<id>``, exclusive)."""

    def __init__(self, *, records_key: str, per_page: int = 100) -> None:
        super().__init__()
        self.records_key = records_key
        self.per_page = per_page
        self.cursor: str | None = None

    def init_request(self, request: PageRequest) -> None:
        request.params["perPage"] = self.per_page

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        self.has_next_page = bool(body.get("hasNext") and records)
        if self.has_next_page:
            last = records[-1]
            self.cursor = str(last.get("id")) if isinstance(last, dict) else None
            if self.cursor is None:
                raise PageProblem("a record without an id: no cursor to page on")
            self.remember(self.cursor, "cursor")

    def update_request(self, request: PageRequest) -> None:
        request.params["from"] = self.cursor


class NextCursorPaginator(Paginator):
    """Wiki: ``{"results": [...], "next_cursor": c}`` -> ``?cursor=c``; a null cursor ends."""

    def __init__(self, *, records_key: str = "results") -> None:
        super().__init__()
        self.records_key = records_key
        self.cursor: str | None = None

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        self.cursor = body.get("next_cursor")
        self.has_next_page = bool(self.cursor)
        if self.cursor:
            self.remember(self.cursor, "cursor")

    def update_request(self, request: PageRequest) -> None:
        request.params["cursor"] = self.cursor


class NextUrlPaginator(Paginator):
    """Forms: body ``next.next_url`` -> its query string onto our own path.

    The link points at a retired ``/v3`` route, so only its query (``id=...``) is carried
    over; our own filters stay in the request.
    """

    def __init__(self, *, records_key: str = "answers") -> None:
        super().__init__()
        self.records_key = records_key
        self.next_query: dict[str, str] = {}

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        next_url = (body.get("next") or {}).get("next_url")
        self.has_next_page = bool(next_url)
        if next_url:
            self.next_query = query_of(next_url)
            self.remember(tuple(sorted(self.next_query.items())), "next_url")

    def update_request(self, request: PageRequest) -> None:
        request.params.update(self.next_query)


async def paginate(
    core: HttpCore,
    method: str,
    path: str,
    paginator: Paginator,
    *,
    params: dict[str, Any] | None = None,
    json: Any = None,
) -> AsyncIterator[list[Any]]:
    """Yield the non-empty pages of one listing, requesting each only when the last is used.

    Every page is a read (POST searches re-send the same ``json`` body each time).
    """
    request = PageRequest(path, dict(params or {}))
    paginator.begin(request)
    while True:
        try:
            response = await core.request(
                method, request.path, params=request.params, json=json, write=False
            )
        except HaulHTTPError as error:
            replacement = paginator.on_error(error)
            if replacement is error:
                raise
            raise replacement from error
        try:
            body = _page_body(response)
            records = paginator.extract_records(body)
            paginator.update_state(response, body, records)
        except (PageProblem, ValueError, AttributeError) as problem:
            # ValueError: a body that is not JSON, a header that is not a number;
            # AttributeError: a body that is not the object the paginator expects
            raise _pagination_error(core, response, problem) from problem
        if records:
            yield records
        if not paginator.has_next_page:
            return
        paginator.update_request(request)


def _page_body(response: httpx.Response) -> Any:
    """The page's JSON; ValueError saying in plain words what is wrong with it if it is not."""
    try:
        return decode_json(response.content)
    except (ValueError, UnicodeDecodeError) as exc:
        kind = response.headers.get("Content-Type", "")
        raise ValueError(json_problem(response.content, kind, exc)) from exc


def _pagination_error(
    core: HttpCore, response: httpx.Response, problem: Exception
) -> PaginationError:
    request = response.request
    return PaginationError(
        f"{core.service} {request.method} {request.url}: {problem}",
        service=core.service,
        method=request.method,
        url=str(request.url),
        status=response.status_code,
        response=response,
    )


def query_of(link: str) -> dict[str, str]:
    """The query parameters of a link, whatever its scheme, host or path (or their absence)."""
    query = link.partition("?")[2].partition("#")[0]
    return dict(parse_qsl(query, keep_blank_values=True))


def page_fingerprint(records: list[Any]) -> Hashable:
    """A cheap identity for a page: its size and the ids at both ends (else its content)."""
    if not records:
        return ()
    first, last = records[0], records[-1]
    if isinstance(first, dict) and isinstance(last, dict) and "id" in first and "id" in last:
        return (len(records), str(first["id"]), str(last["id"]))
    return json.dumps(records, sort_keys=True, default=str)
