"""Records deleted at the source: found, listed, and mirrored in the target when asked.

How each is found, without asking the source for anything it was not asked already:

- a comment, worklog, link, remote link or attachment: its issue changed, so the extract drained it again,
  and its listing no longer holds the record: the staged record is gone while its loaded
  ledger row stays (`find_deleted_children`, when the ledger is planned);
- an issue: the extract counts each queue's issues at the source anyway; only when a queue
  counts fewer than are staged does it list the queue's keys, and each staged key missing
  there is asked for once: gone (404), moved to a queue outside the scope, or no longer
  matching the scope's query (`find_vanished_issues`). A move inside the scope is not a
  deletion (`pipelines.tracker.issues.record.follow_moves`). An issue still at the source but out of the scope now
  (moved out, or no longer matching the query) is not a deletion either: it is staged
  `out_of_scope`, reported as such, and never deleted in the target (it is alive). An issue
  that listing gives without its key (a lagging search index) might be a staged one: no issue
  of the queue is judged gone on it, and it is named by its id as a problem of the extract
  (`haul failures`, exit 3), listed again by the next extract until it comes with its key.

Each becomes one staged `deleted` record (what it was, its target id, why). With `[sync]
deletions = "report"` they are listed by `haul status` and the run report; with "mirror"
each is also a `deletion` ledger row, loaded after everything else: one DELETE in the
target, found done when the target no longer holds it. The tracker's API deletes no issue:
a deleted issue fails its row with that reason until a person deletes it by hand. The base
decides: a comment or worklog a person edited in the target since haul wrote it is a conflict
(deleted at the source, changed in the target): kept, its row failed naming it, unless `[sync]
conflicts = "source-wins"`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.concurrency import gather_all
from haul.pipelines.specs import Fields, Planned, RecordFailure
from haul.pipelines.tracker.changes.undo import changed_in_target
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

DELETED = "deleted"  # the staged entity
# ledger entity -> its staged entity, and the path of its kind under an issue
CHILDREN = {
    "comment": ("comment", "comments"),
    "comment_attachment": ("attachment", "attachments"),
    "worklog": ("worklog", "worklog"),
    "attachment": ("attachment", "attachments"),
    "link": ("link", "links"),
    "remote_link": ("remote_link", "remotelinks"),
}
# a queue's own records (`pipelines.tracker.planning.queue_rules`): their `issue` is the queue
QUEUE_RULES = {"trigger": "triggers", "macro": "macros"}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def deleted_row(
    entity: str,
    source_id: str,
    issue: str,
    target_id: str | None,
    why: str,
    out_of_scope: bool = False,
) -> dict[str, Any]:
    """A staged `deleted` row: what was deleted (entity, source id, its parent issue or
    queue, its target id) and why."""
    raw_extra = {"out_of_scope": True} if out_of_scope else {}
    return {
        "source_id": f"{entity}:{source_id}",
        "parent": issue,
        "updated_at": None,
        "raw": {
            "entity": entity,
            "source_id": source_id,
            "issue": issue,
            "target_id": target_id,
            "reason": why,
            "detected_at": _now(),
            **raw_extra,
        },
    }


def find_deleted_children(store: StagingStore) -> int:
    """Stage a `deleted` record for each loaded sub-record whose issue is still staged but
    whose own record is not any more; return how many are new."""
    marks = ", ".join("?" * len(CHILDREN))
    staged_as = " ".join(f"WHEN '{name}' THEN '{kind}'" for name, (kind, _) in CHILDREN.items())
    rows = store.db.execute(
        "SELECT l.entity, l.source_id, l.target_id FROM ledger AS l"
        f" WHERE l.entity IN ({marks}) AND l.status = 'done'"
        f" AND NOT EXISTS (SELECT 1 FROM records AS r WHERE r.entity = CASE l.entity {staged_as}"
        " END AND r.source_id = l.source_id)"
        " AND NOT EXISTS (SELECT 1 FROM records AS d WHERE d.entity = 'deleted'"
        " AND d.source_id = l.entity || ':' || l.source_id)",
        list(CHILDREN),
    ).fetchall()
    staged = store.source_ids("issue")
    found = [
        deleted_row(entity, source_id, issue, target_id, "no longer listed on its issue")
        for entity, source_id, target_id in rows
        if (issue := source_id.split("/", 1)[0]) in staged
    ]
    if found:
        store.upsert_records(DELETED, found)
        log.info("deleted_at_source", records=len(found))
    return len(found)


def deletion_plan(mirror: bool) -> Callable[[StagingStore], Iterator[Planned]]:
    """The plan that finds deleted sub-records, and, mirroring, plans one row for each."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        find_deleted_children(store)
        if mirror:
            for record in store.iter_records(DELETED):
                if not record.raw.get("out_of_scope"):  # alive at the source: not deleted
                    yield Planned(record, sort_key=str(record.raw.get("detected_at") or ""))

    return plan


# how an issue listed without its key is named (the issues layer's scroll names them so)
KeylessName = Callable[[str, dict[str, Any]], str]


async def find_vanished_issues(
    client: TrackerClient,
    store: StagingStore,
    queues: Iterable[str],
    narrowing: str | None,
    keyless_name: KeylessName,
) -> int:
    """The source's issue count of the queues (the extract's figure); on the way, a staged
    issue the source no longer lists in its queue is staged as `deleted` (see the module
    docstring: a queue is listed only when it counts fewer issues than are staged, or when
    the last listing gave an issue without its key, named by `keyless_name`)."""
    staged = store.source_ids("issue")
    queries = {
        queue: f"Queue: {queue}" + (f" AND {narrowing}" if narrowing else "") for queue in queues
    }
    counts = await gather_all([client.count_issues(query=query) for query in queries.values()])
    for (queue, query), count in zip(queries.items(), counts, strict=True):
        mine = {key for key in staged if key.rsplit("-", 1)[0] == queue}
        unnamed = keyless_problems(store, queue)
        if count >= len(mine) and not unnamed:
            continue
        listed: set[str] = set()
        keyless: list[dict[str, Any]] = []
        async for page in client.scroll_issues(
            query=query, per_scroll=1000, scroll_type="unsorted"
        ):
            listed |= {str(issue["key"]) for issue in page if issue.get("key")}
            keyless += [issue for issue in page if not issue.get("key")]
        names = {keyless_name(queue, issue) for issue in keyless}
        name_keyless(store, queue, names, unnamed)
        if keyless:  # one of them may be a staged issue: none is judged gone on this listing
            log.warning("vanished_not_judged", queue=queue, listed_without_key=len(keyless))
            continue
        for key in sorted(mine - listed):
            await _vanished(client, store, key, staged | listed)
    return sum(counts)


KEYLESS_LISTED = (
    "the tracker listed an issue without a key, so no issue of its queue was judged deleted "
    "at the source; the next haul extract lists the queue again"
)


def keyless_problems(store: StagingStore, queue: str) -> set[str]:
    """The names of the queue's issues this listing gave without a key (the scroll's own, of
    issues it could not stage, are the scroll's to settle)."""
    return {
        problem.source_id
        for problem in store.problems
        if problem.entity == "issue" and problem.parent == queue and problem.error == KEYLESS_LISTED
    }


def name_keyless(store: StagingStore, queue: str, names: set[str], unnamed: set[str]) -> None:
    """Name each issue listed without its key (`names`) as a problem; forget those named
    before that came with their key this time (a whole listing of the queue: any other would
    be among `names`)."""
    with store.transaction():
        for name in sorted(names):
            if name in unnamed or store.problems.get("issue", name) is None:
                store.problems.record("issue", name, KEYLESS_LISTED, parent=queue)
        for name in sorted(unnamed - names):
            store.problems.clear("issue", name)


async def _vanished(client: TrackerClient, store: StagingStore, key: str, known: set[str]) -> None:
    found = await client.find_issue(key)
    now = str(found["key"]) if found else None
    if now is not None and now != key and now in known:
        return  # moved inside the scope: followed, not deleted
    if found is None:
        why = "deleted at the source"
    elif now != key:
        why = f"moved to {now}, outside the scope (still at the source)"
    else:
        why = "no longer matches the scope's query (still at the source)"
    ledger_row = store.ledger.get("issue", key)
    target_id = ledger_row.target_id if ledger_row else None
    row = deleted_row("issue", key, key, target_id, why, out_of_scope=found is not None)
    with store.transaction():
        store.upsert_records(DELETED, [row])
        store.delete_record("issue", key)
        store.delete_under(key, keep=[DELETED])
    log.info("issue_vanished", issue=key, reason=why)


@dataclass
class DeletionSync:
    """Sends and finds `deletion` rows in one target org."""

    client: TrackerClient
    target_key: Callable[[str], str]
    target_queue: Callable[[str], str] = str  # a queue's key in the target
    base: Callable[[str, str], Fields | None] = lambda entity, source_id: None  # as written
    source_wins: bool = False  # [sync] conflicts = "source-wins": a person's edit goes too

    async def send(self, record: Any, parent: str | None) -> str:
        """One DELETE; a record gone already is deleted all the same."""
        raw = record.raw
        if raw["entity"] in QUEUE_RULES:
            return await self._send_rule(raw)
        key = self.target_key(raw["issue"])
        if raw["entity"] == "issue":
            raise RecordFailure(
                f"issue {raw['source_id']} was {raw['reason']}; the tracker's API deletes no"
                f" issue: delete {key} in the target by hand, then run haul load --retry-failed"
            )
        if raw.get("target_id") is None:
            return "nothing to delete"
        if raw["entity"] in ("comment", "worklog") and not self.source_wins:
            await self._refuse_changed(raw, key)
        _, kind = CHILDREN[raw["entity"]]
        await self.client.delete_record(key, kind, raw["target_id"])
        return f"deleted {raw['target_id']}"

    async def _refuse_changed(self, raw: dict[str, Any], key: str) -> None:
        """A record a person edited since haul wrote it is kept: its row fails, named."""
        entity, target_id = str(raw["entity"]), str(raw["target_id"])
        base = self.base(entity, str(raw["source_id"]))
        why = await changed_in_target(self.client, key, entity, target_id, base)
        if why is not None:
            raise RecordFailure(
                f"{entity} {raw['source_id']} is gone at the source ({raw['reason']}), but {why}:"
                f" kept in the target ({key}); delete it there by hand if it must go, or set"
                ' [sync] conflicts = "source-wins" and run haul load --retry-failed'
            )

    async def _send_rule(self, raw: dict[str, Any]) -> str:
        if raw.get("target_id") is None:
            return "nothing to delete"
        queue, kind = self.target_queue(raw["issue"]), QUEUE_RULES[raw["entity"]]
        with suppress(NotFoundError):  # deleted in the target already: what the mirror wants
            await self.client.delete_rule(queue, kind, raw["target_id"])
        return f"deleted {raw['target_id']}"

    async def find(self, record: Any, parent: str | None, unclaimed: Any) -> str | None:
        """Done when the target no longer holds the record (or its issue)."""
        raw = record.raw
        if raw["entity"] in QUEUE_RULES:
            queue, kind = self.target_queue(raw["issue"]), QUEUE_RULES[raw["entity"]]
            try:
                held = {str(item.get("id")) for item in await self.client.list_rules(queue, kind)}
            except NotFoundError:
                held = set()
            return None if str(raw.get("target_id")) in held else f"deleted {raw.get('target_id')}"
        key = self.target_key(raw["issue"])
        try:
            if raw["entity"] == "issue":
                await self.client.get_issue(key)
                return None
            held = {str(item.get("id")) for item in await self._listing(key, raw["entity"])}
        except NotFoundError:
            return f"deleted {raw.get('target_id')}"
        return None if str(raw.get("target_id")) in held else f"deleted {raw.get('target_id')}"

    async def _listing(self, key: str, entity: str) -> list[dict[str, Any]]:
        if entity == "comment":
            return [c async for c in self.client.iter_comments(key, expand="")]
        if entity == "worklog":
            return [w async for w in self.client.iter_worklogs(key)]
        if entity == "link":
            return await self.client.list_links(key)
        if entity == "remote_link":
            return await self.client.list_remote_links(key)
        return await self.client.list_attachments(key)


def vanished_issues(store: StagingStore) -> set[str]:
    """The keys of the issues found gone from the source (or from the scope)."""
    return {
        str(record.raw["source_id"])
        for record in store.iter_records(DELETED)
        if record.raw.get("entity") == "issue"
    }


def deleted_counts(
    store: StagingStore, since: str | None = None, *, out_of_scope: bool = False
) -> dict[str, int]:
    """Entity -> how many of its records were found deleted at the source (`since`: staged
    at or after that instant of the store's clock, e.g. this run's start); `out_of_scope`:
    how many were found alive but out of the scope instead."""
    counts: dict[str, int] = {}
    for record in store.iter_records(DELETED, staged_from=since):
        if bool(record.raw.get("out_of_scope")) == out_of_scope:
            counts[record.raw["entity"]] = counts.get(record.raw["entity"], 0) + 1
    return counts


def deleted_in_target(store: StagingStore) -> dict[str, int]:
    """Entity -> how many of its records a mirrored deletion removed from the target."""
    counts: dict[str, int] = {}
    for row in store.ledger.iter_rows(status="done", entity="deletion"):
        entity = row.source_id.split(":", 1)[0]
        counts[entity] = counts.get(entity, 0) + 1
    return counts
