"""How `haul undo` takes back what the tracker's load wrote, entity by entity.

What the API can delete is deleted, found by its target id and the target id of the record
it lives in (an issue's key, an entity's id, a board's id). Issues, dashboards, queues, fields
and the dictionary values have no deletion in the API: they are kept and named, with what a
person can do instead. What lives in another record (an issue's status and access list, an
entity's access, a board's sprints, a dashboard's widgets) goes, or stays, with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import RecordFailure
from haul.pipelines.sync.removals import WITH_PARENT, Removal, deleted_by, with_record
from haul.pipelines.tracker.transform import QueueMap
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

    def removals(self) -> dict[str, Removal]:
        """Ledger entity -> its removal."""
        by_hand = {name: Removal(by_hand=NO_DELETION) for name in _WITHOUT_DELETION}
        issues = {name: Removal(by_hand=ARCHIVE_ISSUES) for name in ISSUES}
        removals = {
            **by_hand,
            **issues,
            "deletion": Removal(by_hand=DELETION),
            "comment": self._issue_record("comments"),
            "worklog": self._issue_record("worklog"),
            "attachment": self._issue_record("attachments"),
            "comment_attachment": self._issue_record("attachments"),
            "backfill_attachment": self._issue_record("attachments"),
            "link": self._issue_record("links"),
            "checklist": deleted_by(self._clear_checklist),
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

    def _issue_record(self, kind: str) -> Removal:
        async def delete(row: LedgerRow) -> bool:
            return await self.client.delete_record(self._issue_key(row), kind, _id(row))

        return deleted_by(delete)

    async def _clear_checklist(self, row: LedgerRow) -> bool:
        # the issue was made by the load, with no checklist: its checklist is the load's
        return await self.client.clear_checklist(self._issue_key(row))

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
