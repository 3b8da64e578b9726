"""What tells each tracker sub-record apart in the target: written once, for find and verify.

A comment by its time, author and text; a worklog by its start, duration and author; an
attachment by its name and size (verify also compares the sha256 of the bytes read back); a
link by its type, direction and other issue. Each lives in its issue (the target key the queue
mapping gives). The source side is the staged record through the load's own `Transform`; users
compare as target uids, times as instants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.downloads import HashSink
from haul.pipelines.specs import Fields, Fingerprint
from haul.pipelines.sync.references import without_file_ids
from haul.pipelines.tracker.timefmt import instant
from haul.pipelines.tracker.transform import Transform, ref_id
from haul.state.store import StagedRecord


@dataclass
class TrackerFingerprints:
    """The fingerprints of one target org; `uids` maps a target login to its uid."""

    client: TrackerClient
    transform: Transform
    uids: dict[str, str]
    # a source issue key -> its target key (a moved issue's new one); default: the mapping's
    target_key: Callable[[str], str] | None = None

    def key_of(self, source_key: str) -> str:
        """The target key of a source issue."""
        if self.target_key is not None:
            return self.target_key(source_key)
        return self.transform.queues.key(source_key)

    def uid(self, login: str | None) -> str | None:
        """A target login as the uid the target shows for it."""
        return None if login is None else self.uids.get(login, login)

    def issue_key(self, record: StagedRecord, parent: str | None = None) -> str:
        """The target key of the issue a sub-record lives in."""
        return self.key_of(record.parent or "")

    def comment(self) -> Fingerprint:
        """A comment: time, author, text (found by its text with the ids of the files it
        shows blanked: the same before and after the text is written again with them)."""
        return Fingerprint(
            self._comment,
            self.issue_key,
            self._comments,
            ("shape", "createdAt", "createdBy"),
            derived=("shape",),  # verify compares the text itself
        )

    def worklog(self) -> Fingerprint:
        """A worklog: start, duration, author."""
        return Fingerprint(
            self._worklog, self.issue_key, self._worklogs, ("duration", "start", "createdBy")
        )

    def attachment(self) -> Fingerprint:
        """An attachment (the issue's or a comment's): name and size; verify adds the bytes."""
        return Fingerprint(
            self._attachment, self.issue_key, self._attachments, ("name", "size"), self._bytes
        )

    def link(self) -> Fingerprint:
        """A link: type, direction (none for a symmetric type), the other issue."""
        return Fingerprint(self._link, self.issue_key, self._links, ("type", "direction", "other"))

    # -- the source side: the staged record as the load writes it -------------------------

    def _comment(self, record: StagedRecord) -> Fields:
        body = self.transform.comment_body(record.raw)
        return {
            "text": body["text"],
            "shape": without_file_ids(body["text"]),
            "createdAt": instant(body["createdAt"]),
            "createdBy": self.uid(body["createdBy"]),
        }

    def _worklog(self, record: StagedRecord) -> Fields:
        body = self.transform.worklog_body(record.raw)
        return {
            "duration": body["duration"],
            "start": instant(body["start"]),
            "createdBy": self.uid(body["createdBy"]),
        }

    def _attachment(self, record: StagedRecord) -> Fields:
        raw = record.raw
        return {"name": raw["name"], "size": int(raw.get("size") or 0), "sha256": record.blob}

    def _link(self, record: StagedRecord) -> Fields:
        raw = record.raw
        return {
            "type": raw["type"]["id"],
            "direction": _direction(raw),
            "other": self.key_of(raw["object"]["key"]),
        }

    # -- the target side: an issue's records as the same fields ----------------------------

    async def _comments(self, key: str) -> list[Fields]:
        return [
            {
                "id": c["id"],
                "text": c.get("text") or "",
                "shape": without_file_ids(c.get("text")),
                "createdAt": instant(c.get("createdAt")),
                "createdBy": ref_id(c.get("createdBy")),
            }
            async for c in self.client.iter_comments(key, expand="")
        ]

    async def _worklogs(self, key: str) -> list[Fields]:
        return [
            {
                "id": w["id"],
                "duration": w.get("duration"),
                "start": instant(w.get("start")),
                "createdBy": ref_id(w.get("createdBy")),
            }
            async for w in self.client.iter_worklogs(key)
        ]

    async def _attachments(self, key: str) -> list[Fields]:
        return [
            {"id": a["id"], "name": a.get("name"), "size": int(a.get("size") or 0)}
            for a in await self.client.list_attachments(key)
        ]

    async def _bytes(self, key: str, found: Fields) -> Fields:
        sink = HashSink()
        await self.client.download_attachment(key, found["id"], found["name"], sink)
        return {"sha256": sink.hexdigest()}

    async def _links(self, key: str) -> list[Fields]:
        return [
            {
                "id": link["id"],
                "type": link["type"]["id"],
                "direction": _direction(link),
                "other": link["object"]["key"],
            }
            for link in await self.client.list_links(key)
        ]


def _direction(link: dict[str, Any]) -> str | None:
    """A link's direction as seen from its issue; "both" for a symmetric type."""
    return "both" if link["type"]["id"] == "relates" else link.get("direction")


# -- where no fingerprint says it: ask the target ------------------------------------------


@dataclass
class TargetProbe:
    """The probes of one target org that no fingerprint expresses (see `fingerprints`)."""

    client: TrackerClient

    async def checklist(self, target_key: str, bodies: list[dict[str, Any]]) -> str | None:
        """The checklist is there when the target lists the same items in the same order."""
        items = await self.client.list_checklist(target_key)
        found = [(item.get("text"), bool(item.get("checked"))) for item in items]
        wanted = [(body["text"], body["checked"]) for body in bodies]
        return f"{target_key}/checklist" if found[-len(wanted) :] == wanted else None
