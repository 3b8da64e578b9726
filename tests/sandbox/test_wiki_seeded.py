"""What the sandbox seeds into the source wiki, read over sockets: trees under the roots the
JSON line names (with the fixed restricted pages among them), links of every kind, real tracker
keys, one file larger than an upload part, grids of every column type, the target empty."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox
from haul.sandbox.wiki.model import PART_MIN
from haul.sandbox.wiki.seed import RESTRICTED
from tests.helpers.sandbox_clients import client_for, drain_cursor, wiki_for

COLUMN_TYPES = {"string", "number", "select", "staff", "date", "checkbox", "ticket", "ticket_field"}


@pytest.fixture(scope="module")
def wiki(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with wiki_for(sandbox, "source") as client:
        yield client


@pytest.fixture(scope="module")
def pages(sandbox: RunningSandbox, wiki: httpx.Client) -> list[dict]:
    """Every seeded page with content and attributes, roots first."""
    refs = [
        ref
        for root in sandbox.info["wiki_roots"]["source"]
        for ref in drain_cursor(wiki, "/pages/descendants", slug=root, include_self="true")
    ]
    fields = {"fields": "content,attributes"}
    return [wiki.get(f"/pages/{ref['id']}", params=fields).json() for ref in refs]


def test_tiny_trees_are_three_levels_under_the_named_roots(pages: list[dict]) -> None:
    slugs = [page["slug"] for page in pages]
    drawn = [slug for slug in slugs if slug not in {row[0] for row in RESTRICTED}]
    assert 10 <= len(drawn) <= 15 and len(set(slugs)) == len(slugs)
    assert len(slugs) == len(drawn) + len(RESTRICTED)  # the fixed restricted pages, every size
    assert {slug.split("/")[0] + "/" + slug.split("/")[1] for slug in slugs} == {
        "team/handbook",
        "team/runbooks",
    }
    assert all(slug == slug.lower().strip("/") for slug in slugs)
    assert max(slug.count("/") for slug in slugs) >= 3


def test_content_links_pages_files_and_real_tracker_keys(
    sandbox: RunningSandbox, pages: list[dict]
) -> None:
    text = "\n".join(page["content"] for page in pages)
    slugs = {page["slug"] for page in pages}
    absolute = set(re.findall(r"\]\(/([a-z0-9/-]+)\)", text))
    assert absolute and absolute <= slugs
    assert "](./" in text and "](../)" in text and re.search(r"\]\(\.\./[a-z]", text)
    assert re.search(r"\]\(/[a-z0-9/-]+/\.files/[\w.-]+\)", text)
    keys = set(re.findall(r"\b[A-Z]+-\d+\b", text))
    with client_for(sandbox, "source") as tracker:
        for key in sorted(keys)[:3]:
            assert tracker.get(f"/issues/{key}").status_code == 200, key


def test_pages_carry_authors_and_dates_over_years(pages: list[dict]) -> None:
    years = {page["attributes"]["created_at"][:4] for page in pages}
    assert len(years) >= 2
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", page["attributes"]
               ["modified_at"]) for page in pages)  # fmt: skip
    assert all(page["active_revision"]["author"]["username"] for page in pages)


def test_one_file_is_larger_than_an_upload_part(wiki: httpx.Client, pages: list[dict]) -> None:
    files = [
        (page["id"], item)
        for page in pages
        for item in drain_cursor(wiki, f"/pages/{page['id']}/attachments")
    ]
    big = [(page_id, item) for page_id, item in files if int(item["size"]) > PART_MIN]
    assert len(big) == 1 and len(files) > len(big)
    page_id, item = big[0]
    download = wiki.get(f"/pages/{page_id}/attachments/{item['id']}/download")
    assert len(download.content) == int(download.headers["content-length"]) == int(item["size"])
    assert download.headers["content-type"].startswith(item["mimetype"])


def test_grids_hold_every_column_type(wiki: httpx.Client, pages: list[dict]) -> None:
    grids = [
        wiki.get(f"/grids/{ref['id']}").json()
        for page in pages
        for ref in drain_cursor(wiki, f"/pages/{page['id']}/grids")
    ]
    assert grids and all(3 <= len(grid["rows"]) <= 20 for grid in grids)
    columns = grids[0]["structure"]["columns"]
    assert {column["type"] for column in columns} == COLUMN_TYPES
    assert next(c for c in columns if c["type"] == "ticket_field")["ticket_field"] == "status"


def test_comments_have_threads_with_replies(wiki: httpx.Client, pages: list[dict]) -> None:
    comments = [c for page in pages for c in drain_cursor(wiki, f"/pages/{page['id']}/comments")]
    assert any(c["parent_id"] for c in comments) and any(not c["parent_id"] for c in comments)


def test_the_target_wiki_starts_empty(sandbox: RunningSandbox) -> None:
    with wiki_for(sandbox, "target") as target:
        for root in sandbox.info["wiki_roots"]["source"]:
            assert target.get("/pages", params={"slug": root}).status_code == 404
