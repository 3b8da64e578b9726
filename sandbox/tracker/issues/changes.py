"""What a person changes on an issue through the ordinary API, with the traces the service
leaves: every change moves the issue's ``updatedAt`` to now and adds one changelog entry of
its type (IssueWorkflow, IssueCommentUpdated, IssueWorklogRemoved, IssueLinked, IssueMoved...).

Issue edits, new comments and checklist items are in :mod:`editing`; this module holds the
rest: transitions, comment edits and removals, worklogs, links, attachments, a plain issue
create and a move to another queue.
"""

from __future__ import annotations

import hashlib
import mimetypes
import secrets
from dataclasses import replace

from haul.sandbox.timefmt import parse_duration_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.errors import ApiError, invalid, issue_not_found
from haul.sandbox.tracker.blobs import StoredBlob
from haul.sandbox.tracker.catalog import RELATIONSHIPS
from haul.sandbox.tracker.issues.importing import runtime_hex_id
from haul.sandbox.tracker.model import (
    Attachment,
    ChangelogEntry,
    Comment,
    Dictionary,
    FieldChange,
    Issue,
    Link,
    Org,
    Worklog,
)
from haul.sandbox.tracker.workflows.queue_rules import rules_of
from haul.sandbox.tracker.workflows.workflows import Transition, workflow_of


def touch(
    org: Org,
    issue: Issue,
    editor: int,
    now: int,
    kind: str,
    *changes: FieldChange,
    **fields: object,
) -> Issue:
    """The issue as changed by `editor` at `now` (its header fields `fields` replaced), with a
    changelog entry of type `kind` naming `changes`."""
    org.records(issue)  # a generated issue's records come from its header before it changes
    when = max(now, issue.updated_at)
    updated = replace(issue, updated_at=when, updated_by=editor, version=issue.version + 1)
    updated = replace(updated, **fields) if fields else updated  # type: ignore[arg-type]
    org.put_issue(updated)
    entry = ChangelogEntry(runtime_hex_id(org, "changelog"), kind, editor, when)
    entry.fields.extend(changes)
    org.records(updated).changelog.append(entry)
    return updated


# -- transitions ------------------------------------------------------------------------------


def transitions_of(org: Org, issue: Issue) -> list[Transition]:
    """What the issue may execute from its status in its queue's workflow for its type."""
    return workflow_of(org, issue.queue, issue.type).available(issue.status)


def execute_transition(
    org: Org, issue: Issue, transition_id: str, body: dict, editor: int, now: int
) -> Issue:
    """Move the issue along one transition of its workflow; a `done` status without a
    resolution asks for one (``resolution`` in the body), leaving `done` clears it."""
    transition = next((t for t in transitions_of(org, issue) if t.id == transition_id), None)
    if transition is None:
        raise ApiError(
            404,
            f"Transition {transition_id!r} is not available from status {issue.status!r}",
            errors={"transition": transition_id},
        )
    done = org.statuses.by_key[transition.id].status_type in ("done", "cancelled")
    resolution = _resolution(org, issue, body, done)
    when = max(now, issue.updated_at)
    changes = [
        FieldChange("status", "statuses", issue.status, transition.id),
        FieldChange("statusStartTime", "time", issue.status_start, when),
    ]
    if resolution != issue.resolution:
        changes.append(FieldChange("resolution", "resolutions", issue.resolution, resolution))
    resolved: dict[str, int | None] = {}
    if done and not issue.resolution:
        resolved = {"resolved_at": when, "resolved_by": editor}
    if not done:
        resolved = {"resolved_at": None, "resolved_by": None}
    return touch(
        org, issue, editor, now, "IssueWorkflow", *changes,
        status=transition.id, previous_status=issue.status, status_start=when,
        resolution=resolution, **resolved,
    )  # fmt: skip


def _resolution(org: Org, issue: Issue, body: dict, done: bool) -> str | None:
    value = body.get("resolution")
    key = value.get("key") if isinstance(value, dict) else value
    if not done:
        return None
    if key is None:
        if issue.resolution is None:
            raise invalid({"resolution": "Required by this transition's screen"})
        return issue.resolution
    entry = org.resolutions.lookup(key)
    if entry is None:
        raise invalid({"resolution": f"Unknown resolution {key!r}"})
    return entry.key


# -- comments -----------------------------------------------------------------------------------


def find_comment(org: Org, issue: Issue, wanted: str) -> Comment:
    found = next((c for c in org.records(issue).comments if wanted in (str(c.id), c.long_id)), None)
    if found is None:
        raise ApiError(404, f"Comment {wanted} not found", errors={"comment": wanted})
    return found


def edit_comment(
    org: Org, issue: Issue, comment: Comment, text: str, editor: int, now: int
) -> Issue:
    old = comment.text
    comment.text, comment.updated_at = text, max(now, comment.updated_at, issue.updated_at)
    comment.updated_by, comment.version = editor, comment.version + 1
    change = FieldChange("comment", "text", old, text)
    # `lastCommentUpdatedAt` is the newest comment's update (as seeded and imported): an
    # edit moves it, so a client may skip the comments of an issue where it did not move
    last = max(issue.last_comment_at or 0, comment.updated_at)
    return touch(org, issue, editor, now, "IssueCommentUpdated", change, last_comment_at=last)


def delete_comment(org: Org, issue: Issue, comment: Comment, editor: int, now: int) -> Issue:
    """The comment goes, with the files it carried."""
    records = org.records(issue)
    records.comments.remove(comment)
    records.attachments[:] = [a for a in records.attachments if a.comment_id != comment.id]
    change = FieldChange("comment", "text", comment.text, None)
    return touch(
        org, issue, editor, now, "IssueCommentRemoved", change,
        comment_count=max(0, issue.comment_count - 1),
    )  # fmt: skip


# -- worklogs -----------------------------------------------------------------------------------


def find_worklog(org: Org, issue: Issue, wanted: str) -> Worklog:
    found = next((w for w in org.records(issue).worklogs if str(w.id) == wanted), None)
    if found is None:
        raise ApiError(404, f"Worklog {wanted} not found", errors={"worklog": wanted})
    return found


def _duration(checks: Checks, required: bool) -> int | None:
    value = checks.body.get("duration")
    if value is None and not required:
        return None
    duration = parse_duration_ms(value)
    if duration is None or duration <= 0:
        checks.fail("duration", "Required: an ISO-8601 duration such as PT1H30M")
    return duration


def add_worklog(org: Org, issue: Issue, body: dict, author: int, now: int) -> tuple[Issue, Worklog]:
    """POST /issues/{key}/worklog: duration required; start defaults to now."""
    checks = Checks(org, body)
    duration = _duration(checks, required=True)
    start = checks.instant("start")
    comment = checks.text("comment")
    checks.done()
    when = max(now, issue.updated_at)
    record = Worklog(
        id=org.counters.take("worklog"),
        start=start if start is not None else when,
        duration_ms=duration or 0,
        comment=comment,
        created_by=author,
        created_at=when,
        updated_by=author,
        updated_at=when,
    )
    org.records(issue).worklogs.append(record)
    change = FieldChange("spent", "text", None, body.get("duration"))
    return touch(org, issue, author, now, "IssueWorklogAdded", change), record


def edit_worklog(
    org: Org, issue: Issue, record: Worklog, body: dict, editor: int, now: int
) -> Issue:
    """PATCH: duration, comment (and start) of one record."""
    checks = Checks(org, body)
    duration = _duration(checks, required=False)
    start = checks.instant("start")
    comment = checks.text("comment")
    checks.done()
    if duration is not None:
        record.duration_ms = duration
    if start is not None:
        record.start = start
    if "comment" in body:
        record.comment = comment or None
    record.updated_at, record.updated_by = max(now, issue.updated_at), editor
    record.version += 1
    return touch(org, issue, editor, now, "IssueWorklogUpdated")


def delete_worklog(org: Org, issue: Issue, record: Worklog, editor: int, now: int) -> Issue:
    org.records(issue).worklogs.remove(record)
    return touch(org, issue, editor, now, "IssueWorklogRemoved")


# -- links --------------------------------------------------------------------------------------


def add_link(org: Org, issue: Issue, body: dict, author: int, now: int) -> Link:
    """POST /issues/{key}/links {relationship, issue}: both issues log it and move."""
    relationship = body.get("relationship")
    if relationship not in RELATIONSHIPS:
        raise invalid({"relationship": f"Must be one of: {', '.join(RELATIONSHIPS)}"})
    other_ref = body.get("issue")
    other = org.find_issue(str(other_ref)) if isinstance(other_ref, str) else None
    if other is None:
        raise issue_not_found(str(other_ref))
    if other.key == issue.key:
        raise invalid({"issue": "An issue cannot be linked to itself"})
    link_type, direction = RELATIONSHIPS[str(relationship)]
    if any(
        lk.type == link_type and {lk.source, lk.target} == {issue.key, other.key}
        for lk in org.links_of(issue.key)
    ):
        raise invalid({"issue": f"Issues {issue.key} and {other.key} are already linked so"})
    when = max(now, issue.updated_at, other.updated_at)
    link = Link(org.counters.take("link"), link_type, issue.key, other.key, direction, author, when)
    org.add_link(link)
    for end in (issue, other):
        touch(org, end, author, when, "IssueLinked")
    return link


def delete_link(org: Org, issue: Issue, wanted: str, editor: int, now: int) -> None:
    link = next((lk for lk in org.links_of(issue.key) if str(lk.id) == wanted), None)
    if link is None:
        raise ApiError(404, f"Link {wanted} not found", errors={"link": wanted})
    org.remove_link(link)
    for key in (link.source, link.target):
        touch(org, org.issues[key], editor, now, "IssueUnlinked")


# -- attachments --------------------------------------------------------------------------------


def add_attachment(
    org: Org, issue: Issue, name: str, data: bytes, mimetype: str, author: int, now: int
) -> Attachment:
    when = max(now, issue.updated_at)
    attachment = Attachment(
        str(org.counters.take("attachment")), name, mimetype, StoredBlob(data), author, when
    )
    org.records(issue).attachments.append(attachment)
    touch(org, issue, author, now, "IssueAttachmentAdded")
    return attachment


def delete_attachment(org: Org, issue: Issue, wanted: str, editor: int, now: int) -> None:
    records = org.records(issue)
    found = next((a for a in records.attachments if a.id == wanted), None)
    if found is None:
        raise ApiError(404, "Attachment does not exist.", errors={"attachment": wanted})
    records.attachments.remove(found)
    for comment in records.comments:
        if wanted in comment.attachment_ids:
            comment.attachment_ids.remove(wanted)
    touch(org, issue, editor, now, "IssueAttachmentRemoved")


# -- issues -------------------------------------------------------------------------------------


def create_issue(org: Org, body: dict, author: int, now: int) -> Issue:
    """POST /issues/: queue and summary required; the next number of its queue, now."""
    checks = Checks(org, body)
    queue_value = body.get("queue")
    queue_key = queue_value.get("key") if isinstance(queue_value, dict) else queue_value
    queue = org.queues.get(queue_key) if isinstance(queue_key, str) else None
    if queue is None:
        checks.fail("queue", f"Queue {queue_key!r} does not exist")
    summary = checks.text("summary", required=True, limit=255)
    description = checks.text("description")
    kind = _entry_key(org.issue_types, body.get("type"), checks, "type")
    priority = _entry_key(org.priorities, body.get("priority"), checks, "priority")
    assignee = checks.user("assignee")
    checks.done()
    assert queue is not None
    number = queue.next_number
    queue.next_number += 1
    key = f"{queue.key}-{number}"
    issue = Issue(
        seq=org.counters.take("issue"),
        id=hashlib.sha256(f"{org.id}:{key}:{secrets.token_hex(4)}".encode()).hexdigest()[:24],
        key=key,
        queue=queue.key,
        number=number,
        summary=summary or "",
        description=description or None,
        type=kind or queue.default_type,
        priority=priority or queue.default_priority,
        status=workflow_of(org, queue.key, kind or queue.default_type).initial,
        previous_status=None,
        resolution=None,
        created_at=now,
        updated_at=now,
        status_start=now,
        resolved_at=None,
        created_by=author,
        updated_by=author,
        resolved_by=None,
        assignee=assignee.uid if assignee else None,
        tags=tuple(t for t in body.get("tags") or () if isinstance(t, str)),
    )
    org.put_issue(issue)
    rules_of(org).fire_on_create(issue.queue)
    entry = ChangelogEntry(runtime_hex_id(org, "changelog"), "IssueCreated", author, now)
    entry.fields.append(FieldChange("status", "statuses", None, issue.status))
    org.records(issue).changelog.append(entry)
    return issue


def _entry_key(dictionary: Dictionary, value: object, checks: Checks, name: str) -> str | None:
    if value is None:
        return None
    key = value.get("key") if isinstance(value, dict) else value
    entry = dictionary.lookup(key)
    if entry is None:
        checks.fail(name, f"Unknown {name} {value!r}")
        return None
    return str(entry.key)


def move_issue(
    org: Org, issue: Issue, queue_key: str, editor: int, now: int, *, initial_status: bool = False
) -> Issue:
    """POST /issues/{key}/_move?queue=: the next key of that queue; the old key still finds
    the issue (its ``aliases``). A status the new queue's workflow lacks, or ``initialStatus``,
    puts it in that workflow's initial status."""
    queue = org.queues.get(queue_key)
    if queue is None:
        raise ApiError(404, f"Queue {queue_key!r} does not exist", errors={"queue": queue_key})
    if queue.key == issue.queue:
        raise invalid({"queue": f"Issue {issue.key} is in queue {queue.key} already"})
    number = queue.next_number
    queue.next_number += 1
    workflow = workflow_of(org, queue.key, issue.type)
    status = issue.status
    if initial_status or status not in workflow.statuses:
        status = workflow.initial
    when = max(now, issue.updated_at)
    moved = replace(
        issue,
        key=f"{queue.key}-{number}",
        queue=queue.key,
        number=number,
        status=status,
        aliases=(*issue.aliases, issue.key),
    )
    org.rekey_issue(issue, moved)
    changes = [
        FieldChange("queue", "text", issue.queue, queue.key),
        FieldChange("key", "text", issue.key, moved.key),
    ]
    if status != issue.status:
        changes.append(FieldChange("status", "statuses", issue.status, status))
    return touch(org, moved, editor, when, "IssueMoved", *changes)


def delete_issue(org: Org, issue: Issue) -> None:
    """Sandbox only (the API has no issue delete): the issue and its links vanish."""
    for link in org.links_of(issue.key):
        org.remove_link(link)
    del org.issues[issue.key]


def guess_mimetype(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"
