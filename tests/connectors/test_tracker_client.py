"""TrackerClient over a mock tracker: paths, bodies, reply shapes, scroll release, uploads."""

from __future__ import annotations

import io
import json
from contextlib import aclosing

import httpx
import pytest

from haul.connectors.errors import AmbiguousWriteError, NotFoundError, ScrollExpiredError
from haul.connectors.tracker import TrackerClient, search_body

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


class Tracker:
    """A mock tracker: routes "METHOD /path" (after /v3) to handlers; records requests."""

    def __init__(self, routes: dict) -> None:
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        route = (
            f"{request.method} {request.url.raw_path.decode().split('?')[0].removeprefix('/v3')}"
        )
        if route not in self.routes:
            return httpx.Response(404, json={"errorMessages": [f"no route {route}"]})
        reply = self.routes[route]
        return reply(request) if callable(reply) else reply

    def sent(self, route: str) -> list[httpx.Request]:
        method, path = route.split(" ", 1)
        return [r for r in self.requests if r.method == method and r.url.path == "/v3" + path]


def client_for(make_core, tracker: Tracker) -> TrackerClient:
    return TrackerClient(make_core(tracker))


def scroll_reply(request: httpx.Request) -> httpx.Response:
    """Three pages of one issue each, scroll ids s1, s2; the last page has no id."""
    step = {None: 1, "s1": 2, "s2": 3}[request.url.params.get("scrollId")]
    headers = {"X-Scroll-Id": f"s{step}", "X-Scroll-Token": f"t{step}"} if step < 3 else {}
    return httpx.Response(200, json=[{"id": str(step), "key": f"TEST-{step}"}], headers=headers)


async def test_scroll_read_to_the_end_needs_no_release(make_core):
    """A scroll read to its end yields every page and sends no _clear."""
    tracker = Tracker({"POST /issues/_search": scroll_reply})
    async with client_for(make_core, tracker) as client:
        pages = [page async for page in client.scroll_issues(query="Queue: TEST", per_scroll=1)]
    assert [page[0]["key"] for page in pages] == ["TEST-1", "TEST-2", "TEST-3"]
    assert json.loads(tracker.requests[0].content) == {"query": "Queue: TEST"}
    assert tracker.sent("POST /system/search/scroll/_clear") == []


async def test_scroll_closed_early_is_released(make_core):
    """Leaving a scroll before its end posts every scrollId -> scrollToken seen to _clear."""
    tracker = Tracker(
        {
            "POST /issues/_search": scroll_reply,
            "POST /system/search/scroll/_clear": httpx.Response(200),
        }
    )
    client = client_for(make_core, tracker)
    async with client, aclosing(client.scroll_issues(filter={"queue": "TEST"})) as pages:
        async for page in pages:
            if page[0]["key"] == "TEST-2":
                break
    (clear,) = tracker.sent("POST /system/search/scroll/_clear")
    assert json.loads(clear.content) == {"s1": "t1", "s2": "t2"}


async def test_expired_scroll_raises_without_release(make_core):
    """404 on a scrolled page raises ScrollExpiredError; a dead scroll is not released."""

    def reply(request):
        if "scrollId" in request.url.params:
            return httpx.Response(404, json={"errorMessages": ["Scroll expired"]})
        return scroll_reply(request)

    tracker = Tracker({"POST /issues/_search": reply})
    async with client_for(make_core, tracker) as client:
        with pytest.raises(ScrollExpiredError):
            async for _ in client.scroll_issues():
                pass
    assert tracker.sent("POST /system/search/scroll/_clear") == []


async def test_failed_release_does_not_hide_the_listing_outcome(make_core):
    """If _clear itself fails, closing the scroll still succeeds (the TTL ends it)."""
    tracker = Tracker(
        {
            "POST /issues/_search": scroll_reply,
            "POST /system/search/scroll/_clear": httpx.Response(400),
        }
    )
    client = client_for(make_core, tracker)
    async with client, aclosing(client.scroll_issues()) as pages:
        async for _ in pages:
            break
    assert len(tracker.sent("POST /system/search/scroll/_clear")) == 1


def test_search_body_takes_a_query_or_a_filter():
    """One of query/filter, or neither (every issue); both is refused."""
    assert search_body("Queue: A", None) == {"query": "Queue: A"}
    assert search_body(None, {"queue": "A"}) == {"filter": {"queue": "A"}}
    assert search_body(None, None) == {}
    with pytest.raises(ValueError):
        search_body("Queue: A", {"queue": "A"})


async def test_search_pages_by_number_and_count_reads_a_bare_integer(make_core):
    """search_issues yields issues one by one; count_issues parses a bare JSON number."""

    def search(request):
        page = int(request.url.params["page"])
        return httpx.Response(200, json=[{"id": str(page)}], headers={"X-Total-Pages": "2"})

    tracker = Tracker(
        {"POST /issues/_search": search, "POST /issues/_count": httpx.Response(200, text="42")}
    )
    async with client_for(make_core, tracker) as client:
        assert [i["id"] async for i in client.search_issues(query="Queue: A", per_page=1)] == [
            "1",
            "2",
        ]
        assert await client.count_issues(filter={"queue": "A"}) == 42
    assert json.loads(tracker.sent("POST /issues/_count")[0].content) == {"filter": {"queue": "A"}}


async def test_missing_issue_is_not_found_or_none(make_core):
    """get_issue raises NotFoundError; find_issue and find_by_unique answer None."""
    tracker = Tracker({"GET /issues/TEST-1": httpx.Response(200, json={"key": "TEST-1"})})
    async with client_for(make_core, tracker) as client:
        assert (await client.find_issue("TEST-1")) == {"key": "TEST-1"}
        assert await client.find_issue("TEST-2") is None
        with pytest.raises(NotFoundError, match="TEST-2"):
            await client.get_issue("TEST-2")
        assert await client.find_by_unique("u-1") is None
    (lookup,) = tracker.sent("POST /issues/_findByUnique")
    assert lookup.url.params["unique"] == "u-1"


async def test_sub_record_listings_use_their_paths(make_core):
    """Comments (with expand), worklog (singular), changelog, links, attachments, checklist."""
    routes = {
        "GET /issues/T-1/comments": httpx.Response(200, json=[{"id": 1}]),
        "GET /issues/T-1/worklog": httpx.Response(200, json=[{"id": 2}]),
        "GET /issues/T-1/changelog": httpx.Response(200, json=[{"id": "c"}]),
        "GET /issues/T-1/links": httpx.Response(200, json=[{"id": 3}]),
        "GET /issues/T-1/attachments": httpx.Response(200, json=[{"id": "4"}]),
        "GET /issues/T-1/checklistItems": httpx.Response(200, json=[]),
    }
    tracker = Tracker(routes)
    async with client_for(make_core, tracker) as client:
        assert [c async for c in client.iter_comments("T-1", per_page=10)] == [{"id": 1}]
        assert [w async for w in client.iter_worklogs("T-1")] == [{"id": 2}]
        assert [c async for c in client.iter_changelog("T-1")] == [{"id": "c"}]
        assert await client.list_links("T-1") == [{"id": 3}]
        assert await client.list_attachments("T-1") == [{"id": "4"}]
        assert await client.list_checklist("T-1") == []
    comments = tracker.sent("GET /issues/T-1/comments")[0].url.params
    assert dict(comments) == {"perPage": "10", "expand": "attachments"}


async def test_users_and_queues_page_through(make_core):
    """Users come as ``{"users", "hasNext"}``, queues as arrays with X-Total-Pages."""

    def users(request):
        page = int(request.url.params["page"])
        return httpx.Response(200, json={"users": [{"login": f"u{page}"}], "hasNext": page == 1})

    queues = httpx.Response(200, json=[{"key": "A"}, {"key": "B"}], headers={"X-Total-Pages": "1"})
    tracker = Tracker({"GET /users": users, "GET /queues": queues})
    async with client_for(make_core, tracker) as client:
        assert [u["login"] async for u in client.iter_users(per_page=1)] == ["u1", "u2"]
        assert [q["key"] async for q in client.iter_queues()] == ["A", "B"]


async def test_imports_post_to_their_paths_and_keep_reply_shapes(make_core):
    """Issue/comment/link answer objects, the worklog import an array (plural path)."""
    routes = {
        "POST /issues/_import": httpx.Response(201, json={"key": "NEW-1"}),
        "POST /issues/NEW-1/comments/_import": httpx.Response(201, json={"id": 7}),
        "POST /issues/NEW-1/worklogs/_import": httpx.Response(200, json=[{"id": 8}]),
        "POST /issues/NEW-1/links/_import": httpx.Response(201, json={"id": 9}),
        "POST /issues/NEW-1/checklistItems": httpx.Response(200, json={"checklistItems": []}),
    }
    tracker = Tracker(routes)
    async with client_for(make_core, tracker) as client:
        assert await client.import_issue({"queue": "NEW", "summary": "s"}) == {"key": "NEW-1"}
        assert await client.import_comment("NEW-1", {"text": "t"}) == {"id": 7}
        assert await client.import_worklog("NEW-1", {"duration": "PT1H"}) == [{"id": 8}]
        assert await client.import_link("NEW-1", {"relationship": "relates"}) == {"id": 9}
        items = [{"text": "a"}, {"text": "b"}]
        assert await client.add_checklist_items("NEW-1", items) == {"checklistItems": []}
    sent = tracker.sent("POST /issues/NEW-1/checklistItems")[0]
    assert json.loads(sent.content) == items


async def test_import_that_drops_after_sending_is_ambiguous(make_core):
    """A reset connection on an import surfaces as AmbiguousWriteError, sent once."""

    def drop(request):
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    tracker = Tracker({"POST /issues/_import": drop})
    async with client_for(make_core, tracker) as client:
        with pytest.raises(AmbiguousWriteError):
            await client.import_issue({"queue": "A", "summary": "s"})
    assert len(tracker.requests) == 1


class ChunkReads(io.BytesIO):
    """A file that remembers the size of every read, to prove chunked streaming."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads: list[int] = []

    def read(self, size: int | None = -1) -> bytes:
        self.reads.append(size if size is not None else -1)
        return super().read(size)


async def test_attachment_import_streams_a_multipart_file_part(make_core, tmp_path):
    """Part "file", query filename/createdAt/createdBy, the file read in chunks, not whole."""
    data = bytes(range(256)) * 1024  # 256 KiB
    tracker = Tracker(
        {
            "POST /issues/T-1/attachments/_import": httpx.Response(201, json={"id": "1"}),
            "POST /issues/T-1/comments/5/attachments/_import": httpx.Response(
                201, json={"commentId": 5}
            ),
        }
    )
    source = ChunkReads(data)
    path = tmp_path / "report.pdf"
    path.write_bytes(b"%PDF-1.4 tiny")
    async with client_for(make_core, tracker) as client:
        options = {"filename": "отчёт 1.bin", "created_at": "2024-01-01T00:00:00.000+0000"}
        assert await client.import_attachment(
            "T-1", created_by="alice", source=source, **options
        ) == {"id": "1"}
        reply = await client.import_comment_attachment(
            "T-1", 5, filename="report.pdf", created_at="2024-01-02", created_by=42, source=path
        )
    assert reply == {"commentId": 5}
    issue_upload, comment_upload = tracker.requests
    assert dict(issue_upload.url.params) == {
        "filename": "отчёт 1.bin",
        "createdAt": "2024-01-01T00:00:00.000+0000",
        "createdBy": "alice",
    }
    assert issue_upload.headers["Content-Type"].startswith("multipart/form-data")
    assert b'name="file"' in issue_upload.content and data in issue_upload.content
    assert source.reads and all(0 < size <= 64 * 1024 for size in source.reads)
    assert comment_upload.url.params["createdBy"] == "42"
    assert b"%PDF-1.4 tiny" in comment_upload.content


async def test_upload_retried_after_connect_error_sends_the_whole_file_again(make_core):
    """A connect failure is retried; the file is rewound, so the second body is complete."""
    bodies: list[bytes] = []

    def flaky(request):
        bodies.append(request.content)
        if len(bodies) == 1:
            raise httpx.ConnectError("refused")
        return httpx.Response(201, json={"id": "1"})

    tracker = Tracker({"POST /issues/T-1/attachments/_import": flaky})
    async with client_for(make_core, tracker) as client:
        await client.import_attachment(
            "T-1", filename="a.txt", created_at="t", created_by="bob", source=io.BytesIO(b"hello")
        )
    assert len(bodies) == 2 and b"hello" in bodies[1] and bodies[0] == bodies[1]


async def test_download_escapes_the_file_name_and_counts_bytes(make_core):
    """Unicode, spaces and a slash in a file name stay one path segment."""
    tracker = Tracker({})
    tracker.routes["GET /issues/T-1/attachments/77/%D0%B0%20b%2Fc.txt"] = httpx.Response(
        200, content=b"xyz"
    )
    sink = io.BytesIO()
    async with client_for(make_core, tracker) as client:
        assert await client.download_attachment("T-1", "77", "а b/c.txt", sink) == 3
    assert sink.getvalue() == b"xyz"


def test_connect_builds_a_tracker_core():
    """connect() passes org and core options through to a 'tracker' HttpCore."""
    client = TrackerClient.connect(
        base_url="http://h/v3", token="t", cloud_org_id="c", max_attempts=2
    )
    assert client.core.service == "tracker"
    assert client.core.org_id == "c"
    assert repr(client) == "TrackerClient(HttpCore('tracker', 'http://h/v3', org='c'))"


async def test_old_key_of_a_moved_issue_follows_the_redirect(make_core):
    """The tracker redirects a moved issue's old key to its new one; the client follows."""
    moved = httpx.Response(301, headers={"Location": "https://tracker.test/v3/issues/NEW-7"})
    tracker = Tracker(
        {
            "GET /issues/OLD-3": moved,
            "GET /issues/NEW-7": httpx.Response(200, json={"key": "NEW-7"}),
        }
    )
    async with client_for(make_core, tracker) as client:
        assert (await client.get_issue("OLD-3"))["key"] == "NEW-7"
    assert tracker.requests[1].headers["X-Org-ID"] == "123"
