"""Texts written again once the files they show are in the target.

A text is written once with what can be rewritten then (users, web hosts, the files already in
the target: `pipelines.sync.references`, with the tracker's maps from `pipelines.tracker.target`). Its own files cannot be in the target before it: an issue's files import into
the issue, a comment's into the comment. So a text that references files has one more ledger
row, loaded under its issue after the issue's comments and files (a comment's row
`requires` its comment): `issue_references` (the description) and `comment_references` (a
comment's text). Its send writes the whole text
again with every file now known, an edit that sets a value (sending it twice leaves the same
text), and its find reads the target's text and compares: the ledger's exactly-once holds as
for any record. A file it shows that is not in the target (it failed, say over the target's
size limit, or it is not migrated) leaves its reference as written, the rest of the text
rewritten: it is counted among what the run did not carry, naming the file and the text
(`haul status`, the report), and `haul verify` reports the reference to the source. A failed
file does not fail the text as well: the file's own failure is the one to fix, and once
`haul load --retry-failed` loads it, the texts that show it are written again after it (the
rows' `shows`: the engine marks them changed, their refresh writes them). A row is hashed on
its text alone, so a change elsewhere in its issue or comment does not write it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Planned, RecordFailure, Ref
from haul.pipelines.sync.references import References, file_references, without_file_ids
from haul.pipelines.tracker.issues.fields import COMMENT_TEXT, ISSUE_TEXT
from haul.pipelines.tracker.issues.kinds import Kind, TreeLoad
from haul.state.hashing import content_hash
from haul.state.store import StagedRecord, StagingStore


def plan_issue_references(store: StagingStore) -> Iterator[Planned]:
    """A description that references files: patched under its issue, after its files. The
    row carries the description alone: another field edited at the source is the issue's
    refresh to carry, and a description edited in the target is kept (three-way sync)."""
    for record in store.iter_records("issue"):
        text = record.raw.get("description")
        if file_references(text):
            yield Planned(record, Ref("issue", record.source_id), content_hash=content_hash(text))


def plan_comment_references(store: StagingStore) -> Iterator[Planned]:
    """A comment that references files: patched under its issue, after its files (the row
    carries the comment's text alone, as a description's)."""
    for record in store.iter_records("comment"):
        text = record.raw.get("text")
        if file_references(text):
            parent, order = Ref("issue", record.parent or ""), str(record.raw["createdAt"])
            yield Planned(record, parent, order, content_hash=content_hash(text))


def files_not_migrated(store: StagingStore) -> Iterator[tuple[str, str, list[str]]]:
    """(entity, source id, file ids) of each staged text that shows files no staged record
    holds (another issue's not in scope, a file deleted at the source): their references
    will keep pointing at the source, so `haul check` names them before the load."""
    staged = {source_id.rpartition("/")[2] for source_id in store.source_ids("attachment")}
    for entity, name in (("issue", "description"), ("comment", "text")):
        for record in store.iter_records(entity):
            shown = dict.fromkeys(file_references(record.raw.get(name)))
            if missing := [file_id for file_id in shown if file_id not in staged]:
                yield entity, record.source_id, missing


@dataclass
class TextPatches:
    """The two specs that write a text again once its files are in the target."""

    client: TrackerClient
    store: StagingStore
    references: References
    text: Callable[[str | None], str | None]  # the transform's: references, then keys

    @classmethod
    def of(cls, load: TreeLoad) -> TextPatches:
        transform = load.transform
        return cls(load.client, load.store, transform.references, transform.text)

    def description_spec(self) -> EntitySpec:
        return EntitySpec(
            ISSUE_TEXT, "issue", plan_issue_references, self.send_description,
            self.find_description, refresh=self.refresh_description,
            shows=lambda r: self.files_shown(r.raw.get("description")),
        )  # fmt: skip

    def comment_spec(self) -> EntitySpec:
        return EntitySpec(
            COMMENT_TEXT, "comment", plan_comment_references, self.send_comment,
            self.find_comment, refresh=self.refresh_comment,
            requires=lambda r: [Ref("comment", r.source_id)],
            shows=lambda r: self.files_shown(r.raw.get("text")),
        )  # fmt: skip

    def files_shown(self, text: str | None) -> list[Ref]:
        """The staged files a text shows: one that failed and loads on a retry has the text
        written again after it (`haul load --retry-failed`)."""
        shown = set(file_references(text))
        if not shown:
            return []
        return [
            Ref("attachment", source_id)
            for source_id in self.store.source_ids("attachment")
            if source_id.rpartition("/")[2] in shown
        ]

    def description(self, record: StagedRecord) -> str:
        return self.text(record.raw.get("description")) or ""

    def comment_text(self, record: StagedRecord) -> str:
        return self.text(record.raw.get("text")) or ""

    async def send_description(self, record: StagedRecord, issue_key: str | None) -> str:
        """Write the description again, unless the target holds it as it should be already
        (none of its files loaded, or the issue's own refresh wrote it): an edit moves the
        issue's `updatedAt`, so none is made for nothing."""
        key = _loaded(record, issue_key)
        if await self.find_description(record, key, None) is None:
            await self.client.update_issue(key, {"description": self.description(record)})
        self._count_waiting(record, record.raw.get("description"))
        return key

    async def refresh_description(self, record: StagedRecord, issue_key: str) -> None:
        """The description changed at the source: as `send_description`, unless a person
        edited it in the target since haul wrote it (the issue's three-way refresh keeps that
        edit and reports a conflict: this write must not undo it)."""
        found = await self.client.find_issue(issue_key)
        base = self.store.written.base("issue", record.source_id)
        if found is not None and _edited_since(base, "description", found.get("description")):
            return
        await self.send_description(record, issue_key)

    async def find_description(
        self, record: StagedRecord, issue_key: str | None, unclaimed: object
    ) -> str | None:
        found = await self.client.find_issue(issue_key) if issue_key else None
        if found is None or (found.get("description") or "") != self.description(record):
            return None
        return issue_key

    def _comment_id(self, record: StagedRecord) -> str:
        row = self.store.ledger.get("comment", record.source_id)
        if row is None or row.status != "done" or not row.target_id:
            raise RecordFailure(f"comment {record.source_id} is not loaded")
        return row.target_id

    async def send_comment(self, record: StagedRecord, issue_key: str | None) -> str:
        """As `send_description`, for a comment's text (an edit of a comment moves its
        issue's `updatedAt` too). What the target holds is what haul wrote of the comment (its
        base), so the comments are read back only for a comment without one; the engine sends
        again only after its find saw the text still unwritten."""
        key, comment_id = _loaded(record, issue_key), self._comment_id(record)
        held = self._written_text(record)
        if held is None:
            held = await self._target_text(key, comment_id)
        await self._write_comment(record, key, comment_id, held)
        return comment_id

    async def _write_comment(
        self, record: StagedRecord, key: str, comment_id: str, held: str | None
    ) -> None:
        """Write the comment's text unless `held` (the target's) is it already."""
        if held != self.comment_text(record):
            await self.client.update_comment(key, comment_id, {"text": self.comment_text(record)})
        self._count_waiting(record, record.raw.get("text"))

    def _written_text(self, record: StagedRecord) -> str | None:
        """The comment's text as haul last wrote it (None: haul keeps no base of it)."""
        base = self.store.written.base("comment", record.source_id)
        text = None if base is None else base.get("text")
        return text if isinstance(text, str) else None

    async def _target_text(self, issue_key: str, comment_id: str) -> str | None:
        """The comment's text in the target (None: no such comment there)."""
        async for comment in self.client.iter_comments(issue_key, expand=""):
            if str(comment["id"]) == comment_id:
                return str(comment.get("text") or "")
        return None

    async def refresh_comment(self, record: StagedRecord, comment_id: str) -> None:
        """The comment changed at the source: as `send_comment`, unless a person edited it
        in the target since haul wrote it (as `refresh_description`)."""
        issue_key = self.store.ledger.target_id("issue", record.parent or "")
        base = self.store.written.base("comment", record.source_id)
        if issue_key is None or base is None:
            await self.send_comment(record, issue_key)
            return
        comment_id = self._comment_id(record)
        held = await self._target_text(issue_key, comment_id)
        if held is not None and _edited_since(base, "text", held):
            return
        await self._write_comment(record, issue_key, comment_id, held)

    async def find_comment(
        self, record: StagedRecord, issue_key: str | None, unclaimed: object
    ) -> str | None:
        row = self.store.ledger.get("comment", record.source_id)
        if issue_key is None or row is None or row.status != "done" or not row.target_id:
            return None  # its comment is not in the target yet (a plan, a lost store): to make
        held = await self._target_text(issue_key, row.target_id)
        return row.target_id if held == self.comment_text(record) else None

    def _count_waiting(self, record: StagedRecord, text: str | None) -> None:
        """Count each file the text shows that is not in the target (its reference left)."""
        self.references.settled(text, f"{record.entity} {record.source_id}")


def _edited_since(base: dict[str, Any] | None, name: str, found: str | None) -> bool:
    """Whether the target's text differs from what haul last wrote of it, file ids aside
    (haul's own second write changes only those); no base: haul cannot tell, so no."""
    if base is None or not isinstance(base.get(name), str):
        return False
    return without_file_ids(base[name]) != without_file_ids(found or "")


def _loaded(record: StagedRecord, issue_key: str | None) -> str:
    if issue_key is None:
        raise RecordFailure(f"the issue of {record.entity} {record.source_id} is not loaded")
    return issue_key


# a description that shows files, written again once they are in (under its issue)
DESCRIPTION = Kind(
    Entity(ISSUE_TEXT, staged="issue", optional=True),
    plan_issue_references,
    lambda load: TextPatches.of(load).description_spec(),
)
# a comment's text that shows files, written again once they are in (requires its comment)
COMMENT_TEXT_KIND = Kind(
    Entity(COMMENT_TEXT, staged="comment", optional=True),
    plan_comment_references,
    lambda load: TextPatches.of(load).comment_spec(),
)
