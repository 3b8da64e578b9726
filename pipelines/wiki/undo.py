"""How `haul undo` takes back what the wiki's load wrote, entity by entity.

Pages, files, grids and comments are deleted by their target ids (a comment's is
"<page id>/<comment id>"; a file's page is its parent's). A page is deleted alone, never
with its subtree (what a person added under it stays): its subpages, newer, went before it.
The wiki answers a page's deletion with a recovery token, kept in the ledger row. A page's
access and a grid's rows go with them. A deletion mirrored from the source is kept. The base
decides (`state.written`): a page whose title or body a person changed since haul wrote it is
kept and named.
"""

from __future__ import annotations

from collections.abc import Awaitable

from haul.connectors.errors import NotFoundError
from haul.connectors.wiki import WikiClient
from haul.pipelines.specs import Fields, RecordFailure
from haul.pipelines.sync.removals import WITH_PARENT, Removal, Removed, changed_since, deleted_by
from haul.state.ledger import LedgerRow
from haul.state.store import StagingStore

DELETION = "a deletion mirrored from the source cannot be taken back"


class WikiRemovals:
    """The wiki's removals for one target org and one store."""

    def __init__(self, client: WikiClient, store: StagingStore) -> None:
        self.client = client
        self.store = store

    def removals(self) -> dict[str, Removal]:
        """Ledger entity -> its removal."""
        return {
            "wiki_page": Removal(delete=self._page, changed=self._page_changed),
            "wiki_page_access": WITH_PARENT,
            "wiki_attachment": deleted_by(self._attachment),
            "wiki_grid": deleted_by(self._grid),
            "wiki_grid_rows": WITH_PARENT,
            "wiki_comment": deleted_by(self._comment),
            "wiki_deletion": Removal(by_hand=DELETION),
            "backfill_grid": deleted_by(self._grid),
            "backfill_grid_rows": WITH_PARENT,
            "backfill_grid_deletion": Removal(by_hand=DELETION),
        }

    async def _page(self, row: LedgerRow) -> Removed:
        try:
            token = await self.client.delete_page(_number(row.target_id), recursive=False)
        except NotFoundError:
            return Removed(False)
        return Removed(True, token)

    async def _page_changed(self, row: LedgerRow) -> str | None:
        base = self.store.written.base(row.entity, row.source_id)
        return await page_changed(self.client, _number(row.target_id), base)

    async def _attachment(self, row: LedgerRow) -> bool:
        page = self.store.ledger.target_id(row.parent_entity or "", row.parent or "")
        if page is None:
            raise RecordFailure(f"the page of wiki_attachment {row.source_id} is not loaded")
        deletion = self.client.delete_attachment(_number(page), _number(row.target_id))
        return await _gone_is_false(deletion)

    async def _grid(self, row: LedgerRow) -> bool:
        return await _gone_is_false(self.client.delete_grid(row.target_id or ""))

    async def _comment(self, row: LedgerRow) -> bool:
        page, _, comment = (row.target_id or "").partition("/")
        return await _gone_is_false(self.client.delete_comment(_number(page), _number(comment)))


async def page_changed(client: WikiClient, page_id: int, base: Fields | None) -> str | None:
    """What a person changed of the page's title or body since haul wrote them (its base);
    None when nothing, when haul kept no base, or when the page is gone already."""
    if base is None:
        return None
    try:
        page = await client.get_access(page_id)
    except NotFoundError:
        return None
    return changed_since(base, {name: str(page.get(name) or "") for name in base})


async def _gone_is_false(deletion: Awaitable[None]) -> bool:
    """True once deleted, False when the wiki answered 404 (it was gone already)."""
    try:
        await deletion
    except NotFoundError:
        return False
    return True


def _number(value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise RecordFailure(f"{value!r} is not a wiki id") from None
