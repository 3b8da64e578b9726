"""Each paginator driven by ``paginate`` over a mock server that speaks its dialect."""

from __future__ import annotations

import json

import httpx
import pytest

from haul.connectors.errors import PaginationError, ScrollExpiredError
from haul.connectors.pagination import (
    NextCursorPaginator,
    NextUrlPaginator,
    PageNumberPaginator,
    RelativeIdPaginator,
    ScrollPaginator,
    paginate,
    query_of,
)

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


class Server:
    """A mock server answering each request with ``reply(request)``; keeps every request."""

    def __init__(self, reply) -> None:
        self.reply = reply
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.reply(request)

    def params(self, n: int) -> dict[str, str]:
        return dict(self.requests[n].url.params)


async def pages_of(core, *args, **kwargs) -> list[list]:
    return [page async for page in paginate(core, *args, **kwargs)]


def issues(*numbers: int) -> list[dict]:
    return [{"id": f"id{n}", "key": f"TEST-{n}"} for n in numbers]


async def test_scroll_opens_then_follows_the_scroll_id_with_the_same_body(make_core):
    """First request carries the scroll options, later ones scrollId + TTL; body re-sent."""
    script = {None: ("s1", issues(1, 2)), "s1": ("s2", issues(3, 4)), "s2": (None, issues(5))}

    def reply(request):
        scroll_id, page = script[request.url.params.get("scrollId")]
        headers = (
            {"X-Scroll-Id": scroll_id, "X-Scroll-Token": f"t-{scroll_id}"} if scroll_id else {}
        )
        return httpx.Response(200, json=page, headers=headers)

    server = Server(reply)
    paginator = ScrollPaginator(per_scroll=2, ttl_ms=5000)
    async with make_core(server) as core:
        body = {"query": "Queue: TEST"}
        pages = await pages_of(core, "POST", "/issues/_search", paginator, json=body)
    assert [len(page) for page in pages] == [2, 2, 1]
    assert server.params(0) == {"scrollType": "sorted", "perScroll": "2", "scrollTTLMillis": "5000"}
    assert server.params(1) == {"scrollId": "s1", "scrollTTLMillis": "5000"}
    assert server.params(2) == {"scrollId": "s2", "scrollTTLMillis": "5000"}
    assert all(json.loads(request.content) == body for request in server.requests)
    assert paginator.scrolls == {"s1": "t-s1", "s2": "t-s2"}
    assert not paginator.has_next_page


async def test_scroll_stops_at_an_empty_page_even_with_a_scroll_id(make_core):
    """An empty page ends the scroll although the server still sent X-Scroll-Id."""
    server = Server(lambda request: httpx.Response(200, json=[], headers={"X-Scroll-Id": "s"}))
    async with make_core(server) as core:
        pages = await pages_of(core, "POST", "/s", ScrollPaginator(per_scroll=5, ttl_ms=1))
    assert pages == []
    assert len(server.requests) == 1


async def test_scroll_that_repeats_its_page_is_a_pagination_error(make_core):
    """The same scroll id with the same page again raises instead of looping."""
    server = Server(lambda r: httpx.Response(200, json=issues(1), headers={"X-Scroll-Id": "s"}))
    async with make_core(server) as core:
        with pytest.raises(PaginationError, match="repeated"):
            await pages_of(core, "POST", "/s", ScrollPaginator(per_scroll=1, ttl_ms=1))
    assert len(server.requests) == 2


async def test_scroll_may_keep_its_id_while_pages_advance(make_core):
    """A constant scroll id is fine as long as the pages move on."""
    pages = iter([issues(1), issues(2), []])
    server = Server(lambda r: httpx.Response(200, json=next(pages), headers={"X-Scroll-Id": "s"}))
    async with make_core(server) as core:
        got = await pages_of(core, "POST", "/s", ScrollPaginator(per_scroll=1, ttl_ms=1))
    assert got == [issues(1), issues(2)]


@pytest.mark.parametrize("status", [404, 400])
async def test_lost_scroll_raises_scroll_expired(make_core, status):
    """404/400 on a scrolled page means the scroll is gone: ScrollExpiredError."""

    def reply(request):
        if "scrollId" in request.url.params:
            return httpx.Response(status, json={"errorMessages": ["scroll expired"]})
        return httpx.Response(200, json=issues(1), headers={"X-Scroll-Id": "s1"})

    paginator = ScrollPaginator(per_scroll=1, ttl_ms=1)
    async with make_core(Server(reply)) as core:
        with pytest.raises(ScrollExpiredError, match="scroll expired") as caught:
            await pages_of(core, "POST", "/issues/_search", paginator)
    assert caught.value.status == status
    assert paginator.scrolls == {}  # nothing left to release


async def test_page_numbers_trust_total_pages_over_short_pages(make_core):
    """A server capping perPage returns short pages; X-Total-Pages still gets all of them."""

    def reply(request):
        page = int(request.url.params["page"])
        return httpx.Response(
            200, json=issues(page * 10, page * 10 + 1), headers={"X-Total-Pages": "3"}
        )

    server = Server(reply)
    async with make_core(server) as core:
        pages = await pages_of(core, "GET", "/queues", PageNumberPaginator(per_page=5))
    assert len(pages) == 3
    assert [server.params(n) for n in range(3)] == [
        {"page": str(n), "perPage": "5"} for n in (1, 2, 3)
    ]


async def test_page_numbers_follow_a_has_next_flag_under_a_records_key(make_core):
    """The users listing: ``{"users": [...], "hasNext": bool}`` without page headers."""

    def reply(request):
        page = int(request.url.params["page"])
        return httpx.Response(200, json={"users": [{"uid": page}], "hasNext": page < 2})

    async with make_core(Server(reply)) as core:
        paginator = PageNumberPaginator(per_page=1, records_key="users")
        pages = await pages_of(core, "GET", "/users", paginator)
    assert pages == [[{"uid": 1}], [{"uid": 2}]]


async def test_page_numbers_without_hints_stop_at_a_short_page(make_core):
    """No header, no flag: a page shorter than perPage is the last one."""
    data = {1: issues(1, 2), 2: issues(3)}
    server = Server(lambda r: httpx.Response(200, json=data[int(r.url.params["page"])]))
    async with make_core(server) as core:
        pages = await pages_of(core, "GET", "/x", PageNumberPaginator(per_page=2))
    assert pages == [issues(1, 2), issues(3)]


async def test_page_numbers_ignored_by_the_server_raise(make_core):
    """A server that serves the same page whatever the number cannot loop us forever."""
    server = Server(lambda r: httpx.Response(200, json=issues(1), headers={"X-Total-Pages": "99"}))
    async with make_core(server) as core:
        with pytest.raises(PaginationError, match="repeated page"):
            await pages_of(core, "GET", "/x", PageNumberPaginator(per_page=1))


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8080/v3", "api.tracker.yandex.net/v2", "localhost:1/v3"]
)
async def test_relative_ids_follow_a_scheme_less_link_by_its_query(make_core, host):
    """The Link carries no scheme: only its query is taken, onto our own path and params."""

    def reply(request):
        if request.url.params.get("id") == "3":
            return httpx.Response(200, json=[{"id": 4}])
        link = (
            f'<{host}/issues/T-1/comments?perPage=2>; rel="first", '
            f'<{host}/issues/T-1/comments?id=3&perPage=2>; rel="next"'
        )
        return httpx.Response(200, json=[{"id": 2}, {"id": 3}], headers={"Link": link})

    server = Server(reply)
    params = {"perPage": 2, "expand": "attachments"}
    async with make_core(server) as core:
        path = "/issues/T-1/comments"
        pages = await pages_of(core, "GET", path, RelativeIdPaginator(), params=params)
    assert pages == [[{"id": 2}, {"id": 3}], [{"id": 4}]]
    second = server.requests[1].url
    assert str(second.copy_with(query=None)) == "https://tracker.test/v3/issues/T-1/comments"
    assert dict(second.params) == {"perPage": "2", "expand": "attachments", "id": "3"}


async def test_relative_ids_repeating_the_next_link_raise(make_core):
    """A next link that points at the same page again is a PaginationError."""
    link = '<h/x?id=1&perPage=1>; rel="next"'
    server = Server(lambda r: httpx.Response(200, json=[{"id": 1}], headers={"Link": link}))
    async with make_core(server) as core:
        with pytest.raises(PaginationError, match="next link"):
            await pages_of(core, "GET", "/x", RelativeIdPaginator())


async def test_next_cursor_is_followed_until_null(make_core):
    """Wiki: next_cursor goes into ``?cursor=``; null ends; our own params stay."""
    cursors = {None: "c1", "c1": "c2", "c2": None}

    def reply(request):
        cursor = request.url.params.get("cursor")
        return httpx.Response(
            200, json={"results": [cursor or "first"], "next_cursor": cursors[cursor]}
        )

    server = Server(reply)
    async with make_core(server, base_url="https://wiki.test/v1") as core:
        pages = await pages_of(
            core, "GET", "/pages/1/comments", NextCursorPaginator(), params={"page_size": 1}
        )
    assert pages == [["first"], ["c1"], ["c2"]]
    assert server.params(2) == {"page_size": "1", "cursor": "c2"}


async def test_next_cursor_repeating_raises(make_core):
    """The same next_cursor twice is a PaginationError."""
    server = Server(lambda r: httpx.Response(200, json={"results": [1], "next_cursor": "same"}))
    async with make_core(server) as core:
        with pytest.raises(PaginationError, match="cursor 'same'"):
            await pages_of(core, "GET", "/x", NextCursorPaginator())


async def test_next_url_query_is_carried_onto_our_own_path(make_core):
    """Forms: next_url names a retired /v3 route; only its query is used, our filters kept."""

    def reply(request):
        if "id" not in request.url.params:
            nxt = {"next_url": "/v3/surveys/abc/answers?id=5&page_size=2"}
            return httpx.Response(200, json={"answers": [{"id": 4}, {"id": 5}], "next": nxt})
        return httpx.Response(200, json={"answers": [{"id": 6}], "columns": []})  # no "next"

    server = Server(reply)
    params = {"page_size": 2, "ordering": "asc"}
    async with make_core(server, base_url="https://forms.test/v1") as core:
        pages = await pages_of(
            core, "GET", "/surveys/abc/answers", NextUrlPaginator(), params=params
        )
    assert pages == [[{"id": 4}, {"id": 5}], [{"id": 6}]]
    second = server.requests[1].url
    assert second.path == "/v1/surveys/abc/answers"
    assert dict(second.params) == {"page_size": "2", "ordering": "asc", "id": "5"}


async def test_next_url_null_ends_and_repeat_raises(make_core):
    """``next: null`` ends the listing; a repeated next_url raises."""
    server = Server(lambda r: httpx.Response(200, json={"answers": [1], "next": None}))
    async with make_core(server) as core:
        assert await pages_of(core, "GET", "/a", NextUrlPaginator()) == [[1]]
    looping = {"answers": [1], "next": {"next_url": "/v3/a?id=1"}}
    async with make_core(Server(lambda r: httpx.Response(200, json=looping))) as core:
        with pytest.raises(PaginationError, match="next_url"):
            await pages_of(core, "GET", "/a", NextUrlPaginator())


async def test_malformed_page_is_a_pagination_error(make_core):
    """An object where a list of records belongs raises PaginationError with the request."""
    server = Server(lambda r: httpx.Response(200, json={"not": "a list"}))
    async with make_core(server) as core:
        with pytest.raises(PaginationError, match="expected a list") as caught:
            await pages_of(core, "GET", "/issues/T-1/worklog", RelativeIdPaginator())
    assert caught.value.url.startswith("https://tracker.test/v3/issues/T-1/worklog")


async def test_a_paginator_serves_one_listing(make_core):
    """Reusing a paginator (whose state belongs to its first listing) is refused."""
    paginator = RelativeIdPaginator()
    async with make_core(Server(lambda r: httpx.Response(200, json=[]))) as core:
        await pages_of(core, "GET", "/x", paginator)
        with pytest.raises(RuntimeError, match="fresh"):
            await pages_of(core, "GET", "/x", paginator)


def test_query_of_ignores_scheme_host_and_fragment():
    """Only the query string of any link form is returned."""
    assert query_of("api.tracker.yandex.net/v2/x?id=5b9a&perPage=50") == {
        "id": "5b9a",
        "perPage": "50",
    }
    assert query_of("https://h/x?a=1&b=#frag") == {"a": "1", "b": ""}
    assert query_of("/v3/x") == {}
