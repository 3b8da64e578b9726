"""The wiki's entity specs: pages, their access, attachments, grids (made, then filled) and
comments.

A page loads after the page it hangs under; its access (`wiki_page_access`) right after it,
then, all at once, the pages under it (together, each with its own subtree), its attachments
(together), grids (together) and comments (in thread order): none of them needs another, so
a page's files do not wait for its whole subtree (`beside_earlier`). A page that only its entries read is made restricted and empty, and its
access row grants the entries and then writes the content (`pipelines.wiki.access_sync`), so
no one the source refused reads it at any instant; the access row is found again by comparing
the target page's access and content with what they should be. Each is found again in the target by what identifies it there: a
page by its target slug, an attachment by (page, name, size), a grid by (page, title), a
grid's content by comparing columns and rows, a comment by (page, text, parent). A grid is
two ledger rows: `wiki_grid` makes it, `wiki_grid_rows` fills it, so a crash halfway through
the rows resumes from the target's rows instead of taking a half-filled grid for done.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import ConflictError
from haul.connectors.wiki import WikiClient
from haul.pipelines.downloads import HashSink
from haul.pipelines.specs import (
    Conflicted,
    EntitySpec,
    Fields,
    Fingerprint,
    Order,
    Phase,
    Planned,
    RecordFailure,
    Ref,
    Sent,
    Unclaimed,
    each_record,
    staged_bytes,
)
from haul.pipelines.sync.three_way import (
    ConflictRule,
    FieldChanges,
    ThreeWay,
    conflict_message,
    settled_values,
)
from haul.pipelines.sync.three_way_items import count_settling
from haul.pipelines.wiki.access import Access
from haul.pipelines.wiki.access_sync import PageAccess
from haul.pipelines.wiki.content import Rewriter, provenance, with_provenance
from haul.pipelines.wiki.deletions import DELETED, WikiDeletions, deletion_plan
from haul.pipelines.wiki.grids import GridSync
from haul.pipelines.wiki.moves import move_in_target
from haul.pipelines.wiki.ownership import WAY_OUT, PageOwnership, with_marker
from haul.pipelines.wiki.streams import byte_size
from haul.state.store import StagedRecord, StagingStore

TEXT_CELLS = ("ticket", "string", "ticket_field")  # cells whose tracker keys are remapped


def _page_of(record: StagedRecord) -> Ref:
    return Ref("wiki_page", record.parent or "")


def _on_page(record: StagedRecord, page: str | None) -> str | None:
    return page


def _created(record: StagedRecord) -> str:
    return str(record.raw.get("created_at") or "")


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


def plan_comments(store: StagingStore) -> Iterator[Planned]:
    """A reply loads under the comment it answers (after it); others under their page."""
    staged = store.source_ids("wiki_comment")
    for record in store.iter_records("wiki_comment"):
        answered = f"{record.parent}/{record.raw.get('parent_id')}"
        parent = Ref("wiki_comment", answered) if answered in staged else None
        yield Planned(record, parent or _page_of(record), _created(record))


# a page's files and grids: all at once, and beside its subpages (once its access is set)
BESIDE_SUBPAGES = Order(siblings_together=True, beside_earlier=True)
PLAN_ATTACHMENTS = each_record("wiki_attachment", parent=_page_of, sort_key=_created)
PLAN_GRIDS = each_record("wiki_grid", parent=_page_of, sort_key=_created)
PLAN_GRID_ROWS = each_record("wiki_grid", parent=lambda record: Ref("wiki_grid", record.source_id))
PLANS = {
    "wiki_page": plan_pages,
    "wiki_page_access": plan_access,
    "wiki_attachment": PLAN_ATTACHMENTS,
    "wiki_grid": PLAN_GRIDS,
    "wiki_grid_rows": PLAN_GRID_ROWS,
    "wiki_comment": plan_comments,
}


@dataclass
class WikiLoad:
    """Everything the wiki's specs need to write to one target org."""

    client: WikiClient
    store: StagingStore
    rewriter: Rewriter
    provenance: str
    access: PageAccess
    ownership: PageOwnership  # the line that marks the pages haul made
    mirror: bool = False  # [sync] deletions = "mirror"
    conflicts: ConflictRule = "keep-target"  # [sync] conflicts: a page edited on both sides
    # (entity, what happened) -> how many: created, updated, moved, deleted (the run details)
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.three_way = ThreeWay(self.store.written, self.conflicts, self.changes)
        self.grids = GridSync(self.client, self._cell)
        wins = self.conflicts == "source-wins"
        self.deletions = WikiDeletions(self.client, self.store, self._page_target, wins)

    def _page_target(self, slug: str) -> str | None:
        row = self.store.ledger.get("wiki_page", slug)
        return row.target_id if row is not None and row.status == "done" else None

    def _made(self, entity: str, target_id: str) -> str:
        self.changes[(entity, "created")] += 1
        return target_id

    def specs(self) -> list[EntitySpec]:
        """The wiki's specs, in the order siblings load."""
        attachment, grid, comment = self.attachment(), self.grid(), self.comment()
        return [  # a page's access first among what loads under it
            EntitySpec("wiki_page_access", "wiki_page", plan_access, self.send_access,
                       self.find_access, refresh=self.refresh_access,
                       order=Order(sends_conflicts=True)),
            EntitySpec("wiki_page", "wiki_page", plan_pages, self.send_page, self.find_page,
                       refresh=self.refresh_page, order=Order(siblings_together=True)),
            EntitySpec("wiki_attachment", "wiki_attachment", PLAN_ATTACHMENTS,
                       self.send_attachment, attachment.find, order=BESIDE_SUBPAGES,
                       fingerprint=attachment),
            EntitySpec("wiki_grid", "wiki_grid", PLAN_GRIDS, self.send_grid, grid.find,
                       order=BESIDE_SUBPAGES, fingerprint=grid,
                       claims_with=("backfill_grid",)),
            EntitySpec("wiki_grid_rows", "wiki_grid", PLAN_GRID_ROWS, self.send_grid_rows,
                       self.find_grid_rows, refresh=self.refresh_grid_rows),
            EntitySpec("wiki_comment", "wiki_comment", plan_comments, self.send_comment,
                       comment.find, refresh=self.refresh_comment,
                       order=Order(beside_earlier=True),
                       fingerprint=comment),
            *self._deletion_specs(),
        ]  # fmt: skip

    def _deletion_specs(self) -> list[EntitySpec]:
        """Deleting in the target: when mirroring, or when a replaced file's old copy waits."""
        waiting = next(self.store.ledger.iter_rows(entity="wiki_deletion"), None)
        if not self.mirror and waiting is None:
            return []
        return [
            EntitySpec("wiki_deletion", DELETED, deletion_plan(self.mirror), self.send_deletion,
                       self.deletions.find, order=Order(Phase.DELETIONS, find_first=True)),
        ]  # fmt: skip

    # -- what tells a record apart in the target: written once, for find and verify --------

    def attachment(self) -> Fingerprint:
        """An attachment: its page, name and size; verify adds the sha256 of its bytes."""
        return Fingerprint(
            lambda record: {
                "name": record.raw.get("name"),
                "size": byte_size(record.raw.get("size")),
                "sha256": record.blob,
            },
            _on_page,
            self._attachments,
            ("name", "size"),
            self._bytes,
        )

    def grid(self) -> Fingerprint:
        """A grid: its page and title (its columns and rows are `wiki_grid_rows`')."""
        return Fingerprint(
            lambda record: {"title": str(record.raw.get("title") or "")},
            _on_page,
            self._grids,
            ("title",),
        )

    def comment(self) -> Fingerprint:
        """A comment: its page, the comment it answers, its text (provenance included)."""
        return Fingerprint(
            lambda record: {"body": self.comment_body(record)},
            lambda record, parent: parent,  # "page", or "page/comment" for a reply
            self._comments,
            ("body",),
        )

    async def _attachments(self, page: str) -> list[Fields]:
        return [
            {"id": str(a["id"]), "name": a.get("name"), "size": byte_size(a.get("size"))}
            async for a in self.client.iter_attachments(int(page))
        ]

    async def _bytes(self, page: str, found: Fields) -> Fields:
        sink = HashSink()
        await self.client.download_attachment(int(page), found["id"], sink)
        return {"sha256": sink.hexdigest()}

    async def _grids(self, page: str) -> list[Fields]:
        return [
            {"id": str(g["id"]), "title": g.get("title")}
            async for g in self.client.iter_grids(int(page))
        ]

    async def _comments(self, place: str) -> list[Fields]:
        """The comments of a page that answer the same comment (none: the top ones)."""
        page, _, answered = place.partition("/")
        return [
            {"id": f"{page}/{c['id']}", "body": c.get("body")}
            async for c in self.client.iter_comments(int(page))
            if str(c.get("parent_id") or "") == answered
        ]

    # -- what the target should hold ------------------------------------------------------

    def target_slug(self, source_slug: str) -> str:
        slug = self.rewriter.slugs.target(source_slug)
        if slug is None:
            raise RecordFailure(f"page {source_slug} is under no configured wiki root")
        return slug

    def page_content(self, record: StagedRecord) -> str:
        """The page's markdown as the target holds it: haul's line (`ownership`), then the
        provenance line, then the content with its links rewritten."""
        content = self.rewriter.rewrite(str(record.raw.get("content") or ""), record.source_id)
        line = provenance(self.provenance, record.raw, record.source_id)
        return with_marker(with_provenance(content, line), self.ownership.line(record.source_id))

    def comment_body(self, record: StagedRecord) -> str:
        page = record.parent or ""
        body = self.rewriter.rewrite(str(record.raw.get("body") or ""), page)
        return with_provenance(body, provenance(self.provenance, record.raw, page))

    def _cell(self, column: dict[str, Any], value: Any) -> Any:
        if isinstance(value, str) and column.get("type") in TEXT_CELLS:
            return self.rewriter.cell(value)
        return value

    # -- pages ----------------------------------------------------------------------------

    def page_title(self, record: StagedRecord) -> str:
        return str(record.raw.get("title") or record.source_id)

    def page_fields(self, record: StagedRecord) -> Fields:
        """What a sync compares of a page three ways: its title and body as the target holds
        them (the body with haul's line and the provenance line)."""
        return {"title": self.page_title(record), "content": self.page_content(record)}

    async def send_page(self, record: StagedRecord, parent: str | None) -> Sent:
        """Make the page with its policy; one that only its entries read, with no content
        but haul's line (its access row writes the body next: the base is the whole page).
        A slug taken by a page haul did not make is a conflict, named."""
        access = self.access.wanted(record)
        slug = self.target_slug(record.source_id)
        try:
            page = await self.client.create_page(
                slug=slug,
                title=self.page_title(record),
                content=(
                    self.ownership.line(record.source_id)
                    if access.restricted
                    else self.page_content(record)
                ),
                access_policy=access.policy(),
            )
        except ConflictError as exc:  # the engine asks `find_page` whether it is ours
            raise await self._taken(record, slug, exc) from exc
        return Sent(self._made("wiki_page", str(page["id"])), written=self.page_fields(record))

    async def _taken(self, record: StagedRecord, slug: str, exc: ConflictError) -> ConflictError:
        """The conflict of a page whose slug is taken, naming who holds it and the way out."""
        there = await self.client.find_page(slug)
        why = self.ownership.taken(slug, there) if there else f"{slug} is taken: {exc}"
        message = f"wiki page {record.source_id}: {why}: {WAY_OUT}"
        return ConflictError(message, **exc.context())

    async def find_page(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        """The target page at the record's slug, if haul made it for this record (its line):
        a page someone else made there is not this record."""
        page = await self.client.find_page(self.target_slug(record.source_id))
        if page is None or not self.ownership.ours(page, record.source_id):
            return None
        return Sent(str(page["id"]), written=self.page_fields(record))

    async def refresh_page(self, record: StagedRecord, target_id: str) -> Fields:
        """A page changed at the source since it was loaded: moved to its new slug first (a
        page moved at the source, with what is under it), then its access (narrowed first),
        then its title and body, three ways: one a person edited in the target only is kept,
        one edited on both sides is a conflict (`[sync] conflicts`)."""
        slug = self.target_slug(record.source_id)
        if await move_in_target(self.client, int(target_id), slug):
            self.changes[("wiki_page", "moved")] += 1
        compared = await self._page_compared(record, int(target_id))

        async def write(names: list[str]) -> None:
            source, target = compared
            body = {name: source[name] if name in names else target[name] for name in source}
            await self._sync(record, int(target_id), body)

        return await self.three_way.settle(
            "wiki_page", record.source_id, compared, write, always=True, record=f"page '{slug}'"
        )

    async def _page_compared(self, record: StagedRecord, page_id: int) -> tuple[Fields, Fields]:
        """The page's title and body: the source's (as the target should hold them) and the
        target's now."""
        reply = await self.client.get_access(page_id)
        source = self.page_fields(record)
        return source, {name: str(reply.get(name) or "") for name in source}

    async def _settled_body(self, record: StagedRecord, page_id: int) -> Fields:
        """The title and body the page should hold now, three ways against the page's base,
        without counting or reporting (the page's own refresh does)."""
        compared = await self._page_compared(record, page_id)
        changes = self.three_way.compare("wiki_page", record.source_id, compared)
        return settled_values(changes, compared[0], self.conflicts)

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
        reply = await self.client.get_access(int(page))
        access = self.access.wanted(record)
        content, title = self.page_content(record), self.page_title(record)
        return page if self.access.settled(reply, access, content=content, title=title) else None

    async def refresh_access(self, record: StagedRecord, target_id: str) -> None:
        """The page's access brought in step, its body left as the page's refresh settled it
        (a person's edit in the target is not written over here)."""
        body = await self._settled_body(record, int(target_id))
        self._checked(record, await self._sync(record, int(target_id), body))

    async def _sync(self, record: StagedRecord, page_id: int, body: Fields | None = None) -> Access:
        """Bring the page to its access, then to `body` (title and content; the source's when
        not given)."""
        access = self.access.wanted(record)
        body = body or self.page_fields(record)
        await self.access.sync(page_id, access, content=body["content"], title=body["title"])
        return access

    # -- attachments ----------------------------------------------------------------------

    async def send_attachment(self, record: StagedRecord, page: str | None) -> str:
        if page is None:
            raise RecordFailure(f"the page of attachment {record.source_id} is not loaded")
        path = await staged_bytes(self.store, record, drained="wiki_page")
        attached = await self.client.upload(int(page), file_name=str(record.raw["name"]), path=path)
        return self._made("wiki_attachment", str(attached["id"]))

    # -- grids ----------------------------------------------------------------------------

    async def send_grid(self, record: StagedRecord, page: str | None) -> str:
        if page is None:
            raise RecordFailure(f"the page of grid {record.source_id} is not loaded")
        grid = await self.client.create_grid(int(page), str(record.raw.get("title") or ""))
        return self._made("wiki_grid", str(grid["id"]))

    async def send_grid_rows(self, record: StagedRecord, grid: str | None) -> Sent:
        if grid is None:
            raise RecordFailure(f"grid {record.source_id} was not made")
        await self.grids.sync(record.raw, grid)
        return Sent(grid, written=await self.grids.base(record.raw, grid))

    async def find_grid_rows(
        self, record: StagedRecord, grid: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        if grid is None or not await self.grids.matches(record.raw, grid):
            return None  # not (wholly) filled: the next send picks up where it is
        return Sent(grid, written=await self.grids.base(record.raw, grid))

    async def refresh_grid_rows(self, record: StagedRecord, target_id: str) -> Fields:
        """A grid edited at the source (its revision moved): its title and columns follow the
        source, its rows three ways (`grids`): a row a person edited in the target only, or
        added there, is kept; one edited on both sides is a conflict (`[sync] conflicts`)."""
        base = self.store.written.base("wiki_grid_rows", record.source_id)
        if base is None:  # filled before three-way sync: the target made the source's
            if await self.grids.sync(record.raw, target_id):
                self.changes[("wiki_grid", "updated")] += 1
            return await self.grids.base(record.raw, target_id)
        settling, after, moved = await self.grids.settle(
            record.raw, target_id, base["rows"], self.conflicts
        )
        if moved and not settling.writes:  # its title or columns only
            self.changes[("wiki_grid", "updated")] += 1
        for name, ours, theirs in settling.overwritten:
            self.store.written.overwrote("wiki_grid_rows", record.source_id, name, ours, theirs)
        count_settling(self.three_way, "wiki_grid", settling)
        written: Fields = {"rows": after}
        if settling.conflicts:
            changes = FieldChanges(conflicts=settling.conflicts)
            raise Conflicted(conflict_message(changes), written)
        return written

    # -- comments -------------------------------------------------------------------------

    async def send_comment(self, record: StagedRecord, parent: str | None) -> str:
        page_id, parent_id = self._comment_place(record, parent)
        reply = await self.client.create_comment(
            page_id, self.comment_body(record), parent_id=parent_id
        )
        return self._made("wiki_comment", f"{page_id}/{reply['id']}")

    async def refresh_comment(self, record: StagedRecord, target_id: str) -> None:
        """A comment edited at the source: its text, edited in the target."""
        page_id, _, comment_id = target_id.partition("/")
        await self.client.update_comment(int(page_id), int(comment_id), self.comment_body(record))
        self.changes[("wiki_comment", "updated")] += 1

    # -- deletions --------------------------------------------------------------------------

    async def send_deletion(self, record: StagedRecord, parent: str | None) -> str | Sent:
        done = await self.deletions.send(record, parent)
        what = "replaced" if record.raw.get("replaced") else "deleted"
        self.changes[(str(record.raw["entity"]), what)] += 1
        return done

    def _comment_place(self, record: StagedRecord, parent: str | None) -> tuple[int, int | None]:
        """The target page id and the target comment it answers (None: a top comment)."""
        if parent is None:
            raise RecordFailure(f"the page of comment {record.source_id} is not loaded")
        if "/" in parent:  # the parent is the answered comment: "page/comment"
            page_id, _, comment_id = parent.partition("/")
            return int(page_id), int(comment_id)
        return int(parent), None
