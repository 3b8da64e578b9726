"""The sandbox wiki over real sockets: reply shapes against the recorded live replies, the
rules the notes describe (POST not PATCH, one placement, cursors, upload sessions, the grid
revision lock), faults, and the same seeded trees for the same seed."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.sandbox.wiki.model import PART_MIN
from tests.helpers.sandbox_clients import drain_cursor, wiki_for
from tests.helpers.sandbox_shapes import assert_like_recording


@pytest.fixture(scope="module")
def wiki(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with wiki_for(sandbox, "source") as client:
        yield client


@pytest.fixture(scope="module")
def empty(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with wiki_for(sandbox, "target") as client:
        yield client


def pages_with(client: httpx.Client, root: str, listing: str) -> dict:
    """A page of the tree whose `listing` is not empty."""
    for ref in drain_cursor(client, "/pages/descendants", slug=root, include_self="true"):
        if client.get(f"/pages/{ref['id']}/{listing}").json()["results"]:
            return ref
    raise AssertionError(f"no seeded page has {listing}")


def test_the_json_line_names_the_wiki_and_its_roots(sandbox: RunningSandbox) -> None:
    assert sandbox.info["wiki"].endswith("/v1")
    assert sandbox.info["wiki_roots"]["source"] == ["team/handbook", "team/runbooks"]


def test_auth_is_the_trackers(sandbox: RunningSandbox) -> None:
    info = sandbox.info
    no_token = httpx.get(info["wiki"] + "/me", headers={"X-Org-Id": info["orgs"]["source"]})
    assert no_token.status_code == 401 and no_token.json()["error_code"] == "UNAUTHORIZED"
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-Id": "nope"}
    assert httpx.get(info["wiki"] + "/me", headers=headers).status_code == 401
    with wiki_for(sandbox, "source", token="user") as user:
        assert_like_recording("wiki:me/get", *_reply(user.get("/me")))
    bearer = {"Authorization": f"Bearer {info['tokens']['user']}",
              "X-Cloud-Org-Id": info["orgs"]["target"]}  # fmt: skip
    assert httpx.get(info["wiki"] + "/me", headers=bearer).status_code == 200


def _reply(response: httpx.Response) -> tuple[int, object]:
    return response.status_code, response.json()


def test_pages_read_like_the_live_service(wiki: httpx.Client) -> None:
    root = wiki.get("/pages", params={"slug": "team/handbook", "fields": "content,attributes"})
    assert_like_recording("wiki:pages/get", *_reply(root))
    commented = pages_with(wiki, "team/handbook", "comments")
    counted = wiki.get(f"/pages/{commented['id']}", params={"fields": "attributes"}).json()
    listed = drain_cursor(wiki, f"/pages/{commented['id']}/comments")
    assert counted["attributes"]["comments_count"] == len(listed) > 0
    bare = wiki.get(f"/pages/{root.json()['id']}").json()
    assert set(bare) <= {"id", "slug", "title", "page_type"}  # no fields: only the identity
    assert_like_recording("wiki:pages/descendants_list", *_reply(
        wiki.get("/pages/descendants", params={"slug": "team/handbook", "page_size": 100})
    ))  # fmt: skip
    by_id = wiki.get(f"/pages/{root.json()['id']}", params={"fields": "content,redirect,actuality"})
    assert_like_recording("wiki:pages/get_by_id", *_reply(by_id))
    missing = wiki.get("/pages", params={"slug": "no/such/page"})
    assert missing.status_code == 404 and missing.json()["error_code"] == "NOT_FOUND"
    for path in ("/pages/999999", f"/grids/{uuid.uuid4()}", f"/upload_sessions/{uuid.uuid4()}"):
        gone = wiki.get(path)
        assert gone.status_code == 404 and gone.json()["error_code"] == "NOT_FOUND", path


def test_descendants_page_by_cursor_to_a_null_end(wiki: httpx.Client) -> None:
    everything = drain_cursor(wiki, "/pages/descendants", slug="team/handbook", include_self="true")
    one_by_one = drain_cursor(
        wiki, "/pages/descendants", slug="team/handbook", include_self="true", page_size=1
    )
    assert everything == one_by_one and len(everything) > 3
    slugs = [ref["slug"] for ref in everything]
    assert all(slug.rpartition("/")[0] in slugs for slug in slugs[1:])  # parents come first
    too_big = wiki.get("/pages/descendants", params={"slug": "team/handbook", "page_size": 101})
    assert too_big.status_code == 400 and "page_size" in too_big.json()["debug_message"]


def test_create_replace_append_delete_and_restore(empty: httpx.Client) -> None:
    created = empty.post("/pages", json={"slug": "x/page", "title": "X", "content": "one"})
    assert_like_recording("wiki:pages/create", *_reply(created))
    page = created.json()["id"]
    again = empty.post("/pages", json={"slug": "x/page", "title": "X", "content": "one"})
    assert again.status_code == 409 and again.json()["error_code"] == "ALREADY_EXISTS"
    no_title = empty.post("/pages", json={"slug": "x/other", "content": "one"})
    assert no_title.status_code == 400 and "value_error.missing" in no_title.json()["debug_message"]
    assert empty.patch(f"/pages/{page}", json={"content": "two"}).status_code == 405
    assert_like_recording(
        "wiki:pages/update", *_reply(empty.post(f"/pages/{page}", json={"content": "two"}))
    )
    assert empty.post(f"/pages/{page}/append-content", json={"content": "x"}).status_code == 400
    both = {"content": "x", "body": {"location": "top"}, "anchor": {"name": "a"}}
    assert empty.post(f"/pages/{page}/append-content", json=both).status_code == 400
    appended = empty.post(
        f"/pages/{page}/append-content", json={"content": "three", "body": {"location": "bottom"}}
    )
    assert_like_recording("wiki:pages/append", *_reply(appended))
    assert appended.json()["content"] == "two\nthree"
    deleted = empty.delete(f"/pages/{page}")
    assert_like_recording("wiki:pages/delete", *_reply(deleted))
    assert empty.get(f"/pages/{page}").status_code == 404
    token = deleted.json()["recovery_token"]
    restored = empty.post(f"/pages/recovery_tokens/{token}/recover")
    assert_like_recording("wiki:recovery/recover", *_reply(restored))
    assert empty.get("/pages", params={"slug": "x/page", "fields": "content"}).json()["content"]


def test_a_restore_over_a_slug_taken_again_is_refused(empty: httpx.Client) -> None:
    tree = [("r/root", "R"), ("r/root/leaf", "L")]
    ids = [empty.post("/pages", json={"slug": s, "title": t, "content": "."}).json()["id"]
           for s, t in tree]  # fmt: skip
    token = empty.delete(f"/pages/{ids[0]}", params={"recursive": "true"}).json()["recovery_token"]
    assert empty.get(f"/pages/{ids[1]}").status_code == 404  # the subtree went with it
    empty.post("/pages", json={"slug": "r/root/leaf", "title": "Again", "content": "."})
    refused = empty.post(f"/pages/recovery_tokens/{token}/recover")
    assert refused.status_code == 409 and refused.json()["error_code"] == "ALREADY_EXISTS"


def test_an_upload_in_parts_attaches_the_same_bytes(empty: httpx.Client) -> None:
    page = empty.post("/pages", json={"slug": "up/load", "title": "U", "content": "."}).json()
    data = bytes(range(256)) * (PART_MIN // 256) + b"the last part"
    session = empty.post("/upload_sessions", json={"file_name": "big.bin", "file_size": len(data)})
    sid = session.json()["session_id"]
    for number, part in ((1, data[:PART_MIN]), (2, data[PART_MIN:])):
        sent = empty.put(f"/upload_sessions/{sid}/upload_part", params={"part_number": number},
                         content=part)  # fmt: skip
        assert_like_recording("wiki:uploadsessions/parts_upload", *_reply(sent))
    assert_like_recording(
        "wiki:uploadsessions/finish", *_reply(empty.post(f"/upload_sessions/{sid}/finish"))
    )
    attached = empty.post(f"/pages/{page['id']}/attachments", json={"upload_sessions": [sid]})
    assert_like_recording("wiki:attachments/attach", *_reply(attached))
    file_id = attached.json()["results"][0]["id"]
    body = empty.get(f"/pages/{page['id']}/attachments/{file_id}/download").content
    assert hashlib.sha256(body).hexdigest() == hashlib.sha256(data).hexdigest()
    assert empty.get(f"/upload_sessions/{sid}").json()["status"] == "used"
    twice = empty.post(f"/pages/{page['id']}/attachments", json={"upload_sessions": [sid]})
    assert twice.status_code == 400  # a used session cannot be attached again
    assert_like_recording(
        "wiki:attachments/list", *_reply(empty.get(f"/pages/{page['id']}/attachments"))
    )


def test_a_finish_with_a_wrong_size_or_a_missing_part_fails(empty: httpx.Client) -> None:
    short = empty.post("/upload_sessions", json={"file_name": "a", "file_size": 10}).json()
    empty.put(f"/upload_sessions/{short['session_id']}/upload_part", params={"part_number": 1},
              content=b"12345")  # fmt: skip
    assert empty.post(f"/upload_sessions/{short['session_id']}/finish").status_code == 400
    page = empty.post("/pages", json={"slug": "up/short", "title": "S", "content": "."}).json()
    unfinished = {"upload_sessions": [short["session_id"]]}
    assert empty.post(f"/pages/{page['id']}/attachments", json=unfinished).status_code == 400
    gap = empty.post("/upload_sessions", json={"file_name": "b", "file_size": 5}).json()
    empty.put(f"/upload_sessions/{gap['session_id']}/upload_part", params={"part_number": 2},
              content=b"12345")  # fmt: skip
    finish = empty.post(f"/upload_sessions/{gap['session_id']}/finish")
    assert finish.status_code == 400 and "missing" in finish.json()["message"][0]


def test_grid_writes_carry_the_revision(wiki: httpx.Client, empty: httpx.Client) -> None:
    ref = pages_with(wiki, "team/handbook", "grids")
    grid_ref = wiki.get(f"/pages/{ref['id']}/grids").json()["results"][0]
    assert_like_recording("wiki:grids/get", *_reply(wiki.get(f"/grids/{grid_ref['id']}")))
    page = empty.post("/pages", json={"slug": "g/page", "title": "G", "content": "."}).json()
    created = empty.post("/grids", json={"title": "T", "page": {"id": page["id"]}})
    assert_like_recording("wiki:grids/create", *_reply(created))
    grid, revision = created.json()["id"], created.json()["revision"]
    no_slug = empty.post(f"/grids/{grid}/columns", json={"revision": revision,
                         "columns": [{"title": "A", "type": "string", "required": False}]})  # fmt: skip
    assert no_slug.status_code == 400 and "value_error.missing" in no_slug.json()["debug_message"]
    columns = [{"slug": "a", "title": "A", "type": "string", "required": False},
               {"slug": "n", "title": "N", "type": "number", "required": False}]  # fmt: skip
    revision = empty.post(
        f"/grids/{grid}/columns", json={"revision": revision, "columns": columns}
    ).json()["revision"]
    rows = empty.post(
        f"/grids/{grid}/rows", json={"revision": revision, "rows": [{"a": "x", "n": 1}]}
    )
    assert_like_recording("wiki:grids/rows_create", *_reply(rows))
    stale = empty.post(f"/grids/{grid}/rows", json={"revision": revision, "rows": [{"a": "y"}]})
    assert stale.status_code == 409 and stale.json()["error_code"] == "REVISION_CONFLICT"
    revision = rows.json()["revision"]
    cells = empty.post(f"/grids/{grid}/cells", json={"revision": revision, "cells": [
        {"row_id": rows.json()["results"][0]["id"], "column_slug": "a", "value": "z"}]})  # fmt: skip
    assert_like_recording("wiki:grids/cells_update", *_reply(cells))
    read_shape = empty.post(f"/grids/{grid}", json={
        "revision": cells.json()["revision"], "default_sort": [{"slug": "a", "direction": "asc"}]})  # fmt: skip
    assert read_shape.status_code == 400 and "type_error.enum" in read_shape.json()["debug_message"]
    body = empty.get(f"/grids/{grid}").json()
    assert [row["row"] for row in body["rows"]] == [["z", 1]]
    not_a_number = empty.post(f"/grids/{grid}/rows",
                              json={"revision": body["revision"], "rows": [{"n": "many"}]})  # fmt: skip
    assert not_a_number.status_code == 400
    field_column = {"slug": "s", "title": "S", "type": "ticket_field", "required": False,
                    "ticket_field": "status", "width": 120}  # fmt: skip
    empty.post(f"/grids/{grid}/columns", json={"revision": body["revision"],
               "columns": [field_column]})  # fmt: skip
    written = empty.get(f"/grids/{grid}").json()["structure"]["columns"][-1]
    assert (written["ticket_field"], written["width"]) == ("status", 120)
    assert empty.delete(f"/grids/{grid}").status_code == 204
    assert empty.get(f"/grids/{grid}").status_code == 404


def test_comments_thread_by_parent_id(wiki: httpx.Client, empty: httpx.Client) -> None:
    ref = pages_with(wiki, "team/handbook", "comments")
    seeded = drain_cursor(wiki, f"/pages/{ref['id']}/comments")
    assert_like_recording("wiki:comments/list", *_reply(wiki.get(f"/pages/{ref['id']}/comments")))
    assert all(c["parent_id"] in {s["id"] for s in seeded} for c in seeded if c["parent_id"])
    page = empty.post("/pages", json={"slug": "c/page", "title": "C", "content": "."}).json()
    top = empty.post(f"/pages/{page['id']}/comments", json={"body": "question"})
    assert_like_recording("wiki:comments/create", *_reply(top))
    reply = empty.post(
        f"/pages/{page['id']}/comments", json={"body": "answer", "parent_id": top.json()["id"]}
    )
    assert reply.json()["parent_id"] == top.json()["id"]
    orphan = empty.post(f"/pages/{page['id']}/comments", json={"body": "?", "parent_id": 999999})
    assert orphan.status_code == 400
    removed = empty.delete(f"/pages/{page['id']}/comments/{reply.json()['id']}")
    assert_like_recording("wiki:comments/delete", *_reply(removed))
    assert removed.json()["comments_count"] == 1


def test_faults_apply_to_the_wiki() -> None:
    with start_sandbox(seed=3, size="tiny", faults="5xx:1@/v1/pages*") as running:
        with wiki_for(running, "source") as client:
            assert client.get("/pages", params={"slug": "team/handbook"}).status_code == 503
            assert client.get("/me").status_code == 200
        assert running.stats()["by_route"]["GET /v1/pages"] == 1


def test_the_same_seed_seeds_the_same_trees() -> None:
    def snapshot(seed: int) -> list:
        with start_sandbox(seed=seed, size="tiny") as running, wiki_for(running, "source") as c:
            refs = drain_cursor(c, "/pages/descendants", slug="team/handbook", include_self="true")
            return [c.get(f"/pages/{r['id']}", params={"fields": "content"}).json()["content"]
                    for r in refs]  # fmt: skip

    assert snapshot(4) == snapshot(4) != snapshot(5)
