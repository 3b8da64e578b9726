"""An organisation's structure around its issues: field categories, global and queue-local
fields, components, queue versions, boards with their columns, and sprints.

Objects carry an optimistic-lock ``version`` where the service has one (components, versions,
boards, sprints, fields, categories); local fields have none.  Ids are numeric per kind,
except fields (a key, or ``<hex>--<key>`` for a local field) and categories (24 hex).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# value kind -> the service's fully qualified field type name
FIELD_TYPES = {
    "string": "ru.yandex.startrek.core.fields.StringFieldType",
    "text": "ru.yandex.startrek.core.fields.TextFieldType",
    "integer": "ru.yandex.startrek.core.fields.IntegerFieldType",
    "float": "ru.yandex.startrek.core.fields.FloatFieldType",
    "date": "ru.yandex.startrek.core.fields.DateFieldType",
    "datetime": "ru.yandex.startrek.core.fields.DateTimeFieldType",
    "user": "ru.yandex.startrek.core.fields.UserFieldType",
}
KINDS_BY_TYPE = {name: kind for kind, name in FIELD_TYPES.items()}


@dataclass(slots=True)
class FieldCategory:
    id: str
    name_en: str
    name_ru: str
    description: str
    order: int
    version: int = 1


@dataclass(slots=True)
class Field:
    """A field: ``kind`` is its value kind (string, text, integer, float, date, datetime, user,
    or a system schema type such as ``status``); ``options`` make a string field a drop-down."""

    id: str
    key: str
    name_en: str
    name_ru: str
    category: str  # a FieldCategory id
    kind: str
    order: int
    description: str = ""
    options: tuple[str, ...] = ()
    items: str | None = None  # the element type of an array-valued system field
    readonly: bool = False
    required: bool = False
    system: bool = False
    queue: str | None = None  # a local field's queue key
    version: int = 1

    @property
    def is_local(self) -> bool:
        return self.queue is not None


@dataclass(slots=True)
class Component:
    id: int
    name: str
    queue: str
    description: str
    lead: int | None
    assign_auto: bool = False
    version: int = 1


@dataclass(slots=True)
class Version:
    id: int
    queue: str
    name: str
    description: str
    start_date: str | None
    due_date: str | None
    released: bool = False
    archived: bool = False
    version: int = 1


@dataclass(slots=True)
class Column:
    id: int
    name: str
    statuses: list[str]  # status keys
    limit: int | None = None


@dataclass(slots=True)
class Board:
    id: int
    name: str
    queue: str | None  # the queue its filter selects
    created_by: int
    created_at: int
    updated_at: int
    columns: list[Column] = field(default_factory=list)
    use_ranking: bool = False
    version: int = 1


@dataclass(slots=True)
class Sprint:
    id: int
    board: int
    name: str
    status: str  # draft, in_progress, released
    start_date: str
    end_date: str
    created_by: int
    created_at: int
    archived: bool = False
    version: int = 1


@dataclass
class Structure:
    """Everything above; ``next_ids`` hands out numeric ids per kind."""

    categories: dict[str, FieldCategory] = field(default_factory=dict)
    fields: dict[str, Field] = field(default_factory=dict)  # global: system and custom
    local_fields: dict[str, Field] = field(default_factory=dict)  # by "<hex>--<key>"
    components: dict[int, Component] = field(default_factory=dict)
    versions: dict[int, Version] = field(default_factory=dict)
    boards: dict[int, Board] = field(default_factory=dict)
    sprints: dict[int, Sprint] = field(default_factory=dict)
    next_ids: dict[str, int] = field(default_factory=dict)

    def take(self, kind: str, start: int = 1) -> int:
        value = self.next_ids.get(kind, start)
        self.next_ids[kind] = value + 1
        return value

    def local_fields_of(self, queue: str) -> list[Field]:
        return [f for f in self.local_fields.values() if f.queue == queue]

    def custom_field(self, queue: str | None, name: str) -> Field | None:
        """The custom field an issue of ``queue`` may carry under ``name``: a global custom
        field by id, or a local field of that queue by id or bare key."""
        found = self.fields.get(name)
        if found is not None:
            return None if found.system else found
        local = self.local_fields.get(name)
        if local is not None:
            return local if local.queue == queue else None
        return next((f for f in self.local_fields_of(queue or "") if f.key == name), None)
