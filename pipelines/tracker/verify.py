"""How each tracker entity is read back from the target and fingerprinted on both sides.

The source side is the staged record put through the same `Transform` the load applies (queue
keys, users, dictionary keys), reduced to the fields a person would compare; the target side is
the record the ledger's target id names, read back (children by listing their issue's records).
Users compare as target uids, dictionary values as target ids, times as instants.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.tracker.probes import parse_time
from haul.pipelines.tracker.service import build_transform, target_uids
from haul.pipelines.tracker.transform import Transform
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

Fields = dict[str, Any]
MISSING = "(missing in target)"


class _HashSink:
    """A download sink that keeps only the sha256 of what it is given."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        return len(data)


def _time(value: Any) -> str | None:
    if not value:
        return None
    try:
        return parse_time(str(value)).isoformat()
    except ValueError:
        return str(value)


def _ref(value: Any) -> str | None:
    if isinstance(value, dict):
        return str(value.get("id"))
    return None if value is None else str(value)


@dataclass
class TrackerVerifier:
    """Fingerprints of loaded tracker records, source side and target side."""

    client: TrackerClient
    store: StagingStore
    transform: Transform
    uids: dict[str, str]
    _lists: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def _uid(self, login: str | None) -> str | None:
        return None if login is None else self.uids.get(login, login)

    async def compare(self, row: LedgerRow, record: StagedRecord) -> tuple[Fields, Fields | None]:
        """(expected, found) for one done ledger row; found is None when the target lacks it."""
        expected, read = {
            "issue": (self._issue, self._target_issue),
            "comment": (self._comment, self._target_comment),
            "worklog": (self._worklog, self._target_worklog),
            "attachment": (self._attachment, self._target_attachment),
            "comment_attachment": (self._attachment, self._target_attachment),
            "link": (self._link, self._target_link),
            "checklist": (self._checklist, self._target_checklist),
        }[row.entity]
        return expected(record), await read(row, record)

    # -- source side: the staged record as the load maps it --------------------------------

    def _issue(self, record: StagedRecord) -> Fields:
        body = self.transform.issue_body(record.raw)
        return {
            "summary": body["summary"],
            "description": body.get("description"),
            "createdAt": _time(body["createdAt"]),
            "createdBy": self._uid(body["createdBy"]),
            "status": _ref(body.get("status")),
            "type": _ref(body.get("type")),
            "priority": _ref(body.get("priority")),
            "tags": sorted(body.get("tags") or []),
            "assignee": self._uid(body.get("assignee")),
        }

    def _comment(self, record: StagedRecord) -> Fields:
        body = self.transform.comment_body(record.raw)
        return {
            "text": body["text"],
            "createdAt": _time(body["createdAt"]),
            "createdBy": self._uid(body["createdBy"]),
        }

    def _worklog(self, record: StagedRecord) -> Fields:
        body = self.transform.worklog_body(record.raw)
        return {
            "duration": body["duration"],
            "start": _time(body["start"]),
            "createdBy": self._uid(body["createdBy"]),
        }

    def _attachment(self, record: StagedRecord) -> Fields:
        raw = record.raw
        return {"name": raw["name"], "size": int(raw.get("size") or 0), "sha256": record.blob}

    def _link(self, record: StagedRecord) -> Fields:
        raw = record.raw
        symmetric = raw["type"]["id"] == "relates"
        return {
            "type": raw["type"]["id"],
            "direction": "both" if symmetric else raw.get("direction"),
            "issue": self.transform.queues.key(record.parent or ""),
            "other": self.transform.queues.key(raw["object"]["key"]),
        }

    def _checklist(self, record: StagedRecord) -> Fields:
        items = [self.transform.checklist_body(item) for item in record.raw["items"]]
        return {"items": [[item["text"], item["checked"]] for item in items]}

    # -- target side: the record read back --------------------------------------------------

    async def _listed(
        self, kind: str, key: str, read: Callable[[str], Awaitable[list[dict[str, Any]]]]
    ) -> list[dict[str, Any]]:
        if (kind, key) not in self._lists:
            try:
                self._lists[kind, key] = await read(key)
            except NotFoundError:
                self._lists[kind, key] = []
        return self._lists[kind, key]

    async def _child(
        self, kind: str, row: LedgerRow, record: StagedRecord, read: Any
    ) -> dict[str, Any] | None:
        key = self.transform.queues.key(record.parent or "")
        listed = await self._listed(kind, key, read)
        return next((item for item in listed if str(item.get("id")) == row.target_id), None)

    async def _target_issue(self, row: LedgerRow, record: StagedRecord) -> Fields | None:
        found = await self.client.find_issue(row.target_id or "")
        if found is None:
            return None
        return {
            "summary": found.get("summary"),
            "description": found.get("description"),
            "createdAt": _time(found.get("createdAt")),
            "createdBy": _ref(found.get("createdBy")),
            "status": _ref(found.get("status")),
            "type": _ref(found.get("type")),
            "priority": _ref(found.get("priority")),
            "tags": sorted(found.get("tags") or []),
            "assignee": _ref(found.get("assignee")),
        }

    async def _target_comment(self, row: LedgerRow, record: StagedRecord) -> Fields | None:
        async def read(key: str) -> list[dict[str, Any]]:
            return [c async for c in self.client.iter_comments(key, expand="")]

        found = await self._child("comment", row, record, read)
        if found is None:
            return None
        return {
            "text": found.get("text") or "",
            "createdAt": _time(found.get("createdAt")),
            "createdBy": _ref(found.get("createdBy")),
        }

    async def _target_worklog(self, row: LedgerRow, record: StagedRecord) -> Fields | None:
        async def read(key: str) -> list[dict[str, Any]]:
            return [w async for w in self.client.iter_worklogs(key)]

        found = await self._child("worklog", row, record, read)
        if found is None:
            return None
        return {
            "duration": found.get("duration"),
            "start": _time(found.get("start")),
            "createdBy": _ref(found.get("createdBy")),
        }

    async def _target_attachment(self, row: LedgerRow, record: StagedRecord) -> Fields | None:
        found = await self._child("attachment", row, record, self.client.list_attachments)
        if found is None:
            return None
        key = self.transform.queues.key(record.parent or "")
        sink = _HashSink()
        await self.client.download_attachment(key, found["id"], found["name"], sink)
        return {
            "name": found.get("name"),
            "size": int(found.get("size") or 0),
            "sha256": sink.hash.hexdigest(),
        }

    async def _target_link(self, row: LedgerRow, record: StagedRecord) -> Fields | None:
        found = await self._child("link", row, record, self.client.list_links)
        if found is None:
            return None
        symmetric = found["type"]["id"] == "relates"
        return {
            "type": found["type"]["id"],
            "direction": "both" if symmetric else found.get("direction"),
            "issue": self.transform.queues.key(record.parent or ""),
            "other": found["object"]["key"],
        }

    async def _target_checklist(self, row: LedgerRow, record: StagedRecord) -> Fields | None:
        key = self.transform.queues.key(record.parent or "")
        items = await self._listed("checklist", key, self.client.list_checklist)
        wanted = len(record.raw["items"])
        listed = [[item.get("text"), bool(item.get("checked"))] for item in items]
        return {"items": listed[-wanted:] if wanted else []}


async def tracker_verifier(
    config: Config, client: TrackerClient, store: StagingStore
) -> TrackerVerifier:
    """The tracker's verifier: the load's transform, rebuilt from what is staged of both orgs."""
    from haul.pipelines.streams import Extractor
    from haul.pipelines.tracker.streams import dictionary_streams

    await Extractor(store, dictionary_streams(client, prefix="target.")).run()
    return TrackerVerifier(client, store, build_transform(store, config), target_uids(store))
