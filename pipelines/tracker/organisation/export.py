"""The tracker's organisation structure as export tables, and its custom fields typed.

Components, versions, boards, board columns, sprints and fields get a table each, one row per
staged record; `issue_custom_fields` has one row per issue and one typed column per custom field
(named by its key: a local field by its bare key), built from the fields the extract staged, so
an analyst reads `severity` or `ticketCount` instead of digging in `issues.other_fields`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from haul.pipelines.export.columns import (
    as_json,
    day,
    display_text,
    identifier,
    timestamp,
    user,
    value,
)
from haul.pipelines.export.tables import (
    Column,
    ColumnType,
    Family,
    Item,
    Table,
)
from haul.pipelines.tracker.export_columns import of_issue
from haul.state.store import StagingStore

SERVICE = "tracker"
# a field's schema type -> its column type (user: the login; anything else: text)
FIELD_TYPES: dict[str, ColumnType] = {
    "integer": "int",
    "float": "float",
    "number": "float",
    "date": "date",
    "datetime": "timestamp",
}
DATETIME_FIELD = "ru.yandex.startrek.core.fields.DateTimeFieldType"


def _name(doc: str, *path: str) -> Column:
    return Column("name", "string", doc, lambda item: display_text(item.get(*path)))


def _queue(doc: str) -> Column:
    return value("queue_key", "string", doc, "queue", "key")


COMPONENTS = Table("components", "component", (
    identifier("id", "the component's id", "id"),
    _queue("the queue it belongs to"),
    _name("its name", "name"),
    value("description", "string", "its description", "description"),
    *user("lead", "the component's lead", "lead"),
    value("assign_auto", "bool", "whether its lead is assigned new issues", "assignAuto"),
), doc="the components of the queues in scope", service=SERVICE)  # fmt: skip

VERSIONS = Table("versions", "version", (
    identifier("id", "the version's id", "id"),
    _queue("the queue it belongs to"),
    _name("its name", "name"),
    value("description", "string", "its description", "description"),
    day("start_date", "when it starts", "startDate"),
    day("due_date", "when it is due", "dueDate"),
    value("released", "bool", "whether it is released", "released"),
    value("archived", "bool", "whether it is archived", "archived"),
), doc="the versions of the queues in scope", service=SERVICE)  # fmt: skip

BOARDS = Table("boards", "board", (
    identifier("id", "the board's id", "id"),
    _name("its name", "name"),
    value("queue_key", "string", "the queue its filter selects", "filter", "queue"),
    value("use_ranking", "bool", "whether it ranks issues by hand", "useRanking"),
    timestamp("created_at", "when it was made", "createdAt"),
), doc="the org's boards", service=SERVICE)  # fmt: skip

BOARD_COLUMNS = Table("board_columns", "board_column", (
    Column("board_id", "string", "the board it is on", lambda item: item.record.parent),
    identifier("id", "the column's id", "id"),
    _name("its name", "name"),
    value("position", "int", "its place on the board, from 0", "position"),
    Column("statuses", "json", "the statuses it holds, a JSON list of keys",
           lambda item: sorted(str(s.get("key")) for s in item.get("statuses") or [])),
), doc="each board's columns, in order", service=SERVICE)  # fmt: skip

SPRINTS = Table("sprints", "sprint", (
    identifier("id", "the sprint's id", "id"),
    value("board_id", "string", "its board", "board", "id"),
    _name("its name", "name"),
    value("status", "string", "draft, in progress, released...", "status"),
    value("archived", "bool", "whether it is archived", "archived"),
    day("start_date", "when it starts", "startDate"),
    day("end_date", "when it ends", "endDate"),
), doc="the sprints of the org's boards", service=SERVICE)  # fmt: skip

FIELDS = Table("fields", "field", (
    identifier("id", "the field's id (its key)", "id"),
    _name("its name", "name"),
    value("kind", "string", "global (custom) or standard (system)", "type"),
    value("schema_type", "string", "string, integer, float, date, user, ...", "schema", "type"),
    value("category_id", "string", "its category", "category", "id"),
    as_json("options", "a drop-down's values, a JSON list", "optionsProvider", "values"),
), doc="the org's fields, system and custom", service=SERVICE)  # fmt: skip


def _field_column(key: str, field: dict[str, Any], ids: tuple[str, ...]) -> Column:
    schema = str((field.get("schema") or {}).get("type") or "")
    kind: ColumnType = FIELD_TYPES.get(schema, "string")
    if field.get("fieldType") == DATETIME_FIELD:
        kind = "timestamp"

    def read(item: Item) -> Any:
        found = next((item.raw[i] for i in ids if i in item.raw), None)
        if isinstance(found, dict):  # a user: the login, as every other people column
            login = item.context.memo(
                ("login", found.get("id")), lambda store: _login(store, found)
            )
            return login or found.get("display")
        return found

    return Column(key, kind, f"{field.get('name') or key} ({schema or 'text'})", read)


def _login(store: StagingStore, ref: dict[str, Any]) -> str | None:
    user = store.get_record("user", str(ref.get("id")))
    return str(user.raw.get("login")) if user is not None else None


def custom_field_tables(store: StagingStore) -> Iterable[Table]:
    """One table, `issue_custom_fields`: a typed column per custom field the extract staged."""
    fields: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {}
    for record in store.iter_records("field"):
        if record.raw.get("type") == "global":
            fields[record.source_id] = (record.raw, (record.source_id,))
    for record in store.iter_records("local_field"):
        key = str(record.raw.get("key"))
        raw, ids = fields.get(key, (record.raw, (key,)))
        fields[key] = (raw, (str(record.raw.get("id")), *ids))  # each queue's id, then the key
    if not fields:
        return []
    columns = [_field_column(key, *fields[key]) for key in sorted(fields)]
    return [
        Table(
            "issue_custom_fields",
            "issue",
            (identifier("issue_key", "the issue's key", "key"), *columns),
            doc="one row per issue, a typed column per custom field (global and local)",
            service=SERVICE,
            access=of_issue,
        )
    ]


ISSUE_CUSTOM_FIELDS = Family(
    "issue_custom_fields",
    custom_field_tables,
    doc="one row per issue, a typed column per custom field (global and local, by key: "
    "integer: int, float: float, date: date, datetime: timestamp, user: login, others: string)",
    service=SERVICE,
)

TABLES = (COMPONENTS, VERSIONS, BOARDS, BOARD_COLUMNS, SPRINTS, FIELDS, ISSUE_CUSTOM_FIELDS)
