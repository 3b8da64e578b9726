"""How `haul undo` takes back what the tracker's load wrote, entity by entity.

What the API can delete is deleted, found by its target id and the target id of the record
it lives in (an issue's key, an entity's id, a board's id). Issues, dashboards, queues, fields
and the dictionary values have no deletion in the API: they are kept and named, with what a
person can do instead. What lives in another record (an issue's status and access list, an
entity's access, a board's sprints, a dashboard's widgets) goes, or stays, with it.

The base decides (`state.written`): a comment or worklog a person changed since haul wrote it
is kept and named. A checklist goes item by item, only the items haul wrote: one a person
edited stays (named, the checklist's row kept), one a person added is never haul's to delete.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import RecordFailure
from haul.pipelines.sync.references import without_file_ids
from haul.pipelines.sync.removals import (
    WITH_PARENT,
    Removal,
    changed_since,
    deleted_by,
    with_record,
)
from haul.pipelines.tracker.children.checklist_sync import item_fields
from haul.pipelines.tracker.transform import QueueMap, milliseconds
from haul.state.ledger import LedgerRow
from haul.state.store import StagingStore

ISSUES = ("issue", "backfill_issue")
ENTITY_KINDS = ("portfolio", "project", "goal")
ARCHIVE_ISSUES = (
    "the tracker's API deletes no issue: close it (a transition to a resolved status) or move"
    " it to a queue kept for archives (POST /issues/{key}/_move?queue=<ARCHIVE>)"
)
IN_USE = (
    "issues that stay name it (the tracker deletes no issue): remove it by hand once they"
    " are archived"
)
NO_DELETION = "the tracker's API has no deletion for it: remove it in the tracker by hand"
DELETION = "a deletion mirrored from the source cannot be taken back"
REPLACED = (
    "a file replaced at the source: its old copy was deleted in the target and cannot be taken"
    " back (the new copy is taken back as a file)"
)


class TrackerRemovals:
    """The tracker's removals for one target org and one store."""

    def __init__(self, client: TrackerClient, store: StagingStore, queues: QueueMap) -> None:
        self.client = client
        self.store = store
        self.queues = queues
        self._named: dict[str, set[str]] | None = None
        # (issue key, kind) -> its records by id, listed once: deleting one changes no other
        self._listed: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}

    def removals(self) -> dict[str, Removal]:
        """Ledger entity -> its removal."""
        by_hand = {name: Removal(by_hand=NO_DELETION) for name in _WITHOUT_DELETION}
        issues = {name: Removal(by_hand=ARCHIVE_ISSUES) for name in ISSUES}
        removals = {
            **by_hand,
            **issues,
            "deletion": Removal(by_hand=DELETION),
            "comment": self._issue_record("comments", self._comment_changed),
            "worklog": self._issue_record("worklog", self._worklog_changed),
            "attachment": self._issue_record("attachments"),
            "comment_attachment": self._issue_record("attachments"),
            "backfill_attachment": self._issue_record("attachments"),
            "link": self._issue_record("links"),
            "checklist": replace(
                deleted_by(self._checklist_items, changed=self._checklist_changed),
                delete_unchanged=self._unchanged_checklist_items,
            ),
            "remote_link": deleted_by(self._remote_link),
            "issue_status": WITH_PARENT,
            # a text written again with the target's file ids: an edit of its issue (its row's
            # parent) or of its comment (the row loads under the issue, has the comment's id)
            "issue_references": WITH_PARENT,
            "comment_references": with_record(lambda row: ("comment", row.source_id)),
            "issue_access": WITH_PARENT,
            "component": deleted_by(
                lambda row: self.client.delete_component(_id(row)), self._named_by_issues
            ),
            "version": deleted_by(
                lambda row: self.client.delete_version(_id(row)), self._named_by_issues
            ),
            "board": deleted_by(lambda row: self.client.delete_board(_id(row)), self._board_used),
            "board_column": deleted_by(self._board_column, self._column_used),
            "sprint": WITH_PARENT,  # a board's sprints go with it; the API deletes none alone
            "filter": deleted_by(lambda row: self.client.delete_filter(_id(row))),
            "dashboard": Removal(by_hand=NO_DELETION),
            "dashboard_widget": WITH_PARENT,
            "autoaction": deleted_by(self._autoaction),
            "trigger": deleted_by(self._queue_rule("triggers")),
            "macro": deleted_by(self._queue_rule("macros")),
            "queue_config": WITH_PARENT,  # a queue's settings stay with the queue, kept
            "attachment_replaced": Removal(by_hand=REPLACED),
            "entity_access": WITH_PARENT,
            "entity_comment": self._entity_record(
                lambda kind, entity, comment: self.client.delete_entity_comment(
                    kind, entity, comment
                )
            ),
            "entity_attachment": self._entity_record(
                lambda kind, entity, file: self.client.delete_entity_attachment(kind, entity, file)
            ),
            "entity_checklist": deleted_by(self._clear_entity_checklist),
            "entity_link": deleted_by(self._entity_link),
        }
        for kind in ENTITY_KINDS:
            removals[kind] = deleted_by(self._entity(kind))
        return removals

    def _entity(self, kind: str) -> Callable[[LedgerRow], Awaitable[bool]]:
        async def delete(row: LedgerRow) -> bool:
            return await self.client.delete_entity(kind, _id(row))

        return delete

    # -- where a record lives in the target ---------------------------------------------------

    def _target(self, entity: str | None, source_id: str | None) -> str:
        row = self.store.ledger.get(entity or "", source_id or "")
        if row is None or row.status != "done" or not row.target_id:
            raise RecordFailure(f"{entity} {source_id} is not in the target: cannot find it there")
        return row.target_id

    def _issue_key(self, row: LedgerRow) -> str:
        """The target key of the issue the row's record lives in (its parent's, or its
        parent's issue: a comment's file)."""
        current: LedgerRow | None = row
        while current is not None and current.parent_entity:
            if current.parent_entity in ISSUES:
                return self._target(current.parent_entity, current.parent)
            current = self.store.ledger.get(current.parent_entity, current.parent or "")
        raise RecordFailure(f"{row.entity} {row.source_id} lives in no issue haul loaded")

    # -- what stays because issues, which stay, name it ----------------------------------------

    def _named_by_issues(self, row: LedgerRow) -> str | None:
        if row.source_id in self._used().get(row.entity, set()):
            return IN_USE
        return None

    def _board_used(self, row: LedgerRow) -> str | None:
        """A board goes with its sprints: kept while an issue names one of them."""
        sprints = self._used().get("sprint", set())
        children = self.store.ledger.children(row.entity, row.source_id)
        named = any(c.entity == "sprint" and c.source_id in sprints for c in children)
        return IN_USE if named else None

    def _column_used(self, row: LedgerRow) -> str | None:
        board = self.store.ledger.get(row.parent_entity or "", row.parent or "")
        return self._board_used(board) if board is not None else None

    def _used(self) -> dict[str, set[str]]:
        """entity -> the source ids the staged issues name (read once)."""
        if self._named is None:
            self._named = {}
            for record in self.store.iter_records("issue"):
                for field, entity in _NAMED.items():
                    refs = record.raw.get(field) or []
                    for ref in refs if isinstance(refs, list) else [refs]:
                        if isinstance(ref, dict) and ref.get("id") is not None:
                            self._named.setdefault(entity, set()).add(str(ref["id"]))
        return self._named

    # -- the deletions ----------------------------------------------------------------------

    def _issue_record(
        self, kind: str, changed: Callable[[LedgerRow], Awaitable[str | None]] | None = None
    ) -> Removal:
        async def delete(row: LedgerRow) -> bool:
            return await self.client.delete_record(self._issue_key(row), kind, _id(row))

        return deleted_by(delete, changed=changed)

    async def _comment_changed(self, row: LedgerRow) -> str | None:
        """What a person changed of the comment's text since haul wrote it (file ids aside:
        haul's own second write changes only those)."""
        base = self.store.written.base(row.entity, row.source_id)
        return _text_changed(base, await self._held(row, "comments"))

    async def _worklog_changed(self, row: LedgerRow) -> str | None:
        """What a person changed of the worklog's duration or note since haul wrote them."""
        base = self.store.written.base(row.entity, row.source_id)
        return _worklog_changed(base, await self._held(row, "worklog"))

    async def _held(self, row: LedgerRow, kind: str) -> dict[str, Any] | None:
        """The row's record as its issue's listing of `kind` holds it now (None: gone)."""
        key = self._issue_key(row)
        if (key, kind) not in self._listed:
            self._listed[(key, kind)] = await _by_id(_listing(self.client, key, kind))
        return self._listed[(key, kind)].get(_id(row))

    # -- a checklist: the items haul wrote, one by one ----------------------------------------

    async def _checklist_changed(self, row: LedgerRow) -> str | None:
        edited = [item for item, same in await self._checklist_items_held(row) if not same]
        if not edited:
            return None
        texts = ", ".join(repr(item.get("text")) for item in edited)
        return (
            f"a person changed {len(edited)} of its items in the target ({texts}) since haul"
            " wrote them"
        )

    async def _checklist_items(self, row: LedgerRow) -> bool:
        """Delete every item haul wrote that the target still holds; True if any went."""
        return await self._delete_items(row, edited_too=True)

    async def _unchanged_checklist_items(self, row: LedgerRow) -> None:
        await self._delete_items(row, edited_too=False)

    async def _delete_items(self, row: LedgerRow, *, edited_too: bool) -> bool:
        key, deleted = self._issue_key(row), False
        for item, same in await self._checklist_items_held(row):
            if same or edited_too:
                deleted |= await self.client.delete_record(key, "checklistItems", str(item["id"]))
        return deleted

    async def _checklist_items_held(self, row: LedgerRow) -> list[tuple[dict[str, Any], bool]]:
        """The items haul wrote that the target still holds, each with whether it is still as
        haul wrote it; an item a person added is none of them."""
        base = self.store.written.base(row.entity, row.source_id)
        if base is None:
            raise RecordFailure(
                f"checklist {row.source_id}: haul kept no record of the items it wrote (a store"
                " older than three-way sync): remove them by hand if they must go"
            )
        try:
            items = await self.client.list_checklist(self._issue_key(row))
        except NotFoundError:
            return []
        listed = {str(item["id"]): item for item in items}
        wrote = [(listed.get(str(old["id"])), old["fields"]) for old in base["items"].values()]
        return [(item, item_fields(item) == fields) for item, fields in wrote if item is not None]

    async def _remote_link(self, row: LedgerRow) -> bool:
        return await self.client.delete_remote_link(self._issue_key(row), _id(row))

    async def _board_column(self, row: LedgerRow) -> bool:
        board = self._target(row.parent_entity, row.parent)
        return await self.client.delete_board_column(board, _id(row))

    async def _autoaction(self, row: LedgerRow) -> bool:
        queue = row.source_id.rpartition("/")[0]  # "<queue>/<id>"
        return await self.client.delete_autoaction(self.queues.queue(queue), _id(row))

    def _queue_rule(self, kind: str) -> Callable[[LedgerRow], Awaitable[bool]]:
        async def delete(row: LedgerRow) -> bool:
            record = self.store.get_record(row.entity, row.source_id)  # staged under its queue
            source_queue = row.parent or (record.parent if record is not None else None)
            if not source_queue:
                raise RecordFailure(f"{row.entity} {row.source_id}: its queue is not staged")
            queue = self.queues.queue(source_queue)
            return await self.client.delete_queue_rule(queue, kind, _id(row))

        return delete

    def _entity_record(self, delete: Callable[[str, str, str], Awaitable[bool]]) -> Removal:
        async def removed(row: LedgerRow) -> bool:
            entity = self._target(row.parent_entity, row.parent)
            return await delete(row.parent_entity or "", entity, _id(row))

        return deleted_by(removed)

    async def _clear_entity_checklist(self, row: LedgerRow) -> bool:
        entity = self._target(row.parent_entity, row.parent)
        return await self.client.delete_entity_checklist(row.parent_entity or "", entity)

    async def _entity_link(self, row: LedgerRow) -> bool:
        """The link to its other end (the API deletes an entity's link by the other end)."""
        entity = self._target(row.parent_entity, row.parent)
        record = self.store.get_record("entity_link", row.source_id)
        if record is None:
            raise RecordFailure(f"entity_link {row.source_id} is no longer staged")
        end = record.raw.get("linkFieldValues") or {}
        kind = str(record.raw.get("entityType"))
        if kind == "issue":
            key = str(end.get("key"))
            found = self.store.ledger.get("issue", key)
            right = found.target_id if found and found.target_id else self.queues.key(key)
        else:
            right = self._target(kind, str(end.get("id")))
        return await self.client.delete_entity_link(row.parent_entity or "", entity, right)


# the organisation objects the API deletes none of (spec: "no delete operation exists")
_WITHOUT_DELETION = (
    "status", "issuetype", "priority", "resolution", "queue", "backfill_queue",
    "field_category", "field", "local_field", "workflow",
)  # fmt: skip


# an issue's fields that name organisation objects undo could delete -> their ledger entity
_NAMED = {
    "components": "component", "fixVersions": "version", "affectedVersions": "version",
    "sprint": "sprint",
}  # fmt: skip


def _id(row: LedgerRow) -> str:
    return row.target_id or ""


async def changed_in_target(
    client: TrackerClient, key: str, entity: str, target_id: str, base: dict[str, Any] | None
) -> str | None:
    """What a person changed of a comment or worklog (`entity`) of issue `key` since haul
    wrote it (its base): a comment's text (file ids aside: haul's own second write changes
    only those), a worklog's duration or note; None when nothing, or when it is gone."""
    kind = "comments" if entity == "comment" else "worklog"
    found = (await _by_id(_listing(client, key, kind))).get(target_id)
    return (_text_changed if entity == "comment" else _worklog_changed)(base, found)


def _listing(client: TrackerClient, key: str, kind: str) -> AsyncIterator[dict[str, Any]]:
    return client.iter_comments(key, expand="") if kind == "comments" else client.iter_worklogs(key)


def _worklog_changed(base: dict[str, Any] | None, found: dict[str, Any] | None) -> str | None:
    if found is None:
        return None  # gone already: its deletion answers 404
    held = {"duration": milliseconds(found.get("duration")), "comment": found.get("comment") or ""}
    return changed_since(base, held)


def _text_changed(base: dict[str, Any] | None, found: dict[str, Any] | None) -> str | None:
    if found is None:
        return None  # gone already: its deletion answers 404
    return changed_since(base, {"text": found.get("text") or ""}, same=_same_text)


def _same_text(wrote: Any, held: Any) -> bool:
    return without_file_ids(str(wrote or "")) == without_file_ids(str(held or ""))


async def _by_id(listing: AsyncIterator[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """An issue's listing by record id (empty when the issue is gone)."""
    try:
        items = [item async for item in listing]  # read whole: the listing closes itself
    except NotFoundError:
        return {}
    return {str(item.get("id")): item for item in items}
