"""WikiClient over a mock wiki: paths, bodies, cursors, the part-by-part upload, grid locks."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from haul.connectors.errors import AmbiguousWriteError, ConflictError, NotFoundError
from haul.connectors.wiki import MIN_PART_SIZE, WikiClient, _part_sizes

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

WIKI = "https://wiki.test/v1"


class Wiki:
    """A mock wiki: routes "METHOD /path" (after /v1) to handlers; records requests."""

    def __init__(self, routes: dict) -> None:
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        route = f"{request.method} {request.url.path.removeprefix('/v1')}"
        if route not in self.routes:
            return httpx.Response(
                404, json={"error_code": "NOT_FOUND", "message": [f"no route {route}"]}
            )
        reply = self.routes[route]
        return reply(request) if callable(reply) else reply

    def sent(self, route: str) -> list[httpx.Request]:
        method, path = route.split(" ", 1)
        return [r for r in self.requests if r.method == method and r.url.path == "/v1" + path]


def client_for(make_core, wiki: Wiki, **options) -> WikiClient:
    return WikiClient(make_core(wiki, service="wiki", base_url=WIKI), **options)


def test_part_sizes_split_a_file_into_parts_of_the_allowed_size():
    part = MIN_PART_SIZE
    assert _part_sizes(0, part) == [0]
    assert _part_sizes(10, part) == [10]
    assert _part_sizes(part, part) == [part]
    assert _part_sizes(2 * part + 3, part) == [part, part, 3]
    with pytest.raises(ValueError, match="part_size"):
        _part_sizes(10, part - 1)


async def test_descendants_follow_next_cursor_until_null(make_core):
    """Each page asks again with the cursor it was given; a null cursor ends the listing."""

    def descendants(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor")
        if cursor is None:
            return httpx.Response(
                200,
                json={
                    "results": [{"id": 1, "slug": "a"}],
                    "next_cursor": "c2",
                    "prev_cursor": None,
                },
            )
        assert cursor == "c2"
        return httpx.Response(
            200,
            json={"results": [{"id": 2, "slug": "a/b"}], "next_cursor": None, "prev_cursor": "c1"},
        )

    wiki = Wiki({"GET /pages/descendants": descendants})
    async with client_for(make_core, wiki) as client:
        pages = [page async for page in client.iter_descendants("a")]
    assert [page["slug"] for page in pages] == ["a", "a/b"]
    first = wiki.requests[0].url.params
    assert (first["slug"], first["include_self"], first["page_size"]) == ("a", "true", "100")


async def test_a_missing_page_is_none_and_the_page_read_asks_for_its_content(make_core):
    def page(request: httpx.Request) -> httpx.Response:
        if request.url.params["slug"] == "there":
            return httpx.Response(200, json={"id": 5, "slug": "there", "content": "# hi"})
        return httpx.Response(404, json={"error_code": "NOT_FOUND", "message": ["No page."]})

    wiki = Wiki({"GET /pages": page})
    async with client_for(make_core, wiki) as client:
        assert (await client.find_page("there"))["content"] == "# hi"
        assert await client.find_page("gone") is None
        with pytest.raises(NotFoundError, match="No page"):
            await client.get_page("gone")
    params = wiki.requests[0].url.params
    assert params["fields"] == "content,attributes"
    assert params["raise_on_redirect"] == "true"


async def test_upload_sends_parts_finishes_and_attaches(make_core, tmp_path):
    """A file over one part goes as numbered parts of the configured size, then attach."""
    data = bytes(range(256)) * (MIN_PART_SIZE // 256) + b"tail"
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    parts: dict[int, bytes] = {}
    fail_once = {2}

    def upload_part(request: httpx.Request) -> httpx.Response:
        number = int(request.url.params["part_number"])
        if number in fail_once:  # a part that fails is sent again alone
            fail_once.discard(number)
            return httpx.Response(503)
        parts[number] = request.content
        return httpx.Response(200, json={"session_id": "s1", "status": "in_progress"})

    wiki = Wiki(
        {
            "POST /upload_sessions": httpx.Response(
                200, json={"session_id": "s1", "status": "not_started"}
            ),
            "PUT /upload_sessions/s1/upload_part": upload_part,
            "POST /upload_sessions/s1/finish": httpx.Response(
                200, json={"session_id": "s1", "status": "finished"}
            ),
            "POST /pages/7/attachments": httpx.Response(
                200, json={"results": [{"id": 3, "name": "big.bin", "size": str(len(data))}]}
            ),
        }
    )
    async with client_for(make_core, wiki, part_size=MIN_PART_SIZE) as client:
        attached = await client.upload(7, file_name="big.bin", path=path)
    assert attached["id"] == 3
    assert json.loads(wiki.sent("POST /upload_sessions")[0].content) == {
        "file_name": "big.bin",
        "file_size": len(data),
    }
    assert sorted(parts) == [1, 2]
    assert len(parts[1]) == MIN_PART_SIZE
    assert hashlib.sha256(parts[1] + parts[2]).digest() == hashlib.sha256(data).digest()
    assert len(wiki.sent("PUT /upload_sessions/s1/upload_part")) == 3  # part 2 twice
    assert json.loads(wiki.sent("POST /pages/7/attachments")[0].content) == {
        "upload_sessions": ["s1"]
    }


async def test_a_dropped_finish_is_settled_by_reading_the_session(make_core, tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"hello")

    def finish(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("server disconnected", request=request)

    wiki = Wiki(
        {
            "POST /upload_sessions": httpx.Response(200, json={"session_id": "s9"}),
            "PUT /upload_sessions/s9/upload_part": httpx.Response(200, json={}),
            "POST /upload_sessions/s9/finish": finish,
            "GET /upload_sessions/s9": httpx.Response(200, json={"status": "finished"}),
            "POST /pages/1/attachments": httpx.Response(200, json={"results": [{"id": 4}]}),
        }
    )
    async with client_for(make_core, wiki) as client:
        assert (await client.upload(1, file_name="f.txt", path=path))["id"] == 4


async def test_a_session_whose_reply_was_lost_is_left_and_another_opened(make_core, tmp_path):
    """Only the session the client heard of is attached: the lost one shows on no page."""
    path = tmp_path / "f.txt"
    path.write_bytes(b"hello")
    opened: list[str] = []

    def open_session(request: httpx.Request) -> httpx.Response:
        opened.append(f"s{len(opened) + 1}")
        if len(opened) == 1:  # applied, then the connection drops before the reply
            raise httpx.RemoteProtocolError("server disconnected", request=request)
        return httpx.Response(200, json={"session_id": opened[-1], "status": "not_started"})

    wiki = Wiki(
        {
            "POST /upload_sessions": open_session,
            "PUT /upload_sessions/s2/upload_part": httpx.Response(200, json={}),
            "POST /upload_sessions/s2/finish": httpx.Response(200, json={"status": "finished"}),
            "POST /pages/1/attachments": httpx.Response(200, json={"results": [{"id": 4}]}),
        }
    )
    async with client_for(make_core, wiki) as client:
        assert (await client.upload(1, file_name="f.txt", path=path))["id"] == 4
    assert opened == ["s1", "s2"]
    assert json.loads(wiki.sent("POST /pages/1/attachments")[0].content) == {
        "upload_sessions": ["s2"]
    }


async def test_a_dropped_page_create_is_ambiguous_and_not_repeated(make_core):
    def create(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("server disconnected", request=request)

    wiki = Wiki({"POST /pages": create})
    async with client_for(make_core, wiki) as client:
        with pytest.raises(AmbiguousWriteError):
            await client.create_page(slug="a", title="A", content="x")
    assert len(wiki.sent("POST /pages")) == 1


async def test_grid_writes_carry_the_revision_and_a_stale_one_is_a_conflict(make_core):
    def rows(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body["revision"] != "2":
            return httpx.Response(
                409, json={"error_code": "REVISION_CONFLICT", "message": "stale revision"}
            )
        return httpx.Response(200, json={"revision": "3", "results": [{"id": "r1"}]})

    wiki = Wiki({"POST /grids/g1/rows": rows})
    async with client_for(make_core, wiki) as client:
        revision, added = await client.add_rows("g1", "2", [{"name": "x"}])
        assert (revision, added) == ("3", [{"id": "r1"}])
        with pytest.raises(ConflictError, match="stale revision"):
            await client.add_rows("g1", "1", [{"name": "y"}])


async def test_a_page_is_made_with_its_policy_and_its_access_read_grant_change_revoke(make_core):
    """The policy rides on the create; a grant names one holder; change and revoke one entry
    ask not to lock us out; a grant repeated is a conflict; an entry already gone is fine."""
    grants = []

    def grant(request: httpx.Request) -> httpx.Response:
        grants.append(json.loads(request.content))
        if len(grants) > 1:
            return httpx.Response(409, json={"error_code": "ALREADY_EXISTS", "message": ["had"]})
        return httpx.Response(200, json={"id": "a1", **grants[-1]})

    wiki = Wiki(
        {
            "POST /pages": lambda request: httpx.Response(200, json={"id": 7, "slug": "a"}),
            "GET /pages/7": httpx.Response(200, json={"id": 7, "access_policy": {}}),
            "POST /pages/7/access": grant,
            "POST /pages/7/access/a1": httpx.Response(200, json={"id": "a1", "role": "editor"}),
            "DELETE /pages/7/access/a1": httpx.Response(204),
        }
    )
    group = {"group": {"src": "dir", "id": "11"}}
    async with client_for(make_core, wiki) as client:
        policy = {"access_type": "custom"}
        await client.create_page(slug="a", title="A", content="", access_policy=policy)
        await client.get_access(7)
        await client.grant_access(7, group, role="reader")
        with pytest.raises(ConflictError):
            await client.grant_access(7, group, role="reader")
        await client.change_access(7, "a1", role="editor", inheritance="not_inherited")
        await client.revoke_access(7, "a1")
        await client.revoke_access(7, "gone")  # 404: revoked by an attempt whose reply was lost
    assert json.loads(wiki.sent("POST /pages")[0].content)["access_policy"] == policy
    fields = wiki.sent("GET /pages/7")[0].url.params["fields"]
    assert fields == "content,access_policy,access_lists"
    assert grants[0] == {**group, "role": "reader", "inheritance": "inherited"}
    change = wiki.sent("POST /pages/7/access/a1")[0]
    assert change.url.params["prevent_selflock"] == "true"
    assert json.loads(change.content) == {"role": "editor", "inheritance": "not_inherited"}
    assert wiki.sent("DELETE /pages/7/access/a1")[0].url.params["prevent_selflock"] == "true"


async def test_groups_come_from_the_sandbox_route_or_are_unknown(make_core):
    """`groups()` reads ``/_sandbox/groups`` beside the API root; a 404 there is None."""
    listed = {"results": [{"id": "5", "name": "hr", "members": []}], "next_cursor": None}

    def groups(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/_sandbox/groups"
        return httpx.Response(200, json=listed)

    async with WikiClient(make_core(groups, service="wiki", base_url=WIKI)) as client:
        assert await client.groups() == listed["results"]
    async with client_for(make_core, Wiki({})) as client:
        assert await client.groups() is None


async def test_a_move_sends_its_operation_and_waits_for_its_status(make_core):
    """The move names source and target slugs and says whether inherited access is copied;
    the client reads the operation's status and answers how many pages moved."""
    wiki = Wiki(
        {
            "POST /pages/move": httpx.Response(
                200,
                json={
                    "operation": {"id": "op-1", "type": "move"},
                    "dry_run": False,
                    "status_url": "/v1/operations/move/op-1",
                },
            ),
            "GET /operations/move/op-1": httpx.Response(
                200, json={"status": "success", "result": {"page_count": 3}}
            ),
        }
    )
    async with client_for(make_core, wiki) as client:
        assert await client.move_page("a/b", "a/c") == 3
    (sent,) = wiki.sent("POST /pages/move")
    assert json.loads(sent.content) == {
        "operations": [{"source": "a/b", "target": "a/c"}],
        "copy_inherited_access": False,
    }


async def test_resources_list_files_and_grids_and_a_comment_is_edited_and_deleted(make_core):
    wiki = Wiki(
        {
            "GET /pages/7/resources": httpx.Response(
                200,
                json={
                    "results": [{"type": "grid", "item": {"id": "g", "revision": "4"}}],
                    "next_cursor": None,
                },
            ),
            "POST /pages/7/comments/9": httpx.Response(200, json={"id": 9, "body": "new"}),
            "DELETE /pages/7/comments/9": httpx.Response(200, json={"comments_count": 0}),
        }
    )
    async with client_for(make_core, wiki) as client:
        assert [r async for r in client.iter_resources(7)] == [
            {"type": "grid", "item": {"id": "g", "revision": "4"}}
        ]
        assert (await client.update_comment(7, 9, "new"))["body"] == "new"
        await client.delete_comment(7, 9)
    (edit,) = wiki.sent("POST /pages/7/comments/9")
    assert json.loads(edit.content) == {"body": "new"}
    assert len(wiki.sent("DELETE /pages/7/comments/9")) == 1
