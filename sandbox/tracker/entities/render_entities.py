"""JSON shapes of entities and their sub-records.

An entity is ``{self, id, version, shortId, entityType, createdBy, createdAt, updatedAt,
fields}``; ``fields`` holds ``summary`` always and the other keys the ``fields`` query asks for
(comma separated; ``checklistItems`` among them), ``expand=attachments`` adds ``attachments``.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from urllib.parse import quote

from haul.sandbox.groups import groups_of
from haul.sandbox.timefmt import format_ms
from haul.sandbox.tracker.api.render_refs import View, issue_ref, user_ref
from haul.sandbox.tracker.entities.entity_access import permission_sources
from haul.sandbox.tracker.entities.entity_links import RELATIONSHIPS
from haul.sandbox.tracker.planning.planning import (
    LEVELS,
    Entity,
    EntityChecklistItem,
    EntityComment,
    EntityEvent,
    EntityLink,
    Planning,
    StoredFile,
)

FIELD_NAMES = {
    "summary": "Summary",
    "description": "Description",
    "lead": "Lead",
    "entityStatus": "Status",
    "start": "Start",
    "end": "Deadline",
    "parentEntity": "Parent",
    "teamUsers": "Participants",
    "tags": "Tags",
    "comment": "Comment",
    "links": "Links",
    "checklistItems": "Checklist",
    "attachments": "Attachments",
    "permissions": "Access",
}


def entity_self(view: View, value: Entity) -> str:
    return f"{view.base}/entities/{value.type}/{value.id}"


def entity_ref(view: View, value: Entity) -> dict:
    return {"self": entity_self(view, value), "id": value.id, "display": value.summary}


def requested(raw: str | None) -> set[str]:
    """The names a ``fields`` query asks for."""
    return {name.strip() for name in (raw or "").split(",") if name.strip()}


def entity(
    view: View,
    planning: Planning,
    value: Entity,
    fields: set[str] = frozenset(),  # type: ignore[assignment]
    *,
    attachments: bool = False,
) -> dict:
    body = {
        "self": entity_self(view, value),
        "id": value.id,
        "version": value.version,
        "shortId": value.short_id,
        "entityType": value.type,
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        "updatedAt": format_ms(value.updated_at),
        "fields": _fields(view, planning, value, {"summary", *fields}),
    }
    if attachments:
        body["attachments"] = [attachment(view, value, f) for f in value.attachments]
    return body


def _fields(view: View, planning: Planning, value: Entity, wanted: set[str]) -> dict:
    every: dict[str, Callable[[], object]] = {
        "summary": lambda: value.summary,
        "description": lambda: value.description,
        "author": lambda: user_ref(view, value.author),
        "lead": lambda: user_ref(view, value.lead),
        "entityStatus": lambda: value.status,
        "start": lambda: format_ms(value.start) if value.start is not None else None,
        "end": lambda: format_ms(value.end) if value.end is not None else None,
        "teamUsers": lambda: [user_ref(view, uid) for uid in value.team],
        "clients": lambda: [user_ref(view, uid) for uid in value.clients],
        "followers": lambda: [user_ref(view, uid) for uid in value.followers],
        "tags": lambda: list(value.tags),
        "teamAccess": lambda: value.team_access,
        "parentEntity": lambda: parents(view, planning, value),
        "checklistItems": lambda: [checklist_item(view, item) for item in value.checklist],
        "keyResultItems": lambda: [dict(item) for item in value.key_results],
        "issueQueues": lambda: _issue_queues(view, planning, value),
        "lastCommentUpdatedAt": lambda: _last_comment(value),
    }
    return {name: every[name]() for name in every if name in wanted}


def parents(view: View, planning: Planning, value: Entity) -> dict:
    def ref(entity_id: str) -> dict | None:
        found = planning.entities.get(entity_id)
        return entity_ref(view, found) if found else None

    secondary = [ref(p) for p in value.secondary]
    return {
        "primary": ref(value.parent) if value.parent else None,
        "secondary": [item for item in secondary if item is not None],
    }


def _issue_queues(view: View, planning: Planning, value: Entity) -> list[dict]:
    keys = sorted(
        {
            link.target.rsplit("-", 1)[0]
            for link in planning.links_of(value.id)
            if link.to_issue and link.source == value.id
        }
    )
    queues = [view.org.queues[key] for key in keys if key in view.org.queues]
    return [
        {"self": f"{view.base}/queues/{q.key}", "id": str(q.id), "key": q.key, "display": q.name}
        for q in queues
    ]


def _last_comment(value: Entity) -> str | None:
    times = [c.updated_at for c in value.comments]
    return format_ms(max(times)) if times else None


def comment(view: View, owner: Entity, value: EntityComment) -> dict:
    return {
        "self": f"{entity_self(view, owner)}/comments/{value.id}",
        "id": value.id,
        "longId": value.long_id,
        "text": value.text,
        "createdBy": user_ref(view, value.created_by),
        "updatedBy": user_ref(view, value.updated_by),
        "createdAt": format_ms(value.created_at),
        "updatedAt": format_ms(value.updated_at),
        "summonees": [user_ref(view, uid) for uid in value.summonees],
        "version": value.version,
        "type": "standard",
        "transport": "internal",
    }


def checklist_item(view: View, value: EntityChecklistItem) -> dict:
    body: dict = {
        "id": value.id,
        "text": value.text,
        "textHtml": f"<p>{escape(value.text)}</p>",
        "checked": value.checked,
        "checklistItemType": "standard",
    }
    if value.assignee is not None:
        body["assignee"] = user_ref(view, value.assignee)
    if value.deadline is not None:
        body["deadline"] = {"date": format_ms(value.deadline), "deadlineType": "date"}
    return body


def attachment(view: View, owner: Entity | None, value: StoredFile) -> dict:
    """A file's metadata; ``owner`` None for a temporary upload."""
    where = f"{entity_self(view, owner)}/attachments" if owner else f"{view.base}/attachments"
    return {
        "self": f"{where}/{value.id}",
        "id": value.id,
        "name": value.name,
        "content": f"{view.base}/attachments/{value.id}/{quote(value.name)}",
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        "mimetype": value.mimetype,
        "size": value.size,
    }


def link(view: View, planning: Planning, value: EntityLink, seen_from: str) -> dict:
    """A link as ``seen_from`` lists it: the relationship from its side, and the other end."""
    outgoing = value.source == seen_from
    other_id = value.target if outgoing else value.source
    relationship = value.relationship if outgoing else RELATIONSHIPS[value.relationship]
    if value.to_issue and outgoing:
        issue = view.org.issues.get(other_id)
        ref = issue_ref(view, issue) if issue else {"key": other_id}
        end = {"id": ref.get("id"), "key": other_id, "summary": ref.get("display")}
        kind = "issue"
    else:
        other = planning.entities[other_id]
        end = {"id": other.id, "summary": other.summary, "shortId": other.short_id}
        kind = other.type
    return {
        "id": value.id,
        "type": relationship,
        "entityType": kind,
        "linkFieldValues": end,
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
    }


def event(view: View, value: EntityEvent) -> dict:
    return {
        "id": value.id,
        "author": user_ref(view, value.author),
        "date": format_ms(value.at),
        "transport": "front",
        "display": value.kind,
        "changes": [
            {"field": {"id": c.field, "display": FIELD_NAMES.get(c.field, c.field)}, "diff": c.diff}
            for c in value.changes
        ],
    }


def permissions(view: View, planning: Planning, value: Entity, *, extended: bool) -> dict:
    groups = groups_of(view.org).by_id
    acl = {}
    for level in LEVELS:
        holders = value.acl.get(level)
        users = sorted(holders.users) if holders else []
        group_ids = sorted(holders.groups) if holders else []
        acl[level] = {
            "users": [user_ref(view, uid) for uid in users],
            "groups": [
                {"self": f"{view.base}/groups/{g}", "id": g, "display": groups[g].name}
                for g in group_ids
                if g in groups
            ],
            "roles": sorted(holders.roles) if holders else [],
        }
    body: dict = {
        "acl": acl,
        "permissionSources": [entity_ref(view, p) for p in permission_sources(planning, value)],
    }
    if extended:
        body["parentEntities"] = parents(view, planning, value)
    return body
