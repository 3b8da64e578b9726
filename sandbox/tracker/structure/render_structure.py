"""JSON shapes of the organisation as configured, as the recorded live replies show them:
components, queue versions, boards, columns, sprints, fields, local fields, field categories;
users, dictionary values and queues."""

from __future__ import annotations

from haul.sandbox.people import User
from haul.sandbox.timefmt import format_ms
from haul.sandbox.tracker.api.render_refs import View, entry_ref, queue_ref, user_ref
from haul.sandbox.tracker.model import Entry, Queue
from haul.sandbox.tracker.structure.structure import (
    FIELD_TYPES,
    Board,
    Column,
    Component,
    Field,
    FieldCategory,
    Sprint,
    Version,
)
from haul.sandbox.tracker.workflows.workflows import (
    queue_workflows,
    types_config_of,
    workflows_of,
)


def component(view: View, value: Component) -> dict:
    body = {
        "self": f"{view.base}/components/{value.id}",
        "id": value.id,
        "version": value.version,
        "name": value.name,
        "queue": queue_ref(view, value.queue),
        "description": value.description,
        "assignAuto": value.assign_auto,
    }
    if value.lead is not None:
        body["lead"] = user_ref(view, value.lead)
    return body


def version(view: View, value: Version) -> dict:
    body: dict = {
        "self": f"{view.base}/versions/{value.id}",
        "id": value.id,
        "version": value.version,
        "queue": queue_ref(view, value.queue),
        "name": value.name,
        "description": value.description,
        "released": value.released,
        "archived": value.archived,
    }
    if value.start_date is not None:
        body["startDate"] = value.start_date
    if value.due_date is not None:
        body["dueDate"] = value.due_date
    return body


def board(view: View, value: Board) -> dict:
    body: dict = {
        "self": f"{view.base}/boards/{value.id}",
        "id": value.id,
        "version": value.version,
        "name": value.name,
        "columns": [
            {"self": _column_self(view, value, c), "id": str(c.id), "display": c.name}
            for c in value.columns
        ],
        "useRanking": value.use_ranking,
        "estimateBy": {
            "self": f"{view.base}/fields/storyPoints",
            "id": "storyPoints",
            "display": "Story points",
        },
        "country": {"self": f"{view.base}/countries/1", "id": "1", "display": "Russia"},
        "calendar": {"id": 1},
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        "updatedAt": format_ms(value.updated_at),
    }
    if value.queue is not None:
        body["filter"] = {"queue": value.queue}
    return body


def _column_self(view: View, owner: Board, value: Column) -> str:
    return f"{view.base}/boards/{owner.id}/columns/{value.id}"


def column(view: View, owner: Board, value: Column) -> dict:
    body: dict = {
        "self": _column_self(view, owner, value),
        "id": value.id,
        "name": value.name,
        "statuses": [entry_ref(view, "statuses", key) for key in value.statuses],
    }
    if value.limit is not None:
        body["limit"] = value.limit
    return body


def sprint(view: View, value: Sprint) -> dict:
    owner = view.org.structure.boards.get(value.board)
    return {
        "self": f"{view.base}/sprints/{value.id}",
        "id": value.id,
        "version": value.version,
        "name": value.name,
        "board": {
            "self": f"{view.base}/boards/{value.board}",
            "id": str(value.board),
            "display": owner.name if owner else "",
        },
        "status": value.status,
        "archived": value.archived,
        "createdBy": user_ref(view, value.created_by),
        "createdAt": format_ms(value.created_at),
        "startDate": value.start_date,
        "endDate": value.end_date,
        "startDateTime": f"{value.start_date}T00:00:00.000+0000",
        "endDateTime": f"{value.end_date}T23:59:59.000+0000",
    }


def category(view: View, value: FieldCategory) -> dict:
    return {
        "self": f"{view.base}/fields/categories/{value.id}",
        "id": value.id,
        "version": value.version,
        "name": value.name_en,
        "description": value.description,
        "order": value.order,
    }


def field(view: View, value: Field) -> dict:
    """A global or local field; a drop-down lists its options through its provider."""
    owner = view.org.structure.categories.get(value.category)
    path = f"queues/{value.queue}/localFields/{value.key}" if value.queue else f"fields/{value.id}"
    schema: dict = {"type": _schema_type(value), "required": value.required}
    if value.items is not None:
        schema["items"] = value.items
    body: dict = {
        "self": f"{view.base}/{path}",
        "id": value.id,
        "key": value.key,
        "version": value.version,
        "name": value.name_en,
        "description": value.description,
        "schema": schema,
        "readonly": value.readonly,
        "options": bool(value.options),
        "suggest": value.kind == "user" or value.items == "user",
        "queryProvider": {"type": "StandardQueryProvider"},
        "order": value.order,
        "category": {
            "self": f"{view.base}/fields/categories/{value.category}",
            "id": value.category,
            "display": owner.name_en if owner else "",
        },
        "type": "local" if value.queue else ("standard" if value.system else "global"),
    }
    if value.options:
        body["optionsProvider"] = {
            "type": "FixedListOptionsProvider",
            "values": list(value.options),
        }
    if value.kind in FIELD_TYPES:
        body["fieldType"] = FIELD_TYPES[value.kind]
    if body["suggest"]:
        body["suggestProvider"] = {"type": "UserSuggestProvider"}
    if value.queue is not None:
        body["queue"] = queue_ref(view, value.queue)
    return body


def _schema_type(value: Field) -> str:
    """The schema type as the service reports it: a Text field's is ``text``, a DateTime
    field's ``datetime`` (a client that builds fields from it makes the same kind)."""
    return value.kind


def user(view: View, person: User) -> dict:
    return {
        "self": f"{view.base}/users/{person.uid}",
        "uid": person.uid,
        "login": person.login,
        "trackerUid": person.uid,
        "passportUid": person.uid,
        "cloudUid": person.cloud_uid,
        "firstName": person.first_name,
        "lastName": person.last_name,
        "display": person.display,
        "email": person.email,
        "external": False,
        "hasLicense": True,
        "dismissed": person.login in view.org.left,
        "useNewFilters": True,
        "disableNotifications": False,
        "firstLoginDate": "2021-12-01T09:00:00.000+0000",
        "lastLoginDate": "2024-12-30T09:00:00.000+0000",
        "sources": ["directory"],
    }


def entry(view: View, path: str, value: Entry, *, single: bool = False) -> dict:
    """A dictionary value as its list endpoint shows it (shapes differ per dictionary); a
    ``single`` value (a get, create or edit reply) names a priority in one language."""
    body: dict = {"self": f"{view.base}/{path}/{value.id}", "id": value.id}
    body["version"] = value.version
    body["key"] = value.key
    if path == "priorities" and not single:
        body["name"] = {"en": value.name_en, "ru": value.name_ru}
    else:
        body["name"] = value.name_en
    description = value.description
    body["description"] = (
        f"{value.name_en} ({value.name_ru})" if description is None else description
    )
    if path != "issuetypes":
        body["order"] = value.order
    if value.status_type is not None:
        body["type"] = value.status_type
    return body


def queue(view: View, value: Queue, *, full: bool = False) -> dict:
    body = {
        "self": f"{view.base}/queues/{value.key}",
        "id": value.id,
        "key": value.key,
        "version": value.version,
        "name": value.name,
        "description": value.description,
        "lead": user_ref(view, value.lead),
        "assignAuto": False,
        "defaultType": entry_ref(view, "issuetypes", value.default_type),
        "defaultPriority": entry_ref(view, "priorities", value.default_priority),
        "denyVoting": False,
        "denyConductorAutolink": False,
        "denyTrackerAutolink": False,
        "useComponentPermissionsIntersection": False,
        "useLastSignature": False,
    }
    if full:
        body.update(types_config(view, value))
    return body


def types_config(view: View, value: Queue) -> dict:
    """The queue's issue types, their configuration (workflow, resolutions) and its workflows
    with their statuses, as ``GET /queues/{key}`` shows them."""
    config = types_config_of(view.org, value)
    workflows = workflows_of(view.org)

    def workflow_ref(workflow: str) -> dict:
        found = workflows.get(workflow)
        name = found.name if found else workflow
        return {"self": f"{view.base}/workflows/{workflow}", "id": workflow, "display": name}

    items = []
    for kind, (workflow, resolutions) in config.items():
        items.append(
            {
                "issueType": entry_ref(view, "issuetypes", kind),
                "workflow": workflow_ref(workflow),
                "resolutions": [entry_ref(view, "resolutions", r) for r in resolutions],
            }
        )
    return {
        "issueTypes": [item["issueType"] for item in items],
        "issueTypesConfig": items,
        "workflows": {
            found.id: [entry_ref(view, "statuses", s) for s in found.statuses
                       if s in view.org.statuses.by_key]
            for found, _ in queue_workflows(view.org, value)
        },
    }  # fmt: skip
