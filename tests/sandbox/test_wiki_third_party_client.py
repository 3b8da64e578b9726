"""The sandbox wiki driven by a client we did not write: `ya-wiki-api`, a typed client of the
real wiki API (a dev dependency), pointed at the sandbox unmodified. Its pydantic models parse
every reply, so a shape the real service would not send fails here. It has no upload calls:
attachments are read through the page's resources (our own upload is tested beside it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import ya_wiki_api

from haul.sandbox.server import RunningSandbox, start_sandbox


@pytest.fixture(scope="module")
def running() -> Iterator[RunningSandbox]:
    with start_sandbox(size="tiny", seed=9) as sandbox:
        yield sandbox


def client(info: dict[str, Any], org: str) -> Any:
    return ya_wiki_api.WikiClient(
        token=info["tokens"]["admin"], org_id=info["orgs"][org], base_url=info["wiki"]
    )


def test_it_reads_the_seeded_trees_with_their_attachments_and_grids(
    running: RunningSandbox,
) -> None:
    with client(running.info, "source") as wiki:
        root = wiki.pages.get("team/handbook", fields="content,attributes,breadcrumbs")
        assert root.slug == "team/handbook" and root.content.startswith("# ")
        assert root.attributes.created_at.year >= 2020
        refs = wiki.pages.get_descendants_by_slug("team/handbook", page_size=100).results
        assert len(refs) >= 3
        resources = [
            resource
            for ref in [root, *refs]
            for resource in wiki.pages.get_resources(ref.id, page_size=100).results
        ]
        kinds = {resource.type.value for resource in resources}
        assert kinds == {"attachment", "grid"}
        # its models type an item as a union ending in dict, which pydantic prefers: read by key
        grid_ref = next(r.item for r in resources if r.type.value == "grid")
        attachment = next(r.item for r in resources if r.type.value == "attachment")
        assert attachment["name"] and int(attachment["size"]) > 0
        grid = wiki.grids.get(grid_ref["id"])
        assert [c.type.value for c in grid.structure.columns][:3] == ["string", "number", "select"]
        assert grid.rows and len(grid.rows[0].row) == len(grid.structure.columns)


def test_it_writes_pages_and_grids_under_the_revision_lock(running: RunningSandbox) -> None:
    with client(running.info, "target") as wiki:
        page = wiki.pages.create(page_type="page", title="From a client", slug="other/client",
                                 content="hello")  # fmt: skip
        updated = wiki.pages.update(page.id, content="hello again", title="Renamed")
        assert (updated.title, updated.content) == ("Renamed", "hello again")
        grid = wiki.grids.create(title="Register", page_id=page.id)
        columns = [{"slug": "name", "title": "Name", "type": "string", "required": True},
                   {"slug": "qty", "title": "Qty", "type": "number", "required": False}]  # fmt: skip
        revision = wiki.grids.columns.add(grid.id, revision=grid.revision, columns=columns).revision
        added = wiki.grids.rows.add(grid.id, revision=revision, rows=[{"name": "a", "qty": 2}])
        with pytest.raises(ya_wiki_api.WikiAPIError) as stale:
            wiki.grids.rows.add(grid.id, revision=revision, rows=[{"name": "b"}])
        assert stale.value.status_code == 409
        wiki.grids.update(grid.id, revision=added.revision, default_sort=[{"qty": "desc"}])
        read = wiki.grids.get(grid.id)
        assert [row.row for row in read.rows] == [["a", 2]]
        assert read.structure.default_sort[0].slug == "qty"
        listed = wiki.pages.get_grids(page.id).results
        assert [g.title for g in listed] == ["Register"]
