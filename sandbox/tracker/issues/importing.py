"""The admin ``_import`` family: back-dated records with the tracker's validation rules.

Rules (a broken rule is a 422 naming the field unless stated):
- issue: queue, summary (<= 255), createdAt (<= now) and createdBy (a user of this org) are
  required; ``updatedAt``+``updatedBy`` and ``resolvedAt``+``resolvedBy``+``resolution`` come as
  sets; updatedAt in [createdAt, now]; resolvedAt in [createdAt, updatedAt]; status, type,
  priority and resolution are keys or numeric ids of THIS org (the vendor's importer sends
  keys, haul ids); a key must belong to the queue.  An
  existing key or ``unique`` is a 409.  Components, versions, sprints, user lists and custom
  fields are checked by :mod:`sandbox.tracker.issues.import_fields`; a key that names no field is a
  422, a system field it does not take (``aliases``) is ignored.  The issue keeps the given
  times; the queue's counter moves past an imported number.
- comment, worklog, attachment: their createdAt lies in the issue's [createdAt, updatedAt].
- link: its createdAt lies in both issues' windows; the other issue missing is a 404; the same
  type between the same pair again is a 422.
Imports never change the issue's updatedAt.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import secrets
from dataclasses import replace

from haul.sandbox.people import User
from haul.sandbox.timefmt import format_duration, parse_duration_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.errors import ApiError, invalid, issue_not_found
from haul.sandbox.tracker.blobs import StoredBlob
from haul.sandbox.tracker.catalog import RELATIONSHIPS
from haul.sandbox.tracker.issues.import_fields import issue_refs
from haul.sandbox.tracker.model import (
    Attachment,
    ChangelogEntry,
    Comment,
    Dictionary,
    FieldChange,
    Issue,
    Link,
    Org,
    Queue,
    Worklog,
)
from haul.sandbox.tracker.workflows.queue_rules import rules_of


def runtime_hex_id(org: Org, counter: str) -> str:
    """A 24-hex id whose first half orders it after every earlier id of its kind."""
    return f"{org.counters.take(counter):012x}{secrets.token_hex(6)}"


def import_issue(org: Org, body: dict, now: int) -> Issue:
    checks = Checks(org, body)
    queue_key = checks.text("queue", required=True, limit=100)
    queue = org.queues.get(queue_key or "")
    if queue_key and queue is None:
        checks.fail("queue", f"Queue {queue_key!r} does not exist")
    summary = checks.text("summary", required=True, limit=255)
    created = checks.instant("createdAt", required=True)
    creator = checks.user("createdBy", required=True)
    if created is not None and created > now:
        checks.fail("createdAt", "Must not lie in the future")
    updated, updater = _updated_pair(checks, created, now)
    resolved = _resolution(checks, created, updated if updated is not None else created)
    number = _number(checks, queue, body.get("key"))
    fields = {
        name: _entry_key(checks, name, dictionary)
        for name, dictionary in (
            ("status", org.statuses),
            ("type", org.issue_types),
            ("priority", org.priorities),
        )
    }
    assignee = checks.user("assignee")
    description = checks.text("description")
    followers, tags = checks.users("followers"), checks.strings("tags")
    unique, extra = checks.text("unique", limit=1000), echoed(checks)
    refs = issue_refs(checks, queue)
    checks.done()
    assert queue is not None and created is not None and creator is not None
    resolved_at, resolver, resolution = resolved or (None, None, None)
    draft = Issue(
        seq=-1,  # seq, id, key and a missing number are assigned when stored
        id="",
        key="",
        queue=queue.key,
        number=number or 0,
        summary=summary or "",
        description=description,
        type=fields["type"] or queue.default_type,
        priority=fields["priority"] or queue.default_priority,
        status=fields["status"] or "open",
        previous_status=None,
        resolution=resolution,
        created_at=created,
        updated_at=updated if updated is not None else created,
        status_start=resolved_at if resolved_at is not None else created,
        resolved_at=resolved_at,
        created_by=creator.uid,
        updated_by=(updater or creator).uid,
        resolved_by=resolver.uid if resolver else None,
        assignee=assignee.uid if assignee else None,
        followers=followers,
        tags=tags,
        unique=unique,
        extra=extra,
        refs=refs,
    )
    return _store_issue(org, draft)


def _updated_pair(checks: Checks, created: int | None, now: int) -> tuple[int | None, User | None]:
    if not checks.together("updatedAt", "updatedBy"):
        return None, None
    updated = checks.instant("updatedAt")
    updater = checks.user("updatedBy")
    if created is not None:
        checks.within("updatedAt", updated, created, now, "[createdAt, now]")
    return updated, updater


def _resolution(checks: Checks, created: int | None, updated: int | None) -> tuple | None:
    if not checks.together("resolvedAt", "resolvedBy", "resolution"):
        return None
    resolved_at = checks.instant("resolvedAt")
    resolver = checks.user("resolvedBy")
    resolution = _entry_key(checks, "resolution", checks.org.resolutions)
    if created is not None and updated is not None:
        checks.within("resolvedAt", resolved_at, created, updated, "[createdAt, updatedAt]")
    return resolved_at, resolver, resolution


_ESTIMATES = ("originalEstimation", "estimation", "spent")
_DATES = ("deadline", "start", "end")


def echoed(checks: Checks) -> tuple[tuple[str, object], ...]:
    """Estimates (milliseconds, echoed as ISO-8601 durations), dates, mail lists and story
    points."""
    found: list[tuple[str, object]] = []
    for name in _ESTIMATES:
        value = checks.body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            checks.fail(name, "Must be a non-negative number of milliseconds")
        else:
            found.append((name, format_duration(value)))
    for name in _DATES:
        value = checks.body.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            checks.fail(name, "Must be a date like 2024-01-31")
        else:
            found.append((name, value))
    lists = checks.body.get("followingMaillists")
    if lists is not None:
        if not isinstance(lists, list) or not all(isinstance(e, str) and "@" in e for e in lists):
            checks.fail("followingMaillists", "Must be a list of mail addresses")
        elif lists:
            found.append(("followingMaillists", tuple(lists)))
    points = checks.body.get("storyPoints")
    if points is not None:
        if isinstance(points, bool) or not isinstance(points, int | float):
            checks.fail("storyPoints", "Must be a number")
        else:
            found.append(("storyPoints", float(points)))
    return tuple(found)


def _entry_key(checks: Checks, name: str, dictionary: Dictionary) -> str | None:
    """A dictionary value by its key (``"open"``) or its numeric id of this org, as the
    vendor's own importer sends keys; anything else (a key the org lacks, another org's id, an
    object) is a 422 naming the field."""
    if not checks.present(name):
        return None
    value = checks.body[name]
    entry = dictionary.by_key.get(value) if isinstance(value, str) else None
    entry = entry or dictionary.lookup_id(value)
    if entry is None:
        checks.fail(
            name,
            f"Unknown {name} {value!r}: a key or a numeric id of this organization's"
            f" {dictionary.path}",
        )
        return None
    return entry.key


def _number(checks: Checks, queue: Queue | None, key: object) -> int | None:
    if key is None or queue is None:
        return None
    match = (
        re.fullmatch(rf"{re.escape(queue.key)}-([1-9]\d{{0,8}})", key)
        if isinstance(key, str)
        else None
    )
    if match is None:
        checks.fail("key", f"Key {key!r} does not belong to queue {queue.key}")
        return None
    return int(match.group(1))


def _store_issue(org: Org, draft: Issue) -> Issue:
    """Give the draft its key (409 if taken, or if its unique is), store it, log its creation."""
    queue = org.queues[draft.queue]
    number = draft.number or queue.next_number
    key = f"{queue.key}-{number}"
    if key in org.issues:
        raise ApiError(409, f"Issue {key} already exists", errors={"key": key})
    if draft.unique is not None and org.find_unique(draft.unique) is not None:
        message = "An issue with this unique value already exists"
        raise ApiError(409, message, errors={"unique": draft.unique})
    queue.next_number = max(queue.next_number, number + 1)
    issue_id = hashlib.sha256(f"{org.id}:{key}:{secrets.token_hex(4)}".encode()).hexdigest()
    issue = replace(draft, seq=org.counters.take("issue"), id=issue_id[:24], key=key, number=number)
    org.put_issue(issue)
    rules_of(org).fire_on_create(issue.queue)
    entry = ChangelogEntry(
        runtime_hex_id(org, "changelog"), "IssueCreated", issue.created_by, issue.created_at
    )
    entry.fields.append(FieldChange("status", "statuses", None, issue.status))
    org.records(issue).changelog.append(entry)
    return issue


def import_comment(org: Org, issue: Issue, body: dict) -> Comment:
    checks = Checks(org, body)
    text = checks.text("text", required=True, limit=org.limits.comment_chars)
    if len(org.records(issue).comments) >= org.limits.comments_per_issue:
        checks.fail("text", f"An issue holds at most {org.limits.comments_per_issue} comments")
    created = checks.instant("createdAt", required=True)
    author = checks.user("createdBy", required=True)
    checks.within("createdAt", created, issue.created_at, issue.updated_at, "the issue's window")
    updated, updater = None, None
    if checks.together("updatedAt", "updatedBy"):
        updated, updater = checks.instant("updatedAt"), checks.user("updatedBy")
        lo = created if created is not None else issue.created_at
        checks.within("updatedAt", updated, lo, issue.updated_at, "[createdAt, issue updatedAt]")
    checks.done()
    assert text is not None and created is not None and author is not None
    comment_id = org.counters.take("comment")
    comment = Comment(
        id=comment_id,
        long_id=hashlib.sha256(f"comment:{issue.id}:{comment_id}".encode()).hexdigest()[:24],
        text=text,
        created_by=author.uid,
        created_at=created,
        updated_by=(updater or author).uid,
        updated_at=updated if updated is not None else created,
    )
    org.records(issue).comments.append(comment)
    last = max(issue.last_comment_at or 0, comment.updated_at)
    org.put_issue(replace(issue, comment_count=issue.comment_count + 1, last_comment_at=last))
    return comment


def import_worklog(org: Org, issue: Issue, body: dict) -> Worklog:
    checks = Checks(org, body)
    duration = parse_duration_ms(body.get("duration"))
    if duration is None:
        checks.fail("duration", "Required: an ISO-8601 duration such as PT1H30M")
    created = checks.instant("createdAt", required=True)
    author = checks.user("createdBy", required=True)
    start = checks.instant("start", required=True)
    comment = checks.text("comment")
    checks.within("createdAt", created, issue.created_at, issue.updated_at, "the issue's window")
    checks.done()
    assert duration is not None and created is not None and author is not None
    assert start is not None
    record = Worklog(
        id=org.counters.take("worklog"),
        start=start,
        duration_ms=duration,
        comment=comment,
        created_by=author.uid,
        created_at=created,
        updated_by=author.uid,
        updated_at=created,
    )
    org.records(issue).worklogs.append(record)
    return record


def import_link(org: Org, issue: Issue, body: dict) -> Link:
    checks = Checks(org, body)
    relationship = body.get("relationship")
    if relationship not in RELATIONSHIPS:
        checks.fail("relationship", f"Must be one of: {', '.join(RELATIONSHIPS)}")
    other_ref = checks.text("issue", required=True, limit=100)
    created = checks.instant("createdAt", required=True)
    author = checks.user("createdBy", required=True)
    checks.done()
    assert other_ref is not None and created is not None and author is not None
    other = org.find_issue(other_ref)
    if other is None:
        raise issue_not_found(other_ref)
    if other.key == issue.key:
        raise invalid({"issue": "An issue cannot be linked to itself"})
    lo = max(issue.created_at, other.created_at)
    hi = min(issue.updated_at, other.updated_at)
    checks.within("createdAt", created, lo, hi, "both issues' windows")
    checks.done()
    link_type, direction = RELATIONSHIPS[str(relationship)]
    pair = {issue.key, other.key}
    if any(
        lk.type == link_type and {lk.source, lk.target} == pair for lk in org.links_of(issue.key)
    ):
        raise invalid({"issue": f"Issues {issue.key} and {other.key} are already linked so"})
    link = Link(
        org.counters.take("link"), link_type, issue.key, other.key, direction, author.uid, created
    )
    org.add_link(link)
    return link


def import_attachment(
    org: Org, issue: Issue, params: dict, data: bytes | None, comment_ref: str | None = None
) -> Attachment:
    """``params`` are the query parameters filename, createdAt and createdBy."""
    checks = Checks(org, params)
    name = checks.text("filename", required=True, limit=255)
    created = checks.instant("createdAt", required=True)
    author = checks.user("createdBy", required=True)
    checks.within("createdAt", created, issue.created_at, issue.updated_at, "the issue's window")
    if data is None:
        checks.fail("file", "A multipart/form-data body with one file part is required")
    elif len(data) > org.limits.file_bytes:
        raise ApiError(413, f"File is too large: at most {org.limits.file_bytes} bytes")
    records = org.records(issue)
    comment = None
    if comment_ref is not None:
        comment = next((c for c in records.comments if comment_ref in (str(c.id), c.long_id)), None)
        if comment is None:
            raise ApiError(404, "Comment does not exist.", errors={"comment": comment_ref})
    checks.done()
    assert name is not None and created is not None and author is not None and data is not None
    attachment = Attachment(
        id=str(org.counters.take("attachment")),
        name=name,
        mimetype=_mimetype(name),
        blob=StoredBlob(data),
        created_by=author.uid,
        created_at=created,
        comment_id=comment.id if comment else None,
    )
    records.attachments.append(attachment)
    if comment is not None:
        comment.attachment_ids.append(attachment.id)
    return attachment


def _mimetype(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"
