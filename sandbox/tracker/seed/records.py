"""Lazily generated sub-records of one generated issue, from that issue's own RNG.

Everything here depends only on ``(seed, issue header)``, never on the order in which issues
are first read, so two sandboxes with the same seed serve the same records.  Every time lies in
the issue's window ``[createdAt, updatedAt]``; the changelog walks the workflow to the issue's
current status, resolution and priority.
"""

from __future__ import annotations

import hashlib
import itertools
import random

from haul.sandbox.tracker.blobs import GeneratedBlob
from haul.sandbox.tracker.model import (
    Attachment,
    ChangelogEntry,
    ChecklistItem,
    Comment,
    FieldChange,
    Issue,
    IssueRecords,
    Org,
    Worklog,
)
from haul.sandbox.tracker.seed import histories, text
from haul.sandbox.tracker.seed.references import refer_in_comments

# ids of an issue's generated records lie in [(seq + 1) * SLOT, (seq + 2) * SLOT)
SLOT = 64
_KB = 1024
_FILES = (
    ("screenshot-{n}.png", "image/png"),
    ("report-{n}.pdf", "application/pdf"),
    ("отчёт-{n}.pdf", "application/pdf"),
    ("日志-{n}.txt", "text/plain"),
    ("notes-{n}.md", "text/markdown"),
    ("data {n}.csv", "text/csv"),
    ("logs-{n}.zip", "application/zip"),
)


def issue_rng(seed: int, key: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def hex_id(rng: random.Random, prefix: int | None = None) -> str:
    """A 24-hex id; with ``prefix`` its first 12 digits sort in creation order."""
    tail = f"{rng.getrandbits(96):024x}"
    return tail if prefix is None else f"{prefix:012x}{tail[12:]}"


def generate_records(org: Org, issue: Issue) -> IssueRecords:
    """The comments, worklogs, changelog, attachments and checklist of a generated issue."""
    rng = issue_rng(org.seed, issue.key)
    people = sorted(org.users)
    base = (issue.seq + 1) * SLOT
    comments = _comments(issue, people, base, rng)
    attachments = _attachments(org, issue, comments, people, base, rng)
    refer_in_comments(org, issue, comments, attachments)
    return IssueRecords(
        comments=comments,
        worklogs=_worklogs(issue, people, base, rng),
        changelog=_changelog(org, issue, people, base, rng),
        attachments=attachments,
        checklist=_checklist(issue, people, rng),
    )


def _times(rng: random.Random, count: int, lo: int, hi: int) -> list[int]:
    return sorted(rng.randrange(lo, hi + 1) for _ in range(count))


def _comments(issue: Issue, people: list[int], base: int, rng: random.Random) -> list[Comment]:
    if not issue.comment_count or issue.last_comment_at is None:
        return []
    times = _times(rng, issue.comment_count - 1, issue.created_at, issue.last_comment_at)
    times.append(issue.last_comment_at)
    mentions = [f"{issue.queue}-{rng.randrange(1, issue.number + 1)}" for _ in range(3)]
    comments = []
    for n, created in enumerate(times):
        author = rng.choice(people)
        edited = rng.random() < 0.1 and created < issue.last_comment_at
        updated = rng.randrange(created, issue.last_comment_at + 1) if edited else created
        comment_id = base + n
        comments.append(
            Comment(
                id=comment_id,
                long_id=hashlib.sha256(f"comment:{issue.id}:{comment_id}".encode()).hexdigest()[
                    :24
                ],
                text=text.comment(rng, mentions),
                created_by=author,
                created_at=created,
                updated_by=author,
                updated_at=updated,
                version=2 if edited else 1,
            )
        )
    return comments


def _attachments(
    org: Org,
    issue: Issue,
    comments: list[Comment],
    people: list[int],
    base: int,
    rng: random.Random,
) -> list[Attachment]:
    """Issue files (0-4, one of several MB on a few chosen issues) and files on some comments."""
    owners: list[tuple[int, int, Comment | None]] = []  # (time, author, comment)
    count = rng.choices((0, 1, 2, 3, 4), weights=(50, 25, 15, 6, 4))[0]
    big = issue.key in org.big_attachment_keys
    for created in _times(rng, max(count, 1 if big else 0), issue.created_at, issue.updated_at):
        owners.append((created, rng.choice(people), None))
    for said in comments:
        if rng.random() < 0.1 and len(owners) < 12:
            owners += [(said.created_at, said.created_by, said)] * rng.randrange(1, 3)
    owners.sort(key=lambda owner: owner[0])
    attachments = []
    for n, (created, author, comment) in enumerate(owners):
        template, mimetype = rng.choice(_FILES)
        size = rng.randrange(1 * _KB, 24 * _KB)
        if big and comment is None:
            big, size, template, mimetype = (
                False,
                rng.randrange(2_000 * _KB, 6_000 * _KB),
                *_FILES[6],
            )
        attachment_id = str(base + n)
        token = f"{org.seed}:{issue.key}:{attachment_id}"
        attachments.append(
            Attachment(
                id=attachment_id,
                name=template.format(n=n + 1),
                mimetype=mimetype,
                blob=GeneratedBlob(token, size, mimetype),
                created_by=author,
                created_at=created,
                comment_id=comment.id if comment else None,
            )
        )
        if comment is not None:
            comment.attachment_ids.append(attachment_id)
    return attachments


def _worklogs(issue: Issue, people: list[int], base: int, rng: random.Random) -> list[Worklog]:
    records = []
    count = rng.choices(range(6), weights=(40, 20, 15, 10, 10, 5))[0]
    for n, start in enumerate(_times(rng, count, issue.created_at, issue.updated_at)):
        author = rng.choice(people)
        created = rng.randrange(start, issue.updated_at + 1)
        records.append(
            Worklog(
                id=base + n,
                start=start,
                duration_ms=rng.randrange(1, 64) * 15 * 60_000,
                comment=text.paragraph(rng) if rng.random() < 0.5 else None,
                created_by=author,
                created_at=created,
                updated_by=author,
                updated_at=created,
            )
        )
    return records


def _changelog(
    org: Org, issue: Issue, people: list[int], base: int, rng: random.Random
) -> list[ChangelogEntry]:
    """IssueCreated (by the issue's creator), then the workflow to the current status, plus a
    few priority edits; an edge case's workflow (see `histories`) in some issues."""
    drafts = [_created(issue), *histories.timed(issue, histories.usual_steps(issue, rng), rng)]
    chain = [*rng.sample([p.key for p in org.priorities.entries], rng.randrange(0, 3))]
    chain.append(issue.priority)
    edits = _times(rng, len(chain) - 1, issue.created_at, issue.updated_at)
    for when, (before, after) in zip(edits, itertools.pairwise(chain), strict=True):
        if before != after:
            drafts.append(
                (when, "IssueUpdated", [FieldChange("priority", "priorities", before, after)])
            )
    drafts.sort(key=lambda draft: draft[0])
    entries = []
    for n, (when, kind, changes) in enumerate(drafts):
        entry_id = hex_id(rng, base + n)
        author = rng.choice(people)  # drawn for every entry, as always
        if kind == "IssueCreated":  # the entry that made the issue is its creator's
            author = issue.created_by
        entries.append(ChangelogEntry(entry_id, kind, author, when, changes))
    if (case := histories.edge_case(issue)) is not None:
        return _edge_changelog(org, issue, case, drafts, people, base)
    return entries


def _created(issue: Issue) -> histories.Draft:
    return (issue.created_at, "IssueCreated", [FieldChange("status", "statuses", None, "open")])


def _edge_changelog(
    org: Org,
    issue: Issue,
    case: str,
    drafts: list[histories.Draft],
    people: list[int],
    base: int,
) -> list[ChangelogEntry]:
    """The changelog with the edge case's workflow in place of the usual one, drawn from an
    RNG of its own (the issue's RNG has drawn what it always draws)."""
    rng = histories.edge_rng(org.seed, issue.key)
    kept = [draft for draft in drafts if draft[1] == "IssueUpdated"]
    edged = sorted([*kept, *histories.edge_workflow(org, issue, case, rng)], key=lambda d: d[0])
    when, kind, changes = _created(issue)
    entries = [ChangelogEntry(hex_id(rng, base), kind, issue.created_by, when, changes)]
    for n, (when, kind, changes) in enumerate(edged, 1):
        author = rng.choice(people)
        entries.append(ChangelogEntry(hex_id(rng, base + n), kind, author, when, changes))
    return entries


def _checklist(issue: Issue, people: list[int], rng: random.Random) -> list[ChecklistItem]:
    count = rng.choices(range(7), weights=(60, 10, 10, 8, 6, 3, 3))[0]
    return [
        ChecklistItem(
            id=hex_id(rng),
            text=text.checklist_item(rng),
            checked=rng.random() < 0.5,
            assignee=rng.choice(people) if rng.random() < 0.3 else None,
            deadline=rng.randrange(issue.created_at, issue.updated_at + 30 * 86_400_000)
            if rng.random() < 0.2
            else None,
        )
        for _ in range(count)
    ]
