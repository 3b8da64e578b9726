"""The tracker's entity specs: issues, comments and their attachments, worklogs, attachments,
checklists and links, each as the load engine's `EntitySpec` (see `pipelines.specs`).

Order follows the target's rules (reference/api-notes.md 4.1): an issue is imported with its
final `updatedAt` first, then its comments (each followed by its attachments), worklogs,
attachments and, last, its checklist (adding one is an ordinary edit, which moves the issue's
`updatedAt`); links load after every issue, from one side only, once both ends exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import (
    EntitySpec,
    Planned,
    RecordFailure,
    Ref,
    each_record,
    staged_bytes,
)
from haul.pipelines.tracker.fingerprints import TrackerFingerprints
from haul.pipelines.tracker.probes import TargetProbe, Unclaimed
from haul.pipelines.tracker.transform import Transform
from haul.state.store import StagedRecord, StagingStore


class LinkEndMissing(RecordFailure):
    """A link to an issue outside the migration's scope that the target does not have either."""

    def __init__(self, other: str) -> None:
        super().__init__(
            f"linked issue {other} is outside the migration's scope and not in the target: "
            "migrate its queue, then run haul load --retry-failed"
        )


def _issue_of(record: StagedRecord) -> Ref:
    return Ref("issue", record.parent or "")


def _created(record: StagedRecord) -> str:
    return str(record.raw.get("createdAt") or "")


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
            yield Planned(record, Ref("comment", owners[record.source_id]), _created(record))


def plan_attachments(store: StagingStore) -> Iterator[Planned]:
    """The issue's own attachments: those no comment holds."""
    owners = comment_attachment_owners(store)
    for record in store.iter_records("attachment"):
        if record.source_id not in owners:
            yield Planned(record, _issue_of(record), _created(record))


def plan_links(store: StagingStore) -> Iterator[Planned]:
    """A link shows on both issues: load the outward side, or the only side staged."""
    staged = store.source_ids("issue")
    for record in store.iter_records("link"):
        other = record.raw["object"]["key"]
        if record.raw.get("direction") == "outward" or other not in staged:
            yield Planned(record, _issue_of(record))


PLAN_COMMENTS = each_record("comment", parent=_issue_of, sort_key=_created)
PLAN_WORKLOGS = each_record(
    "worklog", parent=_issue_of, sort_key=lambda r: str(r.raw.get("start") or "")
)
PLAN_CHECKLISTS = each_record("checklist", parent=_issue_of)
# name -> plan, in the order siblings load: what the ledger holds, with or without a target
PLANS = {
    "issue": each_record("issue"),
    "comment": PLAN_COMMENTS,
    "comment_attachment": plan_comment_attachments,
    "worklog": PLAN_WORKLOGS,
    "attachment": plan_attachments,
    "checklist": PLAN_CHECKLISTS,
    "link": plan_links,
}


@dataclass
class TrackerLoad:
    """Everything the tracker's specs need to write to one target org."""

    client: TrackerClient
    store: StagingStore
    transform: Transform
    probe: TargetProbe
    prints: TrackerFingerprints

    def specs(self) -> list[EntitySpec]:
        """The tracker's specs, in the order siblings load."""
        comment, worklog = self.prints.comment(), self.prints.worklog()
        attachment, link = self.prints.attachment(), self.prints.link()
        return [
            EntitySpec("issue", "issue", PLANS["issue"], self.send_issue, self.find_issue,
                       refresh=self.refresh_issue),
            EntitySpec("comment", "comment", PLAN_COMMENTS, self.send_comment, comment.find,
                       fingerprint=comment),
            EntitySpec("comment_attachment", "attachment", plan_comment_attachments,
                       self.send_comment_attachment, attachment.find,
                       claims_with=("attachment",), fingerprint=attachment),
            EntitySpec("worklog", "worklog", PLAN_WORKLOGS, self.send_worklog, worklog.find,
                       fingerprint=worklog),
            EntitySpec("attachment", "attachment", plan_attachments, self.send_attachment,
                       attachment.find, claims_with=("comment_attachment",),
                       fingerprint=attachment),
            EntitySpec("checklist", "checklist", PLAN_CHECKLISTS, self.send_checklist,
                       self.find_checklist),
            EntitySpec("link", "link", plan_links, self.send_link, link.find,
                       requires=lambda r: [Ref("issue", r.raw["object"]["key"])], phase=1,
                       fingerprint=link),
        ]  # fmt: skip

    # -- send and find, per entity ----------------------------------------------------------

    def _key(self, record: StagedRecord) -> str:
        """The target key of the issue a child record belongs to."""
        return self.transform.queues.key(record.parent or "")

    async def send_issue(self, record: StagedRecord, parent: str | None) -> str:
        return str((await self.client.import_issue(self.transform.issue_body(record.raw)))["key"])

    async def find_issue(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> str | None:
        """The target issue under the record's key, if haul made it (its `unique` is ours):
        an issue someone else made under that key is not this record."""
        found = await self.client.find_issue(self.transform.queues.key(record.source_id))
        if (
            found is None
            or found.get("unique") != f"{self.transform.unique_prefix}:{record.source_id}"
        ):
            return None
        return str(found["key"])

    async def refresh_issue(self, record: StagedRecord, target_key: str) -> None:
        """Imports keep the source's times, so a comment added at the source after the issue
        was loaded lies outside the target issue's window; an ordinary edit moves it to now."""
        await self.client.update_issue(target_key, self.transform.issue_update_body(record.raw))

    async def send_comment(self, record: StagedRecord, parent: str | None) -> str:
        body = self.transform.comment_body(record.raw)
        return str((await self.client.import_comment(self._key(record), body))["id"])

    async def send_worklog(self, record: StagedRecord, parent: str | None) -> str:
        body = self.transform.worklog_body(record.raw)
        return str((await self.client.import_worklog(self._key(record), body))[0]["id"])

    async def send_attachment(self, record: StagedRecord, parent: str | None) -> str:
        upload = await self._upload(record)
        reply = await self.client.import_attachment(self._key(record), **upload)
        return str(reply["id"])

    async def send_comment_attachment(self, record: StagedRecord, comment: str | None) -> str:
        if comment is None:
            raise RecordFailure(f"the comment of attachment {record.source_id} is not loaded")
        upload = await self._upload(record)
        reply = await self.client.import_comment_attachment(self._key(record), comment, **upload)
        return str(reply["id"])

    async def _upload(self, record: StagedRecord) -> dict[str, Any]:
        return {
            "filename": record.raw["name"],
            "created_at": record.raw["createdAt"],
            "created_by": self.transform.users.login(record.raw.get("createdBy")),
            "source": await staged_bytes(self.store, record, drained="issue"),
        }

    def _checklist(self, record: StagedRecord) -> list[dict[str, Any]]:
        return [self.transform.checklist_body(item) for item in record.raw["items"]]

    async def send_checklist(self, record: StagedRecord, parent: str | None) -> str:
        key = self._key(record)
        await self.client.add_checklist_items(key, self._checklist(record))
        return f"{key}/checklist"

    async def find_checklist(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> str | None:
        return await self.probe.checklist(self._key(record), self._checklist(record))

    async def send_link(self, record: StagedRecord, parent: str | None) -> str:
        try:
            reply = await self.client.import_link(
                self._key(record), self.transform.link_body(record.raw)
            )
        except NotFoundError as exc:
            raise LinkEndMissing(record.raw["object"]["key"]) from exc
        return str(reply["id"])
