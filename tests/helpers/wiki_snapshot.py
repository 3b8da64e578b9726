"""A wiki subtree read back through the API, in a form two orgs can be compared by.

Pages are keyed by their slug relative to their root; attachments by name with the sha256 of
their bytes; grids by title with their columns and rows; comments in thread order with the
body and the body of the comment they answer. Provenance lines are cut from bodies so that a
source and a migrated target compare equal.
"""

from __future__ import annotations

import hashlib
from typing import Any

from haul.connectors.wiki import WikiClient


class _Hasher:
    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return len(data)


def strip_provenance(text: str, marker: str = "_Migrated from ") -> str:
    """The text without haul's line that marks the pages it made, nor a first provenance line
    (the default template starts with `marker`)."""
    if text.startswith("[//]: # (haul:"):
        text = text.partition("\n\n")[2] if "\n\n" in text else ""
    if text.startswith(marker):
        return text.partition("\n\n")[2]
    return text


async def wiki_snapshot(client: WikiClient, roots: dict[str, str]) -> dict[str, Any]:
    """{root-relative slug: page} for each `roots` item (snapshot name -> slug in this org)."""
    pages: dict[str, Any] = {}
    for name, root in roots.items():
        if await client.find_page(root, fields=None) is None:
            continue
        async for ref in client.iter_descendants(root):
            slug = str(ref["slug"])
            page = await client.get_page(slug)
            key = name + slug[len(root) :]
            pages[key] = await _page(client, page)
    return pages


async def _page(client: WikiClient, page: dict[str, Any]) -> dict[str, Any]:
    page_id = int(page["id"])
    attachments = {}
    async for attachment in client.iter_attachments(page_id):
        sink = _Hasher()
        await client.download_attachment(page_id, attachment["id"], sink)
        attachments[attachment["name"]] = (sink.size, sink.digest.hexdigest())
    grids = []
    async for ref in client.iter_grids(page_id):
        grid = await client.get_grid(str(ref["id"]))
        columns = grid["structure"]["columns"]
        grids.append(
            {
                "title": grid["title"],
                "columns": [(c["slug"], c["title"], c["type"]) for c in columns],
                "rows": [row["row"] for row in grid["rows"]],
            }
        )
    comments = [comment async for comment in client.iter_comments(page_id)]
    by_id = {comment["id"]: comment for comment in comments}
    return {
        "title": page["title"],
        "content": strip_provenance(page.get("content") or ""),
        "attachments": attachments,
        "grids": sorted(grids, key=lambda grid: grid["title"]),
        "comments": [
            (
                strip_provenance(comment["body"]),
                strip_provenance(by_id[comment["parent_id"]]["body"])
                if comment.get("parent_id") in by_id
                else None,
            )
            for comment in comments
        ],
    }
