"""Files: an issue's own attachments, and a comment's, each uploaded with its staged bytes.

A comment's attachments load under the comment, right after it (`comment_attachment`, from
the staged `attachment` records a comment lists); the issue's own, those no comment holds,
under the issue. Both are found again by one fingerprint and claim from one group, so a file
found in the target is never taken by both. A file over the target's size limit fails before
its upload (`issues.limits`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Planned, RecordFailure, Ref, staged_bytes
from haul.pipelines.tracker.issues.kinds import Kind, TreeLoad, created, issue_of
from haul.state.store import StagedRecord, StagingStore


def comment_attachment_owners(store: StagingStore) -> dict[str, str]:
    """Attachment source id -> the source id of the comment it belongs to."""
    return {
        f"{issue}/{attachment['id']}": comment
        for issue, comment, attachments in store.iter_lists("comment", "attachments")
        for attachment in attachments
    }


def plan_comment_attachments(store: StagingStore) -> Iterator[Planned]:
    """Attachments of a comment load under it, right after it."""
    owners = comment_attachment_owners(store)
    for record in store.iter_records("attachment"):
        if record.source_id in owners:
            yield Planned(record, Ref("comment", owners[record.source_id]), created(record))


def plan_attachments(store: StagingStore) -> Iterator[Planned]:
    """The issue's own attachments: those no comment holds."""
    owners = comment_attachment_owners(store)
    for record in store.iter_records("attachment"):
        if record.source_id not in owners:
            yield Planned(record, issue_of(record), created(record))


class Files:
    """Uploads attachments, an issue's and a comment's, into one target org."""

    def __init__(self, load: TreeLoad) -> None:
        self.load = load

    def issue_spec(self) -> EntitySpec:
        prints = self.load.prints.attachment()
        return EntitySpec("attachment", "attachment", plan_attachments, self.send, prints.find,
                          claims_with=("comment_attachment",), fingerprint=prints)  # fmt: skip

    def comment_spec(self) -> EntitySpec:
        prints = self.load.prints.attachment()
        return EntitySpec("comment_attachment", "attachment", plan_comment_attachments,
                          self.send_to_comment, prints.find, claims_with=("attachment",),
                          fingerprint=prints)  # fmt: skip

    async def send(self, record: StagedRecord, parent: str | None) -> str:
        load = self.load
        upload = await self._upload(record)
        reply = await load.client.import_attachment(load.parent_key(record, parent), **upload)
        return load.made("attachment", str(reply["id"]))

    async def send_to_comment(self, record: StagedRecord, comment: str | None) -> str:
        if comment is None:
            raise RecordFailure(f"the comment of attachment {record.source_id} is not loaded")
        upload = await self._upload(record)
        issue = self.load.issue_key(record)
        reply = await self.load.client.import_comment_attachment(issue, comment, **upload)
        return str(reply["id"])

    async def _upload(self, record: StagedRecord) -> dict[str, Any]:
        load = self.load
        load.refuse_over_limit(record)
        return {
            "filename": record.raw["name"],
            "created_at": record.raw["createdAt"],
            "created_by": load.transform.users.login(record.raw.get("createdBy")),
            "source": await staged_bytes(load.store, record, drained="issue"),
        }


COMMENT_FILE = Kind(
    Entity("comment_attachment", staged="attachment"),
    plan_comment_attachments,
    lambda load: Files(load).comment_spec(),
)
FILE = Kind(
    Entity("attachment", files=True), plan_attachments, lambda load: Files(load).issue_spec()
)
