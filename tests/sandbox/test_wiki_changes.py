"""The sandbox wiki serves every change a person makes and leaves the traces the service
leaves: a move renames a subtree (the old slug answers 404, the id stays), a replaced
attachment and an edited grid show in the page's resources listing, an edited or deleted
comment shows in the comment listing, a deleted page comes back with its recovery token; and
the forms sandbox deletes and restores an answer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox
from tests.helpers.sandbox_shapes import assert_like_recording


def client_for(sandbox: RunningSandbox, service: str) -> httpx.Client:
    info = sandbox.info
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-Id": info["orgs"]["source"],
    }
    return httpx.Client(base_url=info[service], headers=headers, timeout=30)


@pytest.fixture(scope="module")
def wiki(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(sandbox, "wiki") as client:
        yield client


def new_page(wiki: httpx.Client, slug: str) -> dict:
    reply = wiki.post("/pages", json={"slug": slug, "title": slug, "content": "hello"})
    assert reply.status_code == 200, reply.text
    return reply.json()


def attach(wiki: httpx.Client, page_id: int, name: str, data: bytes) -> dict:
    session = wiki.post("/upload_sessions", json={"file_name": name, "file_size": len(data)})
    sid = session.json()["session_id"]
    wiki.put(f"/upload_sessions/{sid}/upload_part", params={"part_number": 1}, content=data)
    wiki.post(f"/upload_sessions/{sid}/finish")
    return wiki.post(f"/pages/{page_id}/attachments", json={"upload_sessions": [sid]}).json()[
        "results"
    ][0]


def test_a_move_renames_the_subtree_and_the_old_slug_answers_404(wiki: httpx.Client) -> None:
    """The page and the pages under it keep their ids under the new slugs."""
    base = f"mv-{uuid.uuid4().hex[:6]}"
    top, child = new_page(wiki, base), new_page(wiki, f"{base}/child")
    reply = wiki.post(
        "/pages/move",
        json={"operations": [{"source": base, "target": f"{base}-new"}],
              "copy_inherited_access": False},
    )  # fmt: skip
    assert_like_recording("wiki:pages/move", reply.status_code, reply.json())
    status = wiki.get(f"/operations/move/{reply.json()['operation']['id']}")
    assert_like_recording("wiki:operations/move_get", status.status_code, status.json())
    assert status.json()["result"]["page_count"] == 2
    assert wiki.get("/pages", params={"slug": base}).status_code == 404
    assert wiki.get("/pages", params={"slug": f"{base}-new"}).json()["id"] == top["id"]
    assert wiki.get(f"/pages/{child['id']}").json()["slug"] == f"{base}-new/child"


def test_a_move_refuses_a_taken_target_and_a_dry_run_applies_nothing(wiki: httpx.Client) -> None:
    base = f"mv-{uuid.uuid4().hex[:6]}"
    new_page(wiki, base), new_page(wiki, f"{base}-taken")
    body = {
        "operations": [{"source": base, "target": f"{base}-taken"}],
        "copy_inherited_access": True,
    }
    assert wiki.post("/pages/move", json=body).status_code == 409
    dry = {"operations": [{"source": base, "target": f"{base}-x"}], "copy_inherited_access": True,
           "dry_run": True}  # fmt: skip
    reply = wiki.post("/pages/move", json=dry)
    assert reply.json()["dry_run"] is True
    assert wiki.get(f"/operations/move/{reply.json()['operation']['id']}").status_code == 404
    assert wiki.get("/pages", params={"slug": base}).status_code == 200
    no_choice = {"operations": [{"source": base, "target": f"{base}-y"}]}
    assert wiki.post("/pages/move", json=no_choice).status_code == 400


def test_resources_tell_a_replaced_attachment_and_an_edited_grid(wiki: httpx.Client) -> None:
    """Neither moves the page's modified_at; the resources listing shows both."""
    page = new_page(wiki, f"res-{uuid.uuid4().hex[:6]}")
    old = attach(wiki, page["id"], "a.txt", b"one")
    grid = wiki.post("/grids", json={"title": "g", "page": {"id": page["id"]}}).json()
    revision = wiki.post(
        f"/grids/{grid['id']}/columns",
        json={"revision": grid["revision"],
              "columns": [{"slug": "c", "title": "C", "type": "string", "required": False}]},
    ).json()["revision"]  # fmt: skip
    before = wiki.get(f"/pages/{page['id']}", params={"fields": "attributes"}).json()
    listed = wiki.get(f"/pages/{page['id']}/resources").json()["results"]
    assert {item["type"] for item in listed} == {"attachment", "grid"}
    new = attach(wiki, page["id"], "a.txt", b"two!")
    assert wiki.delete(f"/pages/{page['id']}/attachments/{old['id']}").status_code == 204
    added = wiki.post(
        f"/grids/{grid['id']}/rows", json={"revision": revision, "rows": [{"c": "x"}]}
    )
    row = added.json()["results"][0]["id"]
    cells = [{"row_id": row, "column_slug": "c", "value": "y"}]
    wiki.post(
        f"/grids/{grid['id']}/cells", json={"revision": added.json()["revision"], "cells": cells}
    )
    after = wiki.get(f"/pages/{page['id']}", params={"fields": "attributes"}).json()
    assert after["attributes"]["modified_at"] == before["attributes"]["modified_at"]
    items = {
        item["type"]: item["item"]
        for item in wiki.get(f"/pages/{page['id']}/resources").json()["results"]
    }
    assert (items["attachment"]["id"], items["attachment"]["size"]) == (new["id"], "4")
    assert int(items["grid"]["revision"]) > int(revision)


def test_a_comment_is_edited_and_deleted(wiki: httpx.Client) -> None:
    page = new_page(wiki, f"cm-{uuid.uuid4().hex[:6]}")
    comment = wiki.post(f"/pages/{page['id']}/comments", json={"body": "first"}).json()
    edited = wiki.post(f"/pages/{page['id']}/comments/{comment['id']}", json={"body": "second"})
    assert_like_recording("wiki:comments/create", edited.status_code, edited.json())
    listed = wiki.get(f"/pages/{page['id']}/comments").json()["results"]
    assert [(c["id"], c["body"]) for c in listed] == [(comment["id"], "second")]
    gone = wiki.delete(f"/pages/{page['id']}/comments/{comment['id']}")
    assert_like_recording("wiki:comments/delete", gone.status_code, gone.json())
    assert wiki.get(f"/pages/{page['id']}/comments").json()["results"] == []


def test_a_deleted_page_comes_back_with_its_token(wiki: httpx.Client) -> None:
    page = new_page(wiki, f"del-{uuid.uuid4().hex[:6]}")
    token = wiki.delete(f"/pages/{page['id']}").json()["recovery_token"]
    assert wiki.get(f"/pages/{page['id']}").status_code == 404
    reply = wiki.post(f"/pages/recovery_tokens/{token}/recover")
    assert_like_recording("wiki:recovery/recover", reply.status_code, reply.json())
    assert wiki.get(f"/pages/{page['id']}").json()["slug"] == page["slug"]


def test_a_forms_answer_is_deleted_and_restored(sandbox: RunningSandbox) -> None:
    with client_for(sandbox, "forms") as forms:
        survey = sandbox.info["surveys"]["source"][0]
        first = forms.get(f"/surveys/{survey}/answers", params={"page_size": 1}).json()
        answer = first["answers"][0]["id"]
        assert forms.delete(f"/surveys/{survey}/answers/{answer}").status_code == 204
        assert forms.get("/answers", params={"answer_id": answer}).status_code == 404
        assert forms.delete(f"/surveys/{survey}/answers/{answer}").status_code == 404
        assert forms.post(f"/surveys/{survey}/answers/{answer}/restore").status_code == 200
        assert forms.get("/answers", params={"answer_id": answer}).status_code == 200
