"""Pages moved to another slug at the source, followed in the ledger and in the target.

A move renames a page and its subtree; the ids stay and the old slugs answer 404. Staged
pages are keyed by slug, so after a tree was listed from its start (`PageTree`), a staged page
the listing no longer holds is looked up once by its id (`find_vanished_pages`): under a slug
listed in this run it moved, and a `wiki_page_move` record names the old and the new slug;
gone (404), it is staged as deleted (`pipelines.wiki.deletions`); under a slug outside the
scope it is alive, staged there `out_of_scope` as the tracker stages an issue that left the
scope: counted as such, never deleted in the target. Either way what was staged under the old
slug goes. A page
deleted and listed again (restored at the source) is no longer listed as deleted: it loads
again (its ledger rows were dropped when the target's copy was deleted) or, reported only, is
refreshed where it is.

Before the ledger is planned, `follow_page_moves` renames the loaded rows of each moved page
(its own, its access row, its attachments and comments, which are keyed under its slug) from
the old slug to the new one: they are the same records, already in the target, so nothing is
loaded twice (a loaded comment is marked changed: its provenance line names the page's slug,
so its text is written again). The page's next refresh then moves the target page to its new target slug
(`move_in_target`: with its subtree, as the source did) before it writes the content.

The plan yields each rename (`Renamed`) for the engine to record in the plan's transaction,
with the deletion of the move's record; what was staged under the old slug goes through the
store's own methods (`delete_record`, `delete_under`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import structlog

from haul.connectors.errors import AmbiguousWriteError, NotFoundError
from haul.connectors.wiki import WikiClient
from haul.pipelines.specs import RecordFailure, Renamed
from haul.pipelines.wiki.deletions import DELETED, deleted_row
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

MOVED = "wiki_page_move"  # the staged entity: {old, new, id}
PAGE_ROWS = ("wiki_page", "wiki_page_access")  # source id "<page slug>"
KEYED_UNDER_PAGE = ("wiki_attachment", "wiki_comment")  # source id "<page slug>/<id>"
PAGE_CHILDREN = ("wiki_attachment", "wiki_grid", "wiki_comment")


async def find_vanished_pages(
    client: WikiClient, store: StagingStore, root: str, listed: set[str]
) -> int:
    """Look up each staged page of `root` the whole listing no longer holds: moved within the
    scope, moved out of it, or deleted; return how many were found."""
    gone = [
        record
        for record in store.iter_records("wiki_page")
        if record.raw.get("root") == root and record.source_id not in listed
    ]
    restored = [
        record.source_id
        for record in store.iter_records(DELETED)
        if record.raw.get("entity") == "wiki_page" and record.raw.get("source_id") in listed
    ]
    for source_id in restored:  # listed again: restored at the source, no longer deleted
        store.delete_record(DELETED, source_id)
    for record in gone:
        try:
            now = await client.get_page_by_id(int(record.raw["id"]), fields=None)
        except NotFoundError:
            now = None
        slug = str(now["slug"]).strip("/") if now else None
        _vanished(store, record.source_id, slug, slug in listed)
    return len(gone)


def _vanished(store: StagingStore, old: str, new: str | None, in_scope: bool) -> None:
    with store.transaction():
        if new is not None and in_scope:
            store.upsert_records(MOVED, [{"source_id": old, "raw": {"old": old, "new": new}}])
        else:
            row = store.ledger.get("wiki_page", old)
            target = row.target_id if row is not None and row.status == "done" else None
            store.upsert_records(DELETED, [_gone_row(old, new, target)])
        store.delete_record("wiki_page", old)
        store.forget_drained("wiki_page", source_id=old)  # back one day: drained again
        store.delete_under(old, entities=PAGE_CHILDREN)
    log.info("wiki_page_vanished", page=old, now=new, in_scope=in_scope)


def _gone_row(old: str, new: str | None, target: str | None) -> dict[str, Any]:
    """The staged record of page `old`, deleted at the source (`new` None) or moved out of
    the scope to `new`: alive there, so `out_of_scope` (never mirrored as a deletion)."""
    if new is None:
        return deleted_row("wiki_page", old, old, target, "deleted at the source")
    why = f"moved to {new}, outside the scope (still at the source)"
    return deleted_row("wiki_page", old, old, target, why, out_of_scope=True)


def follow_page_moves(store: StagingStore) -> Iterator[Renamed]:
    """Rename the loaded rows of each moved page to its new slug (a plan that plans nothing:
    it runs first, so the pages' own plans find the renamed rows); the move's record goes in
    the same transaction."""
    for record in list(store.iter_records(MOVED)):
        old, new = str(record.raw["old"]), str(record.raw["new"])
        with store.transaction():
            if store.ledger.get("wiki_page", old) and not store.ledger.get("wiki_page", new):
                yield page_renamed(old, new)  # the engine renames the rows here
                log.info("wiki_page_move_followed", source=old, now=new)
            store.delete_record(MOVED, old)


def page_renamed(old: str, new: str) -> Renamed:
    """The ledger rows of page `old`, and of the records keyed under its slug, now under `new`
    (a record of a page below keeps its own slug: that page's own move renames it). A
    comment's provenance line names its page's slug: a loaded one is written again."""
    return Renamed(
        PAGE_ROWS, old, new, under=KEYED_UNDER_PAGE, direct_only=True, resend=("wiki_comment",)
    )


async def move_in_target(client: WikiClient, page_id: int, slug: str) -> bool:
    """Move the target page (with its subtree) to `slug` unless it is there; whether it
    moved. A lost reply is settled by reading the page by its id, which a move keeps."""
    now = await client.get_page_by_id(page_id, fields=None)
    current = str(now["slug"]).strip("/")
    if current == slug:
        return False
    try:
        await client.move_page(current, slug)
    except AmbiguousWriteError:
        after = await client.get_page_by_id(page_id, fields=None)
        if str(after["slug"]).strip("/") != slug:
            raise RecordFailure(f"moving page {current} to {slug} stayed uncertain") from None
    log.info("wiki_page_moved_in_target", page=page_id, was=current, now=slug)
    return True
