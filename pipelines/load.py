"""Load: replay staged records into the target through the ledger, exactly once.

For each record: mark it `in_flight` and commit, POST, record `done` with the target id and
commit. Before loading, every `in_flight` row left by an interrupted run is reconciled by asking
the target; an ambiguous failure (the write may have been applied) is resolved the same way at
once. A record the target rejects (4xx) is `failed` with its error and the run goes on.
Independent issues load concurrently; an issue's children load after it, in time order; links
load last, from one side only, once both ends exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog

from haul.connectors.errors import AmbiguousWriteError, ConflictError, NotFoundError, RecordError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.concurrency import for_each
from haul.pipelines.probes import TargetProbe
from haul.pipelines.progress import Progress
from haul.pipelines.transform import Transform, TransformError
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

# the checklist goes last: adding one is an ordinary edit, which moves the issue's updatedAt
CHILD_ORDER = ("comment", "worklog", "attachment", "checklist")
LOADED_ENTITIES = (
    "issue",
    "comment",
    "comment_attachment",
    "worklog",
    "attachment",
    "checklist",
    "link",
)
MAX_AMBIGUOUS = 3


class LinkEndMissing(Exception):
    """A link to an issue outside the migration's scope that the target does not have either."""

    def __init__(self, link: dict[str, Any]) -> None:
        other = link.raw["object"]["key"]
        super().__init__(
            f"linked issue {other} is outside the migration's scope and not in the target: "
            "migrate its queue, then run haul load --retry-failed"
        )


def loadable_rows(store: StagingStore) -> Iterator[dict[str, Any]]:
    """One ledger row for each staged record that the target can take."""
    owners = comment_attachment_owners(store)
    staged_issues = {row.source_id for row in store.iter_records("issue")}
    for issue in store.iter_records("issue"):
        yield _ledger_row("issue", issue, parent=issue.source_id)
    for entity in ("comment", "worklog", "checklist"):
        for record in store.iter_records(entity):
            yield _ledger_row(entity, record)
    for record in store.iter_records("attachment"):
        kind = "comment_attachment" if record.source_id in owners else "attachment"
        yield _ledger_row(kind, record)
    for record in store.iter_records("link"):
        other = record.raw["object"]["key"]
        # a link shows on both issues: load the outward side, or the only side we have
        if record.raw.get("direction") == "outward" or other not in staged_issues:
            yield _ledger_row("link", record)


def plan_load(store: StagingStore) -> int:
    """Put the loadable records in the ledger; rows already there keep their state."""
    with store.transaction():  # streamed: the store reads in pages, so writing meanwhile is safe
        return store.ledger.plan(loadable_rows(store))


def _ledger_row(entity: str, record: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {
        "entity": entity,
        "source_id": record.source_id,
        "parent": parent or record.parent,
        "payload_hash": record.content_hash,
    }


def comment_attachment_owners(store: StagingStore) -> dict[str, str]:
    """Attachment source id -> the source id of the comment it belongs to."""
    owners: dict[str, str] = {}
    for comment in store.iter_records("comment"):
        for attachment in comment.raw.get("attachments") or []:
            owners[f"{comment.parent}/{attachment['id']}"] = comment.source_id
    return owners


@dataclass
class LoadStats:
    done: int = 0
    failed: int = 0
    reconciled_found: int = 0
    reconciled_missing: int = 0
    ambiguous: int = 0
    refreshed: int = 0


@dataclass
class Loader:
    client: TrackerClient
    store: StagingStore
    transform: Transform
    probe: TargetProbe
    progress: Progress = field(default_factory=Progress)
    concurrency: int = 16
    stats: LoadStats = field(default_factory=LoadStats)

    def __post_init__(self) -> None:
        self.ledger = self.store.ledger
        self._owners = comment_attachment_owners(self.store)
        self._by_comment: dict[str, list[str]] = {}
        for attachment, owner in sorted(self._owners.items()):
            self._by_comment.setdefault(owner, []).append(attachment)

    async def run(self) -> LoadStats:
        await self.reconcile_in_flight()
        pending = {
            row.parent for row in self.ledger.iter_rows(status="pending") if row.entity != "link"
        }
        trees = sorted(pending | self._changed_since_loaded())
        self._task = self.progress.task("records loaded")
        await for_each(trees, self.load_issue_tree, self.concurrency)
        links = [row.source_id for row in self.ledger.iter_rows(status="pending", entity="link")]
        await for_each(links, self.load_link, self.concurrency)
        return self.stats

    def _changed_since_loaded(self) -> set[str]:
        """Loaded issues whose staged record changed since (a later extract re-staged them)."""
        loaded = {
            row.source_id: row.payload_hash
            for row in self.ledger.iter_rows(status="done", entity="issue")
        }
        return {
            record.source_id
            for record in self.store.iter_records("issue")
            if record.source_id in loaded
            and loaded[record.source_id] != record.content_hash
        }

    async def reconcile_in_flight(self) -> None:
        """Settle rows an interrupted run left `in_flight`: done if the target has them, else pending."""
        for row in list(self.ledger.iter_rows(status="in_flight")):
            found = await self._probe_for(row.entity, row.source_id)
            if found:
                self.ledger.done(row.entity, row.source_id, found)
                self.stats.reconciled_found += 1
            else:
                self.ledger.release(row.entity, row.source_id)
                self.stats.reconciled_missing += 1
            log.info(
                "in_flight_reconciled", entity=row.entity, record=row.source_id, found=bool(found)
            )

    async def load_issue_tree(self, key: str) -> None:
        if not await self._apply("issue", key):
            self._fail_children(key, f"issue {key} was not loaded")
            return
        await self._refresh_if_changed(key)
        rows = {e: [] for e in CHILD_ORDER}  # type: dict[str, list[str]]
        for row in self.ledger.iter_rows(parent=key):
            if row.entity in rows:  # done ones too: a done comment may still owe its attachments
                rows[row.entity].append(row.source_id)
        for source_id in self._in_time_order("comment", key, rows["comment"]):
            loaded = await self._apply("comment", source_id)
            for attachment_id in self._attachments_of(source_id):
                if loaded:
                    await self._apply("comment_attachment", attachment_id)
                else:
                    self._fail_pending(
                        "comment_attachment", attachment_id, f"comment {source_id} was not loaded"
                    )
        for entity in CHILD_ORDER[1:]:
            for source_id in self._in_time_order(entity, key, rows[entity]):
                await self._apply(entity, source_id)

    async def _refresh_if_changed(self, key: str) -> None:
        """Bring a loaded issue that changed at the source up to date with an ordinary edit.

        Imports keep the source's times, so a comment added at the source after the issue was
        loaded lies outside the target issue's window; the edit moves that window to now.
        """
        row, record = self.ledger.get("issue", key), self.store.get_record("issue", key)
        if row is None or record is None or row.payload_hash == record.content_hash:
            return
        try:
            await self.client.update_issue(
                self._target_key(key), self.transform.issue_update_body(record.raw)
            )
        except (RecordError, TransformError) as exc:
            log.warning("issue_refresh_failed", issue=key, error=str(exc))
            return
        self.ledger.refreshed("issue", key, record.content_hash)
        self.stats.refreshed += 1
        log.info("issue_refreshed", issue=key)

    async def load_link(self, source_id: str) -> None:
        """Links go last and only between issues that are in the target."""
        if reason := self._missing_link_end(source_id):
            self._fail_pending("link", source_id, reason)
            return
        await self._apply("link", source_id)

    def _missing_link_end(self, source_id: str) -> str | None:
        record = self._record("link", source_id)
        for key in (record.parent, record.raw["object"]["key"]):
            row = self.ledger.get("issue", key)
            if row is not None and row.status != "done":
                return f"issue {key} was not loaded, so the link cannot be made"
        return None

    def _in_time_order(self, entity: str, key: str, source_ids: list[str]) -> list[str]:
        """Creation order, read with one query for the issue rather than one per record."""
        times = {
            record.source_id: str(
                record.raw.get("createdAt") or record.raw.get("start") or ""
            )
            for record in self.store.iter_records(entity, parent=key)
        }
        return sorted(source_ids, key=lambda source_id: (times.get(source_id, ""), source_id))

    def _attachments_of(self, comment_id: str) -> list[str]:
        return self._by_comment.get(comment_id, [])

    def _fail_children(self, key: str, reason: str) -> None:
        for row in list(self.ledger.iter_rows(parent=key)):
            if row.entity not in ("issue", "link"):
                self._fail_pending(row.entity, row.source_id, reason)

    def _fail_pending(self, entity: str, source_id: str, reason: str) -> None:
        row = self.ledger.get(entity, source_id)
        if row is not None and row.status in ("pending", "in_flight"):
            self.ledger.fail(entity, source_id, reason)
            self.stats.failed += 1

    async def _apply(self, entity: str, source_id: str) -> bool:
        """Load one record exactly once; True when it is in the target."""
        row = self.ledger.get(entity, source_id)
        if row is None or row.status == "failed":
            return False
        if row.status == "done":
            return True
        for _ in range(MAX_AMBIGUOUS):
            self.ledger.begin(entity, source_id)
            try:
                target_id = await self._send_for(entity, source_id)
            except (AmbiguousWriteError, ConflictError) as exc:
                self.stats.ambiguous += isinstance(exc, AmbiguousWriteError)
                found = await self._probe_for(entity, source_id)
                log.warning(
                    "write_uncertain",
                    entity=entity,
                    record=source_id,
                    error=str(exc),
                    found=bool(found),
                )
                if found:
                    return self._done(entity, source_id, found)
                if isinstance(exc, ConflictError):
                    return self._fail(entity, source_id, exc)
                self.ledger.release(entity, source_id)
                continue
            except NotFoundError as exc:
                if entity == "link":
                    return self._fail(
                        entity, source_id, LinkEndMissing(self._record(entity, source_id))
                    )
                return self._fail(entity, source_id, exc)
            except (RecordError, TransformError) as exc:
                return self._fail(entity, source_id, exc)
            return self._done(entity, source_id, target_id)
        return self._fail(
            entity,
            source_id,
            RuntimeError("the write's outcome stayed uncertain; the target does not show it"),
        )

    def _done(self, entity: str, source_id: str, target_id: str) -> bool:
        self.ledger.done(entity, source_id, target_id)
        self.stats.done += 1
        self.progress.advance(self._task)
        return True

    def _fail(self, entity: str, source_id: str, exc: BaseException) -> bool:
        self.ledger.fail(entity, source_id, f"{type(exc).__name__}: {exc}")
        self.stats.failed += 1
        log.warning("record_failed", entity=entity, record=source_id, error=str(exc))
        return False

    # --- what each entity sends, and how the target is asked whether it has it -------------

    def _record(self, entity: str, source_id: str) -> dict[str, Any]:
        staged_entity = "attachment" if entity == "comment_attachment" else entity
        record = self.store.get_record(staged_entity, source_id)
        if record is None:
            raise TransformError(f"{entity} {source_id} is no longer staged")
        return record

    def _target_key(self, source_id: str) -> str:
        return self.transform.queues.key(source_id.split("/", 1)[0])

    async def _send_for(self, entity: str, source_id: str) -> str:
        record = self._record(entity, source_id)
        raw, key = record.raw, self._target_key(source_id)
        client, t = self.client, self.transform
        if entity == "issue":
            return str((await client.import_issue(t.issue_body(raw)))["key"])
        if entity == "comment":
            return str((await client.import_comment(key, t.comment_body(raw)))["id"])
        if entity == "worklog":
            return str((await client.import_worklog(key, t.worklog_body(raw)))[0]["id"])
        if entity == "checklist":
            await client.add_checklist_items(key, [t.checklist_body(item) for item in raw["items"]])
            return f"{key}/checklist"
        if entity == "link":
            return str((await client.import_link(key, t.link_body(raw)))["id"])
        return await self._send_attachment(entity, record, key)

    async def _send_attachment(self, entity: str, record: dict[str, Any], key: str) -> str:
        raw = record.raw
        if not record.blob or not self.store.blobs.exists(record.blob):
            raise TransformError(f"attachment {record['source_id']} has no staged bytes")
        options = {
            "filename": raw["name"],
            "created_at": raw["createdAt"],
            "created_by": self.transform.users.login(raw.get("createdBy")),
            "source": self.store.blobs.path(record.blob),
        }
        if entity == "attachment":
            return str((await self.client.import_attachment(key, **options))["id"])
        comment_target = self.ledger.target_id("comment", self._owners[record.source_id])
        if comment_target is None:
            raise TransformError(f"comment of attachment {record['source_id']} is not loaded")
        reply = await self.client.import_comment_attachment(key, comment_target, **options)
        return str(reply["id"])

    async def _probe_for(self, entity: str, source_id: str) -> str | None:
        record = self._record(entity, source_id)
        raw, key, parent, t = (
            record.raw,
            self._target_key(source_id),
            record.parent,
            self.transform,
        )
        if entity == "issue":
            return await self.probe.issue(key)
        if entity == "comment":
            return await self.probe.comment(parent, key, t.comment_body(raw))
        if entity == "worklog":
            return await self.probe.worklog(parent, key, t.worklog_body(raw))
        if entity == "checklist":
            return await self.probe.checklist(
                key, [t.checklist_body(item) for item in raw["items"]]
            )
        if entity == "link":
            return await self.probe.link(parent, key, raw, t.queues.key(raw["object"]["key"]))
        return await self.probe.attachment(parent, key, raw["name"], raw.get("size") or 0)
