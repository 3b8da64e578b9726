"""How an issue and its checklist are read back from the target and fingerprinted on both sides.

The sub-records with an identity of their own (comments, worklogs, attachments, links) are
compared through their fingerprints (`pipelines.tracker.fingerprints`), the same fields their
`find` matches on; this verifier covers the two that have none: the issue (found by key and
`unique`, compared on its mapped fields) and its checklist (the issue's last items). The
source side is the staged record through the load's own `Transform`; users compare as target
uids, dictionary values as target ids, times as instants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.fingerprints import TrackerFingerprints, instant, ref_id
from haul.pipelines.tracker.transform import Transform
from haul.pipelines.verifying import Fields
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord


@dataclass
class TrackerVerifier:
    """Fingerprints of loaded issues and checklists, source side and target side."""

    client: TrackerClient
    transform: Transform
    prints: TrackerFingerprints

    compares: ClassVar[frozenset[str]] = frozenset(("issue", "checklist"))

    async def compare(self, row: LedgerRow, record: StagedRecord) -> tuple[Fields, Fields | None]:
        """(expected, found) for one done ledger row; found is None when the target lacks it."""
        if row.entity == "checklist":
            return self._checklist(record), await self._target_checklist(record)
        return self._issue(record), await self._target_issue(row)

    def _issue(self, record: StagedRecord) -> Fields:
        body = self.transform.issue_body(record.raw)
        return {
            "summary": body["summary"],
            "description": body.get("description"),
            "createdAt": instant(body["createdAt"]),
            "createdBy": self.prints.uid(body["createdBy"]),
            "status": ref_id(body.get("status")),
            "type": ref_id(body.get("type")),
            "priority": ref_id(body.get("priority")),
            "tags": sorted(body.get("tags") or []),
            "assignee": self.prints.uid(body.get("assignee")),
        }

    async def _target_issue(self, row: LedgerRow) -> Fields | None:
        found = await self.client.find_issue(row.target_id or "")
        if found is None:
            return None
        return {
            "summary": found.get("summary"),
            "description": found.get("description"),
            "createdAt": instant(found.get("createdAt")),
            "createdBy": ref_id(found.get("createdBy")),
            "status": ref_id(found.get("status")),
            "type": ref_id(found.get("type")),
            "priority": ref_id(found.get("priority")),
            "tags": sorted(found.get("tags") or []),
            "assignee": ref_id(found.get("assignee")),
        }

    def _checklist(self, record: StagedRecord) -> Fields:
        items = [self.transform.checklist_body(item) for item in record.raw["items"]]
        return {"items": [[item["text"], item["checked"]] for item in items]}

    async def _target_checklist(self, record: StagedRecord) -> Fields | None:
        key = self.prints.issue_key(record)
        items = await self.client.list_checklist(key)
        wanted = len(record.raw["items"])
        listed = [[item.get("text"), bool(item.get("checked"))] for item in items]
        return {"items": listed[-wanted:] if wanted else []}
