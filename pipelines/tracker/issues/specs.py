"""The tracker's entity specs: issues, comments and their attachments, worklogs, attachments,
checklists and links, each as the load engine's `EntitySpec` (see `pipelines.specs`).

Order follows the target's rules (reference/api-notes.md 4.1): an issue is imported with its
final `updatedAt` first, then its comments (each followed by its attachments), worklogs,
attachments and, last, its checklist (adding one is an ordinary edit, which moves the issue's
`updatedAt`); links load after every issue, from one side only, once both ends exist.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import (
    Conflicted,
    EntitySpec,
    Fields,
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
from haul.pipelines.tracker.issue_access import ENTITY as ISSUE_ACCESS
from haul.pipelines.tracker.issue_access import (
    AccessSettling,
    held,
    plan_issue_access,
    settle_access,
)
from haul.pipelines.tracker.issue_access import failure as access_failure
from haul.pipelines.tracker.issues.fingerprints import TargetProbe, TrackerFingerprints
from haul.pipelines.tracker.issues.three_way import IssueForms, ThreeWay
from haul.pipelines.tracker.sync.checklists import (
    checklist_base,
    replay_checklist,
    settle_checklist,
    source_items,
)
from haul.pipelines.tracker.sync.deletions import DeletionSync, deletion_plan, vanished_issues
from haul.pipelines.tracker.sync.fields import (
    ConflictRule,
    FieldChanges,
    diff_fields,
    import_only,
    same,
    updatable,
)
from haul.pipelines.tracker.sync.files import REPLACED, FileReplacement, plan_replacements
from haul.pipelines.tracker.sync.moves import move_in_target
from haul.pipelines.tracker.sync.statuses import StatusSync, carried_by_import, plan_statuses
from haul.pipelines.tracker.sync.texts import (
    COMMENT_TEXT,
    ISSUE_TEXT,
    TextPatches,
    plan_comment_references,
    plan_issue_references,
)
from haul.pipelines.tracker.target import LinkWaits, TargetKeys, moved_issues
from haul.pipelines.tracker.transform import Transform, milliseconds
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore


def _worklog_fields(worklog: Fields) -> Fields:
    """A worklog's fields a sync compares: its duration (in milliseconds: both sides may spell
    one duration differently) and its note."""
    return {
        "duration": milliseconds(worklog.get("duration")),
        "comment": worklog.get("comment") or "",
    }


class LinkEndMissing(RecordFailure):
    """A link between two issues of the migration that the target does not hold both of."""

    def __init__(self, issue: str, other: str) -> None:
        super().__init__(
            f"the target does not hold issue {issue} or {other} (deleted there?): run haul"
            " verify, then haul load --retry-failed"
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
    end known under its key now, if it moved; one gone from the source was staged). A side
    planned by an earlier run, when it was the only one staged (a link waiting for the queue
    of its other end), stays the link's one row when the other side comes."""
    staged, moved = store.source_ids("issue") | vanished_issues(store), moved_issues(store)
    for record in store.iter_records("link"):
        other = moved.get(record.raw["object"]["key"], record.raw["object"]["key"])
        this_side = record.raw.get("direction") == "outward" or other not in staged
        if this_side and not _other_side_planned(store, record, other):
            yield Planned(record, _issue_of(record))


def _other_side_planned(store: StagingStore, link: StagedRecord, other: str) -> bool:
    """Whether the ledger holds the same link staged under its other end (`other`): a link
    keeps its id on both issues, so that side is `other/<id>`."""
    return store.ledger.get("link", f"{other}/{link.raw['id']}") is not None


PLAN_COMMENTS = each_record("comment", parent=_issue_of, sort_key=_created)
PLAN_WORKLOGS = each_record(
    "worklog", parent=_issue_of, sort_key=lambda r: str(r.raw.get("start") or "")
)
PLAN_CHECKLISTS = each_record("checklist", parent=_issue_of)
CHECKLIST_MOVES_UPDATED = (
    "issue updatedAt: moved to the load's time by the issue's checklist (the API adds a"
    " checklist only as an edit, after the import)"
)
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
    REPLACED: plan_replacements,  # under the new file: after every attachment is planned
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
    # the issue's fields in the form a sync compares three ways (source, base, target)
    forms: IssueForms
    deletions: DeletionSync | None = None  # [sync] deletions = "mirror"
    conflicts: ConflictRule = "keep-target"  # [sync] conflicts: a field changed on both sides
    # texts that reference files, written again once the files are in the target
    patches: TextPatches | None = None
    # (entity, what happened) -> how many: created, updated, moved, deleted (the run details)
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)
    configured: dict[str, LedgerRow | None] = field(default_factory=dict)  # queue_config rows
    # field -> issues whose change at the source of it no update call can carry
    not_updatable: Counter[str] = field(default_factory=Counter)
    # "what: why" -> how many, for `not_carried`
    kept: Counter[str] = field(default_factory=Counter)

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
            FileReplacement(self.client, self.store, self.keys.key, self.changes).spec(),
            *(self.patches.specs() if self.patches else []),
            EntitySpec("checklist", "checklist", PLAN_CHECKLISTS, self.send_checklist,
                       self.find_checklist, refresh=self.refresh_checklist),
            EntitySpec("issue_status", "issue_status", plan_statuses, self.send_status,
                       self.statuses.find),
            EntitySpec(ISSUE_ACCESS, "issue", plan_issue_access, self.send_access,
                       self.find_access, refresh=self.refresh_access, order=Order(sends_conflicts=True)),
            EntitySpec("link", "link", plan_links, self.send_link, link.find,
                       requires=lambda r: [Ref("issue", self.keys.current(r.raw["object"]["key"]))],
                       order=Order(Phase.LINKS, needs_named=True), fingerprint=link),
            *self._deletion_specs(),
        ]  # fmt: skip

    def _deletion_specs(self) -> list[EntitySpec]:
        if self.deletions is None:
            return []
        return [
            EntitySpec("deletion", "deleted", deletion_plan(mirror=True), self.send_deletion,
                       self.deletions.find, order=Order(Phase.DELETIONS, find_first=True)),
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
        """Import the issue; the status staged with it is in the target with it. Never into
        a queue whose configuration (its permission scheme) the load failed to set."""
        self._refuse_unconfigured_queue(record)
        reply = await self.client.import_issue(self.transform.issue_body(record.raw))
        key = self._made("issue", str(reply["key"]))
        settled = carried_by_import(self.store, record.source_id)
        return Sent(key, settled, written=self.forms.source(record))

    def _refuse_unconfigured_queue(self, record: StagedRecord) -> None:
        """Fail closed: an issue of a queue whose configuration row (the organisation layer's
        `queue_config`, settled before any issue) failed is not imported, so none lands in a
        queue still open to more people than the source's."""
        queue = record.source_id.rpartition("-")[0]
        if queue not in self.configured:  # settled before the trees: asked once a queue
            self.configured[queue] = self.store.ledger.get("queue_config", queue)
        row = self.configured[queue]
        if row is not None and row.status == "failed":
            raise RecordFailure(
                f"queue {self.transform.queues.queue(queue)}'s permissions and issue types are"
                f" not set in the target ({row.error}): fix that, then run haul"
                " load --retry-failed"
            )

    async def find_issue(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        """The target issue under the record's key, if haul made it (its `unique` is ours):
        an issue someone else made under that key is not this record. Its import wrote the
        staged fields: they are its base."""
        found = await self.client.find_issue(self.transform.queues.key(record.source_id))
        if (
            found is None
            or found.get("unique") != f"{self.transform.unique_prefix}:{record.source_id}"
        ):
            return None
        return Sent(str(found["key"]), written=self.forms.source(record))

    async def relocate_issue(self, record: StagedRecord, target_key: str) -> str:
        """An issue moved to another queue at the source moves in the target first; its key
        now (the engine records a new one before the refresh)."""
        queue = self.transform.queues.queue(str((record.raw.get("queue") or {}).get("key")))
        key = await move_in_target(self.client, record.source_id, target_key, queue)
        if key != target_key:
            self.changes[("issue", "moved")] += 1
        return key

    async def refresh_issue(self, record: StagedRecord, key: str) -> Fields:
        """The issue's fields, three ways (`sync.fields`): what changed only at the source is
        edited in the target (where `relocate_issue` put it), what changed only there is kept,
        what changed on both sides is a conflict, settled by `[sync] conflicts`. The edit is
        sent even when it carries nothing: imports keep the source's times, so a comment added
        at the source after the issue was loaded lies outside the target issue's window, and
        the ordinary edit moves it to now. Answers what haul has now written (the new base)."""
        source, base, compared, target = await self._three_sides(record, key)
        self._count_not_updatable(source, base)

        async def edit(names: list[str]) -> None:
            await self.client.update_issue(key, self.forms.edit(record, source, names))

        written = await self._three_way.settle(
            "issue", record.source_id, (compared, target), edit, always=True
        )
        return written | {name: source[name] for name in import_only(source)}

    async def _three_sides(
        self, record: StagedRecord, key: str
    ) -> tuple[Fields, Fields | None, Fields, Fields]:
        """The issue's staged fields, its base, and the updatable ones at the source and in
        the target issue `key`."""
        found = await self.client.find_issue(key)
        if found is None:
            raise RecordFailure(f"issue {key} is not in the target")
        source = self.forms.source(record)
        base = self.store.written.base("issue", record.source_id)
        compared = {name: value for name, value in source.items() if updatable(name)}
        target = self.forms.target(found, {**compared, **(base or {})})
        target = {name: value for name, value in target.items() if updatable(name)}
        return source, base, compared, target

    async def field_changes(self, record: StagedRecord, key: str) -> tuple[FieldChanges, Fields]:
        """What the next refresh of the issue would carry, keep and find in conflict, and the
        target's values now (read only: `haul plan`'s preview). A field no update call can
        change that changed at the source is among those carried: the preview names it."""
        source, base, compared, target = await self._three_sides(record, key)
        changes = diff_fields(compared, base, target, self.transform.references.written_as)
        fixed = {name: source[name] for name in import_only(source)
                 if base is not None and not same(base.get(name), source.get(name))}  # fmt: skip
        return FieldChanges(changes.carried | fixed, changes.kept, changes.conflicts), target

    def _count_not_updatable(self, source: Fields, base: Fields | None) -> None:
        """Each field changed at the source that no update call can change, by name (what the
        load could not carry, in haul status and the report)."""
        for name in import_only(source):
            if base is not None and not same(base.get(name), source.get(name)):
                self.not_updatable[name] += 1

    @property
    def _three_way(self) -> ThreeWay:
        written_as = self.transform.references.written_as  # a text patched with its files
        return ThreeWay(self.store.written, self.conflicts, self.changes, written_as)

    async def send_status(self, record: StagedRecord, parent: str | None) -> str:
        steps = self.statuses.steps
        done = await self.statuses.send(record, parent)
        if self.statuses.steps > steps:
            self.changes[("issue", "transitioned")] += 1
        return done

    async def send_access(self, record: StagedRecord, issue_key: str | None) -> Sent:
        """Bring the target issue's access list to the source's (mapped, narrowed: see
        `issue_access`); fail, naming them, when holders were left out."""
        if issue_key is None:
            raise RecordFailure(f"issue {record.source_id} is not loaded")
        access = self.transform.access(record.raw)
        await self._set_access(issue_key, access.logins)
        if access.unmapped:
            raise RecordFailure(access_failure(record.source_id, access))
        return Sent(issue_key, written={"access": self._uids(access.logins)})

    async def find_access(
        self, record: StagedRecord, issue_key: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        """The issue, once its access list is the source's; never one that leaves a holder out
        (its row stays failed, naming them)."""
        access = self.transform.access(record.raw)
        if issue_key is None or access.unmapped:
            return None
        found = await self.client.find_issue(issue_key)
        if found is None or held(found) != self._uids(access.logins):
            return None
        return Sent(issue_key, written={"access": held(found)})

    async def refresh_access(self, record: StagedRecord, target_key: str) -> Fields:
        """The list changed at the source: three ways (`issue_access.settle_access`): carried
        when only the source changed it, kept when only the target did, the narrower of the
        two when both did (a conflict, never wider)."""
        access, key = self.transform.access(record.raw), self.keys.key(record.source_id)
        found = await self.client.find_issue(key)
        if found is None:
            raise RecordFailure(f"issue {key} is not in the target")
        base = self.store.written.base(ISSUE_ACCESS, record.source_id)
        source, target = self._uids(access.logins), held(found)
        settling = settle_access(
            source, None if base is None else base["access"], target, self.conflicts
        )
        if settling.overwritten:
            self.store.written.overwrote(ISSUE_ACCESS, record.source_id, "access", source, target)
        if settling.write is not None:
            logins = {self._uids((login,))[0]: login for login in access.logins}
            await self.client.update_issue(key, {"access": [logins[u] for u in settling.write]})
            self.changes[(ISSUE_ACCESS, "updated")] += 1
        if access.unmapped:
            raise RecordFailure(access_failure(record.source_id, access))
        return self._access_settled(settling)

    def _access_settled(self, settling: AccessSettling) -> Fields:
        """The base a refresh leaves; a conflict reported with both lists, by login."""
        written: Fields = {"access": settling.base}
        if settling.conflict is None:
            return written
        self.changes[(ISSUE_ACCESS, "conflict")] += 1
        logins = {uid: login for login, uid in self.prints.uids.items()}
        source, target = (
            sorted(logins.get(u, f"uid {u}") for u in side) for side in settling.conflict
        )
        raise Conflicted(
            f"access changed on both sides: source {source}, target {target}; the target keeps"
            " only the holders both name (never wider): make both sides agree, then run haul"
            " load again",
            written,
        )

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

    async def send_comment(self, record: StagedRecord, parent: str | None) -> Sent:
        self.refuse_over_limit(record)
        body = self.transform.comment_body(record.raw)
        reply = await self.client.import_comment(self._key(record, parent), body)
        return Sent(self._made("comment", str(reply["id"])), written={"text": body["text"]})

    async def refresh_comment(self, record: StagedRecord, target_id: str) -> Fields:
        """A comment edited at the source: its text, three ways (one edited on both sides is
        a conflict, one edited only in the target is kept)."""
        key, text = self._issue_key(record), self.transform.comment_text(record.raw)
        found = await self._target_record(self.client.iter_comments(key, expand=""), target_id)

        async def edit(names: list[str]) -> None:
            await self.client.update_comment(key, target_id, {"text": text})

        compared = ({"text": text}, {"text": found.get("text") or ""})
        return await self._three_way.settle("comment", record.source_id, compared, edit)

    async def send_worklog(self, record: StagedRecord, parent: str | None) -> Sent:
        body = self.transform.worklog_body(record.raw)
        reply = await self.client.import_worklog(self._key(record, parent), body)
        return Sent(self._made("worklog", str(reply[0]["id"])), written=_worklog_fields(body))

    async def refresh_worklog(self, record: StagedRecord, target_id: str) -> Fields:
        """A worklog edited at the source: its duration and note, three ways."""
        key, body = self._issue_key(record), self.transform.worklog_body(record.raw)
        found = await self._target_record(self.client.iter_worklogs(key), target_id)

        async def edit(names: list[str]) -> None:
            edit = {"duration": body["duration"], "comment": body.get("comment") or ""}
            await self.client.update_worklog(key, target_id, {n: edit[n] for n in names})

        compared = (_worklog_fields(body), _worklog_fields(found))
        return await self._three_way.settle("worklog", record.source_id, compared, edit)

    @staticmethod
    async def _target_record(listing: AsyncIterator[dict[str, Any]], target_id: str) -> Fields:
        """The target's record `target_id` from its issue's listing; gone there: a failure."""
        items = [item async for item in listing]  # read whole: the listing closes itself
        found = next((item for item in items if str(item.get("id")) == target_id), None)
        if found is None:
            raise RecordFailure(f"record {target_id} is no longer in the target")
        return found

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

    async def send_checklist(self, record: StagedRecord, parent: str | None) -> Sent:
        """The items, after everything else of the issue. The API takes a checklist only as
        an ordinary edit (`_import` has no checklist field, nothing sets `updatedAt` later),
        so the issue's `updatedAt` becomes the load's time: counted under `not_carried`.
        Answers each item's target id as written (the base of a three-way sync)."""
        key, items = self._key(record, parent), self._checklist(record)
        if items:  # else emptied at the source before it was ever loaded: nothing to write
            await self.client.add_checklist_items(key, items)
            self.kept[CHECKLIST_MOVES_UPDATED] += 1
        written = await checklist_base(self.client, key, self._checklist_items(record))
        return Sent(f"{key}/checklist", written=written)

    async def find_checklist(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        if parent is None:
            return None
        found = await self.probe.checklist(parent, self._checklist(record))
        if found is None:
            return None
        return Sent(
            found, written=await checklist_base(self.client, parent, self._checklist_items(record))
        )

    async def refresh_checklist(self, record: StagedRecord, target_id: str) -> Fields:
        """A checklist edited at the source: its items three ways (`sync.checklists`): edited,
        added and removed in the target where only the source changed them, a person's edit
        kept, an item edited on both sides a conflict; the issue where it is now."""
        key, items = self._issue_key(record), self._checklist_items(record)
        base = self.store.written.base("checklist", record.source_id)
        if base is None:  # written before three-way sync: the target made the source's
            if await replay_checklist(self.client, key, self._checklist(record)):
                self.changes[("checklist", "updated")] += 1
            return await checklist_base(self.client, key, items)
        where = (key, record.source_id)
        return await settle_checklist(self.client, where, items, base["items"], self._three_way)

    def _checklist_items(self, record: StagedRecord) -> list[tuple[str, dict[str, Any]]]:
        return source_items(record.raw["items"], self._checklist(record))

    async def send_link(self, record: StagedRecord, parent: str | None) -> str:
        body = self.transform.link_body(record.raw)
        body["issue"] = self.keys.key(record.raw["object"]["key"])  # a moved issue's new key
        try:
            reply = await self.client.import_link(self._key(record, parent), body)
        except NotFoundError as exc:
            other = self.keys.current(record.raw["object"]["key"])
            if self.store.ledger.get("issue", other) is None:  # not in this migration yet
                raise LinkWaits(other) from exc
            raise LinkEndMissing(self._key(record, parent), body["issue"]) from exc
        return self._made("link", str(reply["id"]))
