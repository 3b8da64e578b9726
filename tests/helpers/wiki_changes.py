"""Test support for wiki sync tests: one change of each kind made at the source the way
people make them, through the plain API (the sandbox's routes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul.connectors.wiki import WikiClient


async def pages_of(client: WikiClient, root: str) -> list[dict[str, Any]]:
    """Each page of the tree, with its attachments, grids and comments listed."""
    pages = []
    async for ref in client.iter_descendants(root):
        page_id = int(ref["id"])
        pages.append(
            {
                **ref,
                "attachments": [a async for a in client.iter_attachments(page_id)],
                "grids": [g async for g in client.iter_grids(page_id)],
                "comments": [c async for c in client.iter_comments(page_id)],
            }
        )
    return pages


def leaf_page(pages: list[dict[str, Any]], page: dict[str, Any]) -> bool:
    return not any(p["slug"].startswith(page["slug"] + "/") for p in pages)


async def change_everything(client: WikiClient, roots: list[str], scratch: Path) -> dict[str, str]:
    """A page moved with the page under it, a page rewritten, a file replaced and a grid edited
    (a cell, a column removed, its title) without the page's text moving, a comment edited,
    another deleted, a page deleted: each on a page of its own under one of `roots`. Return
    what changed, kind -> the slug it changed on (now)."""
    pages = [page for root in roots for page in await pages_of(client, root)]
    used: set[str] = set(roots)

    def pick(test: Any) -> dict[str, Any]:
        page = next(p for p in pages if p["slug"] not in used and test(p))
        used.add(page["slug"])
        return page

    changed: dict[str, str] = {}
    moving = pick(lambda p: not leaf_page(pages, p))
    under = [p["slug"] for p in pages if p["slug"].startswith(moving["slug"] + "/")]
    used.update(under)
    root = next(root for root in roots if moving["slug"].startswith(root + "/"))
    new_slug = f"{root}/moved-{moving['slug'].rpartition('/')[2]}"
    await client.move_page(moving["slug"], new_slug)
    changed["page_moved"] = new_slug

    rewritten = pick(lambda p: True)
    body = await client.get_page(rewritten["slug"])
    await client.replace_page(int(rewritten["id"]), content=body["content"] + "\nRewritten.")
    changed["rewritten"] = rewritten["slug"]

    filed = pick(lambda p: p["attachments"])
    old = filed["attachments"][0]
    (scratch / "new.bin").write_bytes(b"a newer file of the same name")
    await client.upload(int(filed["id"]), file_name=old["name"], path=scratch / "new.bin")
    await client.delete_attachment(int(filed["id"]), int(old["id"]))
    changed["attachment_replaced"] = filed["slug"]

    gridded = pick(lambda p: p["grids"])
    grid = await client.get_grid(str(gridded["grids"][0]["id"]))
    column = next(c for c in grid["structure"]["columns"] if c["type"] == "string")
    cell = {"row_id": grid["rows"][0]["id"], "column_slug": column["slug"], "value": "changed"}
    revision = await client.update_cells(str(grid["id"]), str(grid["revision"]), [cell])
    others = [c["slug"] for c in grid["structure"]["columns"] if c["slug"] != column["slug"]]
    revision = await client.remove_columns(str(grid["id"]), revision, others[:1])
    await client.update_grid(str(grid["id"]), revision, title=f"{grid['title']} (renamed)")
    changed["grid_cell"] = gridded["slug"]  # and a column removed, the grid renamed

    talked = pick(lambda p: len(p["comments"]) >= 1)
    edited = talked["comments"][0]
    await client.update_comment(int(talked["id"]), int(edited["id"]), "An edited comment.")
    changed["comment_edited"] = talked["slug"]

    replied_to = {c.get("parent_id") for p in pages for c in p["comments"]}
    quiet = pick(lambda p: any(c["id"] not in replied_to for c in p["comments"]))
    gone = next(c for c in quiet["comments"] if c["id"] not in replied_to)
    await client.delete_comment(int(quiet["id"]), int(gone["id"]))
    changed["comment_deleted"] = quiet["slug"]

    deleted = pick(lambda p: leaf_page(pages, p) and bool(p["comments"] or p["attachments"]))
    changed["recovery_token"] = await client.delete_page(int(deleted["id"]))
    changed["page_deleted"] = deleted["slug"]
    return changed
