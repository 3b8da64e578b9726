"""JSON shapes of issues and their records, as the recorded live replies show them.

Each function takes a :class:`View` (the organisation plus the absolute API base of this
request, e.g. ``http://127.0.0.1:8700/v3``) and one model object, and returns a plain dict.
The references they are made of live in :mod:`sandbox.tracker.api.render_refs` (and are named
here too); the organisation's (users, dictionary values, queues, fields, boards...) in
:mod:`sandbox.tracker.structure.render_structure`.
"""

from __future__ import annotations

from typing import cast
from urllib.parse import quote

from haul.sandbox.timefmt import format_duration, format_ms
from haul.sandbox.tracker.api.render_refs import (
    View,
    entry_ref,
    issue_ref,
    queue_ref,
    structure_values,
    user_ref,
)
from haul.sandbox.tracker.model import (
    Attachment,
    ChangelogEntry,
    ChecklistItem,
    Comment,
    FieldChange,
    Issue,
    Link,
    NamedThen,
    Worklog,
)

_STATUS_TYPES = {
    "new": "New",
    "inProgress": "In progress",
    "paused": "Paused",
    "done": "Done",
    "cancelled": "Cancelled",
}
_FIELD_NAMES = {
    "status": "Status",
    "resolution": "Resolution",
    "priority": "Priority",
    "summary": "Summary",
    "description": "Description",
    "assignee": "Assignee",
    "tags": "Tags",
    "type": "Type",
    "statusStartTime": "Status start time",
}


def issue(view: View, value: Issue) -> dict:
    status = view.org.statuses.by_key[value.status]
    body = {
        "self": f"{view.base}/issues/{value.key}",
        "id": value.id,
        "key": value.key,
        "version": value.version,
        "summary": value.summary,
        "statusStartTime": format_ms(value.status_start),
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        "updatedBy": user_ref(view, value.updated_by),
        "updatedAt": format_ms(value.updated_at),
        "type": entry_ref(view, "issuetypes", value.type),
        "priority": entry_ref(view, "priorities", value.priority),
        "queue": queue_ref(view, value.queue),
        "status": entry_ref(view, "statuses", value.status),
        "statusType": {
            "id": status.status_type,
            "key": status.status_type,
            "display": _STATUS_TYPES.get(status.status_type or "", ""),
        },
        "favorite": False,
        "votes": 0,
        "commentWithoutExternalMessageCount": value.comment_count,
        "commentWithExternalMessageCount": 0,
    }
    optional = {
        "description": value.description,
        "previousStatus": entry_ref(view, "statuses", value.previous_status),
        "assignee": user_ref(view, value.assignee),
        "resolution": entry_ref(view, "resolutions", value.resolution),
        "resolvedAt": format_ms(value.resolved_at) if value.resolved_at is not None else None,
        "resolvedBy": user_ref(view, value.resolved_by),
        "lastCommentUpdatedAt": format_ms(value.last_comment_at) if value.last_comment_at else None,
        "followers": [user_ref(view, uid) for uid in value.followers] or None,
        "tags": list(value.tags) or None,
        "unique": value.unique,
        "aliases": list(value.aliases) or None,
    }
    body.update({name: item for name, item in optional.items() if item is not None})
    extra, refs = view.org.values(value)
    body.update(extra)
    if "followingMaillists" in body:  # stored as addresses, read as references
        body["followingMaillists"] = [
            {"self": f"{view.base}/maillists/{address}", "id": address, "display": address}
            for address in cast(list[str], body["followingMaillists"])
        ]
    body.update(structure_values(view, refs))
    return body


def comment(view: View, owner: Issue, value: Comment, *, attachments: bool = False) -> dict:
    body = {
        "self": f"{view.base}/issues/{owner.key}/comments/{value.id}",
        "id": value.id,
        "longId": value.long_id,
        "text": value.text,
        "createdBy": user_ref(view, value.created_by),
        "updatedBy": user_ref(view, value.updated_by),
        "createdAt": format_ms(value.created_at),
        "updatedAt": format_ms(value.updated_at),
        "version": value.version,
        "type": "standard",
        "transport": "internal",
    }
    if attachments and value.attachment_ids:
        body["attachments"] = [
            {
                "self": f"{view.base}/issues/{owner.key}/attachments/{attachment_id}",
                "id": attachment_id,
                "display": name,
            }
            for attachment_id, name in _attachment_names(view, owner, value.attachment_ids)
        ]
    return body


def _attachment_names(view: View, owner: Issue, ids: list[str]) -> list[tuple[str, str]]:
    by_id = {a.id: a.name for a in view.org.records(owner).attachments}
    return [(attachment_id, by_id.get(attachment_id, "")) for attachment_id in ids]


def worklog(view: View, owner: Issue, value: Worklog) -> dict:
    body = {
        "self": f"{view.base}/issues/{owner.key}/worklog/{value.id}",
        "id": value.id,
        "version": value.version,
        "issue": issue_ref(view, owner),
        "createdBy": user_ref(view, value.created_by),
        "updatedBy": user_ref(view, value.updated_by),
        "createdAt": format_ms(value.created_at),
        "updatedAt": format_ms(value.updated_at),
        "start": format_ms(value.start),
        "duration": format_duration(value.duration_ms),
    }
    if value.comment is not None:
        body["comment"] = value.comment
    return body


def changelog_entry(view: View, owner: Issue, value: ChangelogEntry) -> dict:
    return {
        "id": value.id,
        "self": f"{view.base}/issues/{owner.key}/changelog/{value.id}",
        "issue": issue_ref(view, owner),
        "updatedAt": format_ms(value.updated_at),
        "updatedBy": user_ref(view, value.updated_by),
        "type": value.type,
        "transport": "front",
        "fields": [_field_change(view, change) for change in value.fields],
    }


def _field_change(view: View, change: FieldChange) -> dict:
    field = {
        "self": f"{view.base}/fields/{change.field}",
        "id": change.field,
        "display": _FIELD_NAMES.get(change.field, change.field),
    }
    return {
        "field": field,
        "from": _change_value(view, change.kind, change.before),
        "to": _change_value(view, change.kind, change.after),
    }


def _change_value(view: View, kind: str, value: object) -> object:
    if value is None:
        return None
    if kind == "users":
        return user_ref(view, value if isinstance(value, int) else None)
    if kind == "text":
        return value
    if kind == "value":  # a structure or custom field, tags, followers: the value as kept
        return list(value) if isinstance(value, tuple) else value
    if kind == "time":
        return format_ms(value) if isinstance(value, int) else None
    if isinstance(value, NamedThen):  # the name it had when the change was made
        ref = entry_ref(view, kind, value.key)
        return None if ref is None else {**ref, "display": value.display}
    return entry_ref(view, kind, str(value))


def link(view: View, value: Link, seen_from: str) -> dict:
    """A link as the issue ``seen_from`` lists it: the other end is the object."""
    other_key = value.target if seen_from == value.source else value.source
    direction = value.direction
    if seen_from != value.source:
        direction = "inward" if direction == "outward" else "outward"
    other = view.org.issues[other_key]
    kind = view.org.link_types[value.type]
    return {
        "self": f"{view.base}/issues/{seen_from}/links/{value.id}",
        "id": value.id,
        "type": {
            "self": f"{view.base}/linktypes/{kind.id}",
            "id": kind.id,
            "inward": kind.inward,
            "outward": kind.outward,
        },
        "direction": direction,
        "object": issue_ref(view, other),
        "createdBy": user_ref(view, value.created_by),
        "updatedBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        "updatedAt": format_ms(value.created_at),
        "assignee": user_ref(view, other.assignee),
        "status": entry_ref(view, "statuses", other.status),
        "hidden": None,
    }


def attachment(view: View, owner: Issue, value: Attachment, *, with_comment: bool = False) -> dict:
    body = {
        "self": f"{view.base}/issues/{owner.key}/attachments/{value.id}",
        "id": value.id,
        "name": value.name,
        "content": download_url(view, owner, value),
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        "mimetype": value.mimetype,
        "size": value.size,
    }
    if with_comment and value.comment_id is not None:
        body["commentId"] = str(value.comment_id)
    return body


def download_url(view: View, owner: Issue, value: Attachment) -> str:
    return f"{view.base}/issues/{owner.key}/attachments/{value.id}/{quote(value.name)}"


def checklist_item(view: View, value: ChecklistItem) -> dict:
    body: dict = {
        "id": value.id,
        "text": value.text,
        "textHtml": f"<p>{_escape(value.text)}</p>",
        "checked": value.checked,
        "checklistItemType": "standard",
    }
    if value.assignee is not None:
        body["assignee"] = user_ref(view, value.assignee)
    if value.deadline is not None:
        body["deadline"] = {"date": format_ms(value.deadline), "deadlineType": "date"}
    return body


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
