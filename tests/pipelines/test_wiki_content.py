"""Where wiki pages land and how their links, attachment links and tracker keys are rewritten."""

from __future__ import annotations

from typing import Any

import pytest

from haul.pipelines.wiki.content import Rewriter, SlugMap, author_of, provenance, with_provenance

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

SLUGS = SlugMap(("team/handbook", "team/handbook/deep", "ops"), {"team/handbook": "archive/hb"})
REWRITER = Rewriter(SLUGS, {"TEST": "NEW"})


def test_a_page_lands_under_the_longest_root_that_holds_it():
    assert SLUGS.target("team/handbook") == "archive/hb"
    assert SLUGS.target("team/handbook/setup/linux") == "archive/hb/setup/linux"
    assert SLUGS.target("team/handbook/deep/x") == "team/handbook/deep/x"  # its own root, unmapped
    assert SLUGS.target("ops/runbook") == "ops/runbook"
    assert SLUGS.target("team/handbookish") is None
    assert SLUGS.target("elsewhere") is None


def test_links_to_migrated_pages_and_their_files_point_at_the_new_places():
    page = "team/handbook/setup"
    text = (
        "[abs](/team/handbook/deploy) [rel](../deploy#top) [child](./linux) [bare](linux)\n"
        "[file](/team/handbook/setup/.files/log.txt) [ext](https://example.com/team/handbook)\n"
        "[out](/somewhere/else) [anchor](#here) [up-out](../../../../x)"
    )
    assert REWRITER.rewrite(text, page) == (
        "[abs](/archive/hb/deploy) [rel](/archive/hb/deploy#top) "
        "[child](/archive/hb/setup/linux) [bare](/archive/hb/setup/linux)\n"
        "[file](/archive/hb/setup/.files/log.txt) [ext](https://example.com/team/handbook)\n"
        "[out](/somewhere/else) [anchor](#here) [up-out](../../../../x)"
    )


def test_tracker_keys_of_remapped_queues_change_and_others_stay():
    text = "Fixed in TEST-12 and TEST-3, see OPS-4; not a key: TEST-x or test-5."
    assert REWRITER.rewrite(text, "ops") == (
        "Fixed in NEW-12 and NEW-3, see OPS-4; not a key: TEST-x or test-5."
    )


def test_provenance_names_the_author_date_and_source_and_can_be_switched_off():
    raw = {
        "attributes": {"created_at": "2021-03-04T05:06:07.000Z"},
        "author": {"display_name": "Ann Lee", "username": "ann"},
    }
    line = provenance("_From {source_slug} by {author} on {date} ({unknown})_", raw, "a/b")
    assert line == "_From a/b by Ann Lee on 2021-03-04 ({unknown})_"
    assert with_provenance("body", line) == f"{line}\n\nbody"
    assert with_provenance("body", provenance("", raw, "a/b")) == "body"
    assert author_of({"attributes": {"owner": {"username": "bob"}}}) == "bob"
    assert author_of({}) == "unknown"


def test_provenance_tells_of_one_event_never_one_author_with_another_date():
    """The first author with the creation time; with no first author named, the last
    revision's author with that revision's time (not the creation date)."""
    template = "written by {author} on {date} ({created_at})"
    revision = {"author": {"display_name": "Rev Iser"}, "created_at": "2023-10-31T17:49:49Z"}
    made = {"attributes": {"created_at": "2021-03-04T05:06:07Z"}, "active_revision": revision}
    owned = {**made, "owner": {"display_name": "Ann Lee"}}
    assert (
        provenance(template, owned, "a")
        == "written by Ann Lee on 2021-03-04 (2021-03-04T05:06:07Z)"
    )
    assert (
        provenance(template, made, "a")
        == "written by Rev Iser on 2023-10-31 (2023-10-31T17:49:49Z)"
    )


def _wiki(slugs: list[str]) -> Any:
    """A WikiClient over a mock wiki serving one tree: descendants and pages by slug."""
    import httpx

    from haul.connectors.http import HttpCore
    from haul.connectors.wiki import WikiClient

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/pages/descendants":
            refs = [{"id": i, "slug": slug} for i, slug in enumerate(slugs)]
            return httpx.Response(200, json={"results": refs, "next_cursor": None})
        if request.url.path.endswith(("/resources", "/comments")):
            return httpx.Response(200, json={"results": [], "next_cursor": None})
        slug = request.url.params["slug"]
        return httpx.Response(200, json={"id": slugs.index(slug), "slug": slug, "attributes": {}})

    core = HttpCore.of(
        service="wiki", base_url="https://wiki.test/v1", token="t", org_id="1",
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    return WikiClient(core)


def _staged(slugs: list[str], saved: dict | None) -> list[str]:
    import asyncio

    from haul.pipelines.wiki.streams import PageTree

    async def run() -> list[str]:
        async with _wiki(slugs) as client:
            tree = PageTree(client, "r")
            return [
                row["source_id"] async for page in tree.pages(lambda: saved) for row in page.rows
            ]

    return asyncio.run(run())


def test_a_resumed_tree_starts_after_its_checkpoint_and_never_loses_a_page():
    slugs = ["r", "r/a", "r/b", "r/c"]
    assert _staged(slugs, None) == slugs
    assert _staged(slugs, {"after": "r/a", "complete": False}) == ["r/b", "r/c"]
    assert _staged(slugs, {"after": None, "complete": True}) == slugs  # a later run: all again
    # the page the checkpoint names was deleted meanwhile: every page, not none
    assert _staged(slugs, {"after": "r/gone", "complete": False}) == slugs
