"""Wiki records deleted at the source: found, listed, and deleted in the target when asked.

How each is found, without asking the source for anything the extract does not read anyway:

- an attachment, grid or comment: its page's mark moved (`pipelines.wiki.streams`), so the
  page was drained again, and its listing no longer holds the record while a loaded ledger
  row does (`vanished_children`, in the drain, while the old record is still staged to name
  it). An attachment gone while a file of the same name came is *replaced*, not deleted;
- a page: a whole tree listing no longer holds it, and its id answers 404
  (`pipelines.wiki.moves`). A page whose id lives outside the scope now (moved out of
  `scope.wiki_roots`) is alive: staged here too but `out_of_scope`, as the tracker's issues
  that left the scope are: counted as out of the scope, never mirrored as a deletion.

Each becomes one staged `wiki_deleted` record (what it was, its page, its target id, why).
With `[sync] deletions = "report"` they are listed by `haul status` and the run report; with
"mirror" each is also a `wiki_deletion` ledger row, loaded after everything else: one DELETE
in the target, found done when the target no longer holds it. A replaced file's old copy is
deleted in either mode: the target then holds what the source holds. A page is deleted
without its subtree (a page still under it at the source stays); the recovery token the
target answers is kept as the row's target id, and logged with how to restore the page.
The base decides: a page a person rewrote in the target since haul wrote it is a conflict
(deleted at the source, changed in the target): kept, its row failed naming it, unless
`[sync] conflicts = "source-wins"`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from haul.connectors.errors import NotFoundError
from haul.connectors.wiki import WikiClient
from haul.pipelines.specs import Forgotten, Planned, RecordFailure, Sent
from haul.pipelines.streams import Row
from haul.pipelines.wiki.undo import page_changed
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

DELETED = "wiki_deleted"  # the staged entity
CHILDREN = ("wiki_attachment", "wiki_grid", "wiki_comment")


def deleted_row(
    entity: str, source_id: str, page: str, target_id: str | None, why: str, **about: Any
) -> dict[str, Any]:
    """The staged record of one record deleted at the source."""
    return {
        "source_id": f"{entity}:{source_id}",
        "parent": page,
        "raw": {
            "entity": entity,
            "source_id": source_id,
            "page": page,
            "target_id": target_id,
            "reason": why,
            "detected_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **about,
        },
    }


def vanished_children(store: StagingStore, slug: str, fetched: Mapping[str, list[Row]]) -> int:
    """Stage a `wiki_deleted` record for each loaded child of page `slug` that its fresh
    listings (`fetched`, entity -> rows) no longer hold; return how many."""
    names = {str(row["raw"].get("name")) for row in fetched.get("wiki_attachment", [])}
    found: list[dict[str, Any]] = []
    for entity in CHILDREN:
        kept = {str(row["source_id"]) for row in fetched.get(entity, [])}
        for record in store.iter_records(entity, parent=slug):
            row = store.ledger.get(entity, record.source_id)
            if record.source_id in kept or row is None or row.status != "done":
                continue
            name = str(record.raw.get("name") or record.raw.get("title") or "")
            replaced = entity == "wiki_attachment" and name in names
            why = "replaced by a file of the same name" if replaced else "deleted at the source"
            found.append(deleted_row(entity, record.source_id, slug, row.target_id, why,
                                     name=name, replaced=replaced))  # fmt: skip
    if found:
        store.upsert_records(DELETED, found)
        log.info("wiki_deleted_at_source", page=slug, records=len(found))
    return len(found)


def deletion_plan(mirror: bool) -> Callable[[StagingStore], Iterator[Planned]]:
    """One `wiki_deletion` row per record deleted at the source when mirroring, else only
    for a replaced file's old copy."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        for record in store.iter_records(DELETED):
            if record.raw.get("out_of_scope"):  # alive at the source: never deleted
                continue
            if mirror or record.raw.get("replaced"):
                yield Planned(record, sort_key=str(record.raw.get("detected_at") or ""))

    return plan


def deleted_counts(store: StagingStore, *, out_of_scope: bool = False) -> dict[str, int]:
    """Entity -> how many of its records were found deleted at the source (a replaced file
    is not counted: it changed); `out_of_scope`: how many were found alive but out of the
    scope instead."""
    counts: Counter[str] = Counter()
    for record in store.iter_records(DELETED):
        if bool(record.raw.get("out_of_scope")) != out_of_scope:
            continue
        if not record.raw.get("replaced"):
            counts[str(record.raw["entity"])] += 1
    return dict(counts)


def forgotten(store: StagingStore, entity: str, source_id: str) -> tuple[Forgotten, ...]:
    """The ledger rows of a record deleted in the target (a page's: with those of what hung
    on it, its grids' rows and its comments' replies too), for the engine to drop with the
    `wiki_deletion` row it records done, so the counts hold what the target holds; that row
    and the staged `wiki_deleted` record keep what happened."""
    if entity != "wiki_page":
        return (Forgotten((entity,), source_id),)
    grids = store.ledger.iter_rows(entity="wiki_grid", parent=source_id)
    return (
        *(Forgotten(("wiki_grid_rows",), row.source_id) for row in grids),  # keyed as the grid
        Forgotten(("wiki_page", "wiki_page_access"), source_id, children=CHILDREN,
                  under=("wiki_comment",), direct_only=True),
    )  # fmt: skip


@dataclass
class WikiDeletions:
    """Sends and finds `wiki_deletion` rows in one target org; `page_id` is the target id of
    a loaded source page (by its slug now)."""

    client: WikiClient
    store: StagingStore
    page_id: Callable[[str], str | None]
    source_wins: bool = False  # [sync] conflicts = "source-wins": a person's edit goes too

    async def send(self, record: StagedRecord, parent: str | None) -> str | Sent:
        """One DELETE; what is gone already is deleted all the same. The deleted record's
        rows are forgotten with the row."""
        raw = record.raw
        target = raw.get("target_id")
        if target is None:
            return "nothing to delete"
        try:
            done = await self._delete(raw, str(target))
        except NotFoundError:
            done = f"deleted {target}"
        return Sent(
            done, forgotten=forgotten(self.store, str(raw["entity"]), str(raw["source_id"]))
        )

    async def _delete(self, raw: dict[str, Any], target: str) -> str:
        entity = raw["entity"]
        if entity == "wiki_page":
            await self._refuse_changed(raw, int(target))
            token = await self.client.delete_page(int(target))
            log.info("wiki_page_deleted_in_target", page=raw["source_id"], target=target,
                     restore=f"POST /pages/recovery_tokens/{token}/recover")  # fmt: skip
            return f"recovery_token:{token}"
        if entity == "wiki_grid":
            await self.client.delete_grid(target)
        elif entity == "wiki_comment":
            page, _, comment = target.partition("/")
            await self.client.delete_comment(int(page), int(comment))
        else:
            page_id = self.page_id(str(raw["page"]))
            if page_id is not None:
                await self.client.delete_attachment(int(page_id), int(target))
        return f"deleted {target}"

    async def _refuse_changed(self, raw: dict[str, Any], page_id: int) -> None:
        """A page a person rewrote since haul wrote it is kept: its row fails, named."""
        if self.source_wins:
            return
        base = self.store.written.base("wiki_page", str(raw["source_id"]))
        why = await page_changed(self.client, page_id, base)
        if why is not None:
            raise RecordFailure(
                f"wiki_page {raw['source_id']} is gone at the source ({raw['reason']}), but"
                f" {why}: kept in the target (page {page_id}); delete it there by hand if it must"
                ' go, or set [sync] conflicts = "source-wins" and run haul load --retry-failed'
            )

    async def find(self, record: StagedRecord, parent: str | None, unclaimed: Any) -> Sent | None:
        """Done when the target no longer holds the record (or its page); its rows are
        forgotten with the row."""
        raw = record.raw
        target = str(raw.get("target_id"))
        try:
            held = await self._held(raw, target)
        except NotFoundError:
            held = False
        if held:
            return None
        gone = forgotten(self.store, str(raw["entity"]), str(raw["source_id"]))
        return Sent(f"deleted {target}", forgotten=gone)

    async def _held(self, raw: dict[str, Any], target: str) -> bool:
        entity = raw["entity"]
        if raw.get("target_id") is None:
            return False
        if entity == "wiki_page":
            await self.client.get_page_by_id(int(target), fields=None)
            return True
        if entity == "wiki_grid":
            await self.client.get_grid(target)
            return True
        if entity == "wiki_comment":
            page, _, comment = target.partition("/")
            comments = self.client.iter_comments(int(page))
            return any([str(c["id"]) == comment async for c in comments])
        page_id = self.page_id(str(raw["page"]))
        if page_id is None:
            return False
        attachments = self.client.iter_attachments(int(page_id))
        return any([str(a["id"]) == target async for a in attachments])
