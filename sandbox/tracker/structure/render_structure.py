"""JSON shapes of an organisation's structure, as the recorded live replies show them:
components, queue versions, boards, columns, sprints, fields, local fields, field categories."""

from __future__ import annotations

from haul.sandbox.timefmt import format_ms
from haul.sandbox.tracker.api.render_refs import View, entry_ref, queue_ref, user_ref
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
    return {"text": "string", "datetime": "date", "integer": "integer"}.get(value.kind, value.kind)
