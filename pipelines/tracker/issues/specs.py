"""The tracker's entity specs: issues, comments and their attachments, worklogs, attachments,
checklists and links, each as the load engine's `EntitySpec` (see `pipelines.specs`).

Order follows the target's rules (reference/api-notes.md 4.1): an issue is imported with its
final `updatedAt` first, then its comments (each followed by its attachments), worklogs,
attachments and, last, its checklist (adding one is an ordinary edit, which moves the issue's
`updatedAt`); links load after every issue, from one side only, once both ends exist.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import (
    EntitySpec,
    Phase,
    Planned,
    RecordFailure,
    Ref,
    Sent,
    each_record,
    staged_bytes,
)
from haul.pipelines.tracker.issue_access import ENTITY as ISSUE_ACCESS
from haul.pipelines.tracker.issue_access import failure as access_failure
from haul.pipelines.tracker.issue_access import held, plan_issue_access
from haul.pipelines.tracker.issues.fingerprints import TrackerFingerprints
from haul.pipelines.tracker.issues.probes import TargetProbe, Unclaimed
from haul.pipelines.tracker.sync.deletions import DeletionSync, deletion_plan, vanished_issues
from haul.pipelines.tracker.sync.moves import TargetKeys, move_in_target, moved_issues
from haul.pipelines.tracker.sync.statuses import StatusSync, carried_by_import, plan_statuses
from haul.pipelines.tracker.sync.texts import (
    COMMENT_TEXT,
    ISSUE_TEXT,
    TextPatches,
    plan_comment_references,
    plan_issue_references,
)
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
    """A link shows on both issues: load the outward side, or the only side staged (the other
    end known under its key now, if it moved; one gone from the source was staged)."""
    staged, moved = store.source_ids("issue") | vanished_issues(store), moved_issues(store)
    for record in store.iter_records("link"):
        other = moved.get(record.raw["object"]["key"], record.raw["object"]["key"])
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
    ISSUE_TEXT: plan_issue_references,  # once the issue's files are in: see `references`
    COMMENT_TEXT: plan_comment_references,
    "checklist": PLAN_CHECKLISTS,
    "issue_status": plan_statuses,  # after the issue's own plan: it reads the issue's row
    "issue_access": plan_issue_access,
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
    keys: TargetKeys
    statuses: StatusSync
    # fails a record the target would refuse for a hard limit, before its send (the
    # checks layer's `TargetLimits.check`, wired by the service)
    refuse_over_limit: Callable[[StagedRecord], None]
    deletions: DeletionSync | None = None  # [sync] deletions = "mirror"
    # texts that reference files, written again once the files are in the target
    patches: TextPatches | None = None
    # (entity, what happened) -> how many: created, updated, moved, deleted (the run details)
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def specs(self) -> list[EntitySpec]:
        """The tracker's specs, in the order siblings load."""
        comment, worklog = self.prints.comment(), self.prints.worklog()
        attachment, link = self.prints.attachment(), self.prints.link()
        return [
            EntitySpec("issue", "issue", PLANS["issue"], self.send_issue, self.find_issue,
                       refresh=self.refresh_issue, relocate=self.relocate_issue),
            EntitySpec("comment", "comment", PLAN_COMMENTS, self.send_comment, comment.find,
                       refresh=self.refresh_comment, fingerprint=comment),
            EntitySpec("comment_attachment", "attachment", plan_comment_attachments,
                       self.send_comment_attachment, attachment.find,
                       claims_with=("attachment",), fingerprint=attachment),
            EntitySpec("worklog", "worklog", PLAN_WORKLOGS, self.send_worklog, worklog.find,
                       refresh=self.refresh_worklog, fingerprint=worklog),
            EntitySpec("attachment", "attachment", plan_attachments, self.send_attachment,
                       attachment.find, claims_with=("comment_attachment",),
                       fingerprint=attachment),
            *(self.patches.specs() if self.patches else []),
            EntitySpec("checklist", "checklist", PLAN_CHECKLISTS, self.send_checklist,
                       self.find_checklist),
            EntitySpec("issue_status", "issue_status", plan_statuses, self.send_status,
                       self.statuses.find),
            EntitySpec(ISSUE_ACCESS, "issue", plan_issue_access, self.send_access,
                       self.find_access, refresh=self.refresh_access, sends_conflicts=True),
            EntitySpec("link", "link", plan_links, self.send_link, link.find,
                       requires=lambda r: [Ref("issue", self.keys.current(r.raw["object"]["key"]))],
                       phase=Phase.LINKS, fingerprint=link, needs_named=True),
            *self._deletion_specs(),
        ]  # fmt: skip

    def _deletion_specs(self) -> list[EntitySpec]:
        if self.deletions is None:
            return []
        return [
            EntitySpec("deletion", "deleted", deletion_plan(mirror=True), self.send_deletion,
                       self.deletions.find, phase=Phase.DELETIONS, find_first=True),
        ]  # fmt: skip

    # -- send and find, per entity ----------------------------------------------------------

    @staticmethod
    def _key(record: StagedRecord, issue_key: str | None) -> str:
        """The target key of the issue a child record belongs to: its parent's target id, as
        the engine hands it (the ledger's, a moved issue's new key)."""
        if issue_key is None:
            raise RecordFailure(f"the issue of {record.entity} {record.source_id} is not loaded")
        return issue_key

    def _issue_key(self, record: StagedRecord) -> str:
        """The target key of the issue of a record the engine hands no issue for: one
        refreshed (handed its own target id) or a comment's attachment (handed its comment)."""
        return self.keys.key(record.parent or "")

    def _made(self, entity: str, target_id: str) -> str:
        self.changes[(entity, "created")] += 1
        return target_id

    async def send_issue(self, record: StagedRecord, parent: str | None) -> Sent:
        """Import the issue; the status staged with it is in the target with it."""
        reply = await self.client.import_issue(self.transform.issue_body(record.raw))
        key = self._made("issue", str(reply["key"]))
        return Sent(key, carried_by_import(self.store, record.source_id))

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

    async def relocate_issue(self, record: StagedRecord, target_key: str) -> str:
        """An issue moved to another queue at the source moves in the target first; its key
        now (the engine records a new one before the refresh)."""
        queue = self.transform.queues.queue(str((record.raw.get("queue") or {}).get("key")))
        key = await move_in_target(self.client, record.source_id, target_key, queue)
        if key != target_key:
            self.changes[("issue", "moved")] += 1
        return key

    async def refresh_issue(self, record: StagedRecord, key: str) -> None:
        """The issue's fields are edited (where `relocate_issue` put it). Imports keep the
        source's times, so a comment added at the source after the issue was loaded lies
        outside the target issue's window; the ordinary edit moves it to now."""
        await self.client.update_issue(key, self.transform.issue_update_body(record.raw))
        self.changes[("issue", "updated")] += 1

    async def send_status(self, record: StagedRecord, parent: str | None) -> str:
        steps = self.statuses.steps
        done = await self.statuses.send(record, parent)
        if self.statuses.steps > steps:
            self.changes[("issue", "transitioned")] += 1
        return done

    async def send_access(self, record: StagedRecord, issue_key: str | None) -> str:
        """Bring the target issue's access list to the source's (mapped, narrowed: see
        `issue_access`); fail, naming them, when holders were left out."""
        if issue_key is None:
            raise RecordFailure(f"issue {record.source_id} is not loaded")
        access = self.transform.access(record.raw)
        await self._set_access(issue_key, access.logins)
        if access.unmapped:
            raise RecordFailure(access_failure(record.source_id, access))
        return issue_key

    async def find_access(
        self, record: StagedRecord, issue_key: str | None, unclaimed: Unclaimed
    ) -> str | None:
        """The issue, once its access list is the source's; never one that leaves a holder out
        (its row stays failed, naming them)."""
        access = self.transform.access(record.raw)
        if issue_key is None or access.unmapped:
            return None
        found = await self.client.find_issue(issue_key)
        if found is None or held(found) != self._uids(access.logins):
            return None
        return issue_key

    async def refresh_access(self, record: StagedRecord, target_key: str) -> None:
        """The list changed at the source: the target's follows, removals too (the issue's
        own edit replaces it first; this reads it back, and edits only what is left)."""
        access = self.transform.access(record.raw)
        if await self._set_access(self.keys.key(record.source_id), access.logins):
            self.changes[(ISSUE_ACCESS, "updated")] += 1
        if access.unmapped:
            raise RecordFailure(access_failure(record.source_id, access))

    async def _set_access(self, key: str, logins: tuple[str, ...]) -> bool:
        """Replace the issue's access list unless it holds `logins` already; True if edited."""
        found = await self.client.find_issue(key)
        if found is None:
            raise RecordFailure(f"issue {key} is not in the target")
        if held(found) == self._uids(logins):
            return False
        await self.client.update_issue(key, {"access": list(logins)})
        return True

    def _uids(self, logins: tuple[str, ...]) -> list[str]:
        return sorted(str(self.prints.uid(login)) for login in logins)

    async def send_deletion(self, record: StagedRecord, parent: str | None) -> str:
        assert self.deletions is not None  # the spec exists only then
        done = await self.deletions.send(record, parent)
        self.changes[(str(record.raw["entity"]), "deleted")] += 1
        return done

    async def send_comment(self, record: StagedRecord, parent: str | None) -> str:
        self.refuse_over_limit(record)
        body = self.transform.comment_body(record.raw)
        reply = await self.client.import_comment(self._key(record, parent), body)
        return self._made("comment", str(reply["id"]))

    async def refresh_comment(self, record: StagedRecord, target_id: str) -> None:
        """A comment edited at the source: its text, edited in the target."""
        text = self.transform.comment_body(record.raw)["text"]
        await self.client.update_comment(self._issue_key(record), target_id, {"text": text})
        self.changes[("comment", "updated")] += 1

    async def send_worklog(self, record: StagedRecord, parent: str | None) -> str:
        body = self.transform.worklog_body(record.raw)
        reply = await self.client.import_worklog(self._key(record, parent), body)
        return self._made("worklog", str(reply[0]["id"]))

    async def refresh_worklog(self, record: StagedRecord, target_id: str) -> None:
        """A worklog edited at the source: its duration and note, edited in the target."""
        body = self.transform.worklog_body(record.raw)
        edit = {"duration": body["duration"], "comment": body.get("comment") or ""}
        await self.client.update_worklog(self._issue_key(record), target_id, edit)
        self.changes[("worklog", "updated")] += 1

    async def send_attachment(self, record: StagedRecord, parent: str | None) -> str:
        upload = await self._upload(record)
        reply = await self.client.import_attachment(self._key(record, parent), **upload)
        return self._made("attachment", str(reply["id"]))

    async def send_comment_attachment(self, record: StagedRecord, comment: str | None) -> str:
        if comment is None:
            raise RecordFailure(f"the comment of attachment {record.source_id} is not loaded")
        upload = await self._upload(record)
        issue = self._issue_key(record)
        reply = await self.client.import_comment_attachment(issue, comment, **upload)
        return str(reply["id"])

    async def _upload(self, record: StagedRecord) -> dict[str, Any]:
        self.refuse_over_limit(record)
        return {
            "filename": record.raw["name"],
            "created_at": record.raw["createdAt"],
            "created_by": self.transform.users.login(record.raw.get("createdBy")),
            "source": await staged_bytes(self.store, record, drained="issue"),
        }

    def _checklist(self, record: StagedRecord) -> list[dict[str, Any]]:
        return [self.transform.checklist_body(item) for item in record.raw["items"]]

    async def send_checklist(self, record: StagedRecord, parent: str | None) -> str:
        key = self._key(record, parent)
        await self.client.add_checklist_items(key, self._checklist(record))
        return f"{key}/checklist"

    async def find_checklist(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> str | None:
        if parent is None:
            return None
        return await self.probe.checklist(parent, self._checklist(record))

    async def send_link(self, record: StagedRecord, parent: str | None) -> str:
        body = self.transform.link_body(record.raw)
        body["issue"] = self.keys.key(record.raw["object"]["key"])  # a moved issue's new key
        try:
            reply = await self.client.import_link(self._key(record, parent), body)
        except NotFoundError as exc:
            raise LinkEndMissing(record.raw["object"]["key"]) from exc
        return self._made("link", str(reply["id"]))
