"""A page's comments: in thread order, a reply under the comment it answers; found again by
(page, the comment answered, text with its provenance line); one edited at the source is
edited in the target."""

from __future__ import annotations

from collections.abc import Iterator

from haul.pipelines.specs import EntitySpec, Order, Planned, RecordFailure, Ref
from haul.pipelines.wiki.load import WikiLoad, created, page_of
from haul.state.store import StagedRecord, StagingStore


def plan_comments(store: StagingStore) -> Iterator[Planned]:
    """A reply loads under the comment it answers (after it); others under their page."""
    staged = store.source_ids("wiki_comment")
    for record in store.iter_records("wiki_comment"):
        answered = f"{record.parent}/{record.raw.get('parent_id')}"
        parent = Ref("wiki_comment", answered) if answered in staged else None
        yield Planned(record, parent or page_of(record), created(record))


PLANS = {"wiki_comment": plan_comments}


class Comments:
    """Makes and refreshes comments in one target org."""

    def __init__(self, load: WikiLoad) -> None:
        self.load = load

    def specs(self) -> list[EntitySpec]:
        printed = self.load.comment()
        return [
            EntitySpec("wiki_comment", "wiki_comment", plan_comments, self.send_comment,
                       printed.find, refresh=self.refresh_comment,
                       order=Order(beside_earlier=True), fingerprint=printed),
        ]  # fmt: skip

    async def send_comment(self, record: StagedRecord, parent: str | None) -> str:
        page_id, parent_id = self._comment_place(record, parent)
        reply = await self.load.client.create_comment(
            page_id, self.load.comment_body(record), parent_id=parent_id
        )
        return self.load.made("wiki_comment", f"{page_id}/{reply['id']}")

    async def refresh_comment(self, record: StagedRecord, target_id: str) -> None:
        """A comment edited at the source: its text, edited in the target."""
        page_id, _, comment_id = target_id.partition("/")
        await self.load.client.update_comment(
            int(page_id), int(comment_id), self.load.comment_body(record)
        )
        self.load.changes[("wiki_comment", "updated")] += 1

    def _comment_place(self, record: StagedRecord, parent: str | None) -> tuple[int, int | None]:
        """The target page id and the target comment it answers (None: a top comment)."""
        if parent is None:
            raise RecordFailure(f"the page of comment {record.source_id} is not loaded")
        if "/" in parent:  # the parent is the answered comment: "page/comment"
            page_id, _, comment_id = parent.partition("/")
            return int(page_id), int(comment_id)
        return int(parent), None


def specs(load: WikiLoad) -> list[EntitySpec]:
    """The comments' spec."""
    return Comments(load).specs()
