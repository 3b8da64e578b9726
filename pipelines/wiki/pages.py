"""A page and its access: made with its policy under the page it hangs under, refreshed
three ways; its access row right after it (before anything under it).

A page that only its entries read is made restricted and empty, and its access row grants the
entries and then writes the content (`access_sync`), so no one the source refused reads it at
any instant; the access row is found again by comparing the target page's access and content
with what they should be. A page moved at the source moves in the target first (`moves`).
"""

from __future__ import annotations

from collections.abc import Iterator

from haul.connectors.errors import ConflictError
from haul.pipelines.specs import (
    EntitySpec,
    Fields,
    Order,
    Planned,
    RecordFailure,
    Ref,
    Sent,
    Unclaimed,
)
from haul.pipelines.sync.three_way import settled_values
from haul.pipelines.wiki.access import Access
from haul.pipelines.wiki.load import WikiLoad
from haul.pipelines.wiki.moves import move_in_target
from haul.pipelines.wiki.ownership import WAY_OUT
from haul.state.store import StagedRecord, StagingStore


def plan_pages(store: StagingStore) -> Iterator[Planned]:
    """Every page, under its parent page when that one is migrated too."""
    staged = store.source_ids("wiki_page")
    for record in store.iter_records("wiki_page"):
        parent = Ref("wiki_page", record.parent) if record.parent in staged else None
        yield Planned(record, parent, record.source_id)


def plan_access(store: StagingStore) -> Iterator[Planned]:
    """Every page's access, under its page (before the pages under it: spec order)."""
    for record in store.iter_records("wiki_page"):
        yield Planned(record, Ref("wiki_page", record.source_id))


PLANS = {"wiki_page": plan_pages, "wiki_page_access": plan_access}


class Pages:
    """Makes, finds and refreshes pages and their access in one target org."""

    def __init__(self, load: WikiLoad) -> None:
        self.load = load

    def specs(self) -> list[EntitySpec]:
        """A page's access first among what loads under it, then the page itself."""
        return [
            EntitySpec("wiki_page_access", "wiki_page", plan_access, self.send_access,
                       self.find_access, refresh=self.refresh_access,
                       order=Order(sends_conflicts=True)),
            EntitySpec("wiki_page", "wiki_page", plan_pages, self.send_page, self.find_page,
                       refresh=self.refresh_page, order=Order(siblings_together=True)),
        ]  # fmt: skip

    async def send_page(self, record: StagedRecord, parent: str | None) -> Sent:
        """Make the page with its policy; one that only its entries read, with no content
        but haul's line (its access row writes the body next: the base is the whole page).
        A slug taken by a page haul did not make is a conflict, named."""
        access = self.load.access.wanted(record)
        slug = self.load.target_slug(record.source_id)
        try:
            page = await self.load.client.create_page(
                slug=slug,
                title=self.load.page_title(record),
                content=(
                    self.load.ownership.line(record.source_id)
                    if access.restricted
                    else self.load.page_content(record)
                ),
                access_policy=access.policy(),
            )
        except ConflictError as exc:  # the engine asks `find_page` whether it is ours
            raise await self._taken(record, slug, exc) from exc
        return Sent(
            self.load.made("wiki_page", str(page["id"])), written=self.load.page_fields(record)
        )

    async def _taken(self, record: StagedRecord, slug: str, exc: ConflictError) -> ConflictError:
        """The conflict of a page whose slug is taken, naming who holds it and the way out."""
        there = await self.load.client.find_page(slug)
        why = self.load.ownership.taken(slug, there) if there else f"{slug} is taken: {exc}"
        message = f"wiki page {record.source_id}: {why}: {WAY_OUT}"
        return ConflictError(message, **exc.context())

    async def find_page(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        """The target page at the record's slug, if haul made it for this record (its line):
        a page someone else made there is not this record."""
        page = await self.load.client.find_page(self.load.target_slug(record.source_id))
        if page is None or not self.load.ownership.ours(page, record.source_id):
            return None
        return Sent(str(page["id"]), written=self.load.page_fields(record))

    async def refresh_page(self, record: StagedRecord, target_id: str) -> Fields:
        """A page changed at the source since it was loaded: moved to its new slug first (a
        page moved at the source, with what is under it), then its access (narrowed first),
        then its title and body, three ways: one a person edited in the target only is kept,
        one edited on both sides is a conflict (`[sync] conflicts`)."""
        slug = self.load.target_slug(record.source_id)
        if await move_in_target(self.load.client, int(target_id), slug):
            self.load.changes[("wiki_page", "moved")] += 1
        compared = await self._page_compared(record, int(target_id))

        async def write(names: list[str]) -> None:
            source, target = compared
            body = {name: source[name] if name in names else target[name] for name in source}
            await self._sync(record, int(target_id), body)

        return await self.load.three_way.settle(
            "wiki_page", record.source_id, compared, write, always=True, record=f"page '{slug}'"
        )

    async def _page_compared(self, record: StagedRecord, page_id: int) -> tuple[Fields, Fields]:
        """The page's title and body: the source's (as the target should hold them) and the
        target's now."""
        reply = await self.load.client.get_access(page_id)
        source = self.load.page_fields(record)
        return source, {name: str(reply.get(name) or "") for name in source}

    async def _settled_body(self, record: StagedRecord, page_id: int) -> Fields:
        """The title and body the page should hold now, three ways against the page's base,
        without counting or reporting (the page's own refresh does)."""
        compared = await self._page_compared(record, page_id)
        changes = self.load.three_way.compare("wiki_page", record.source_id, compared)
        return settled_values(changes, compared[0], self.load.conflicts)

    # -- access -----------------------------------------------------------------------------

    async def send_access(self, record: StagedRecord, page: str | None) -> str:
        """Grant the page's entries, then write its content; a page with a holder that maps to
        no one is left restricted to its owner and the migrating admin, and fails."""
        if page is None:
            raise RecordFailure(f"page {record.source_id} is not loaded")
        self._checked(record, await self._sync(record, int(page)))
        return page

    def _checked(self, record: StagedRecord, access: Access) -> None:
        """A page whose holders do not all map fails, named (it is left narrower)."""
        if access.unmapped:
            raise RecordFailure(
                f"page {record.source_id}: {', '.join(access.unmapped)} maps to no target holder"
                " (mapping.users_file, mapping.groups_file): the page is restricted to its owner"
                " and the migrating admin; map them, then haul load --retry-failed"
            )

    async def find_access(
        self, record: StagedRecord, page: str | None, unclaimed: Unclaimed
    ) -> str | None:
        """The page, when its access, content and title are what they should be."""
        if page is None:
            return None
        reply = await self.load.client.get_access(int(page))
        access = self.load.access.wanted(record)
        content, title = self.load.page_content(record), self.load.page_title(record)
        return (
            page if self.load.access.settled(reply, access, content=content, title=title) else None
        )

    async def refresh_access(self, record: StagedRecord, target_id: str) -> None:
        """The page's access brought in step, its body left as the page's refresh settled it
        (a person's edit in the target is not written over here)."""
        body = await self._settled_body(record, int(target_id))
        self._checked(record, await self._sync(record, int(target_id), body))

    async def _sync(self, record: StagedRecord, page_id: int, body: Fields | None = None) -> Access:
        """Bring the page to its access, then to `body` (title and content; the source's when
        not given)."""
        access = self.load.access.wanted(record)
        body = body or self.load.page_fields(record)
        await self.load.access.sync(page_id, access, content=body["content"], title=body["title"])
        return access


def specs(load: WikiLoad) -> list[EntitySpec]:
    """The pages' and their access's specs."""
    return Pages(load).specs()
