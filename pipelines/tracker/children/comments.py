"""A comment: imported under its issue in creation order, refreshed three ways on its text.

Found again by its fingerprint (`issues.fingerprints`: author, time and text); a comment edited
at the source has its text settled three ways by a later run (one edited only in the target is
kept, one edited on both sides is a conflict). A comment over the target's size limit fails
before its send (`issues.limits`).
"""

from __future__ import annotations

from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Fields, Sent, each_record
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad, created, issue_of
from haul.state.store import StagedRecord

PLAN_COMMENTS = each_record("comment", parent=issue_of, sort_key=created)


class Comments:
    """Sends and refreshes comments in one target org."""

    def __init__(self, load: TreeLoad) -> None:
        self.load = load

    def spec(self) -> EntitySpec:
        prints = self.load.prints.comment()
        return EntitySpec("comment", "comment", PLAN_COMMENTS, self.send, prints.find,
                          refresh=self.refresh, fingerprint=prints)  # fmt: skip

    async def send(self, record: StagedRecord, parent: str | None) -> Sent:
        load = self.load
        load.refuse_over_limit(record)
        body = load.transform.comment_body(record.raw)
        reply = await load.client.import_comment(load.parent_key(record, parent), body)
        return Sent(load.made("comment", str(reply["id"])), written={"text": body["text"]})

    async def refresh(self, record: StagedRecord, target_id: str) -> Fields:
        """A comment edited at the source: its text, three ways (one edited on both sides is
        a conflict, one edited only in the target is kept)."""
        load = self.load
        key, text = load.issue_key(record), load.transform.comment_text(record.raw)
        listing = load.client.iter_comments(key, expand="")
        found = await load.target_record(listing, target_id)

        async def edit(names: list[str]) -> None:
            await load.client.update_comment(key, target_id, {"text": text})

        compared = ({"text": text}, {"text": found.get("text") or ""})
        return await load.three_way.settle("comment", record.source_id, compared, edit)


COMMENT = Kind(
    Entity("comment"),
    PLAN_COMMENTS,
    lambda load: Comments(load).spec(),
    preview=lambda load: KindPreview(refreshed=("text",)),  # what its refresh edits
)
