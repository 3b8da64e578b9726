"""What an export writes: tables of typed columns, each read from one staged entity.

A service says how its staged records become flat rows with a `Table` per entity (or, where
the tables depend on what was staged, a `Family` that builds them from the store), declared in
`pipelines/<service>/export.py` and handed over by the service as `Service.tables` (no table
registers itself when imported); `haul export` asks each service for its tables:

    WORKLOGS = Table("worklogs", "worklog", (
        identifier("id", "worklog id", "id"),
        parent("issue_key", "the issue it was logged on"),
        *user("author", "who logged it", "createdBy"),
        seconds("duration_s", "time logged", "duration"),
    ), doc="time logged on issues", service="tracker")

A column is a name, one of a few types (`ColumnType`), what it means, and a function of the
`Item` being flattened: the part of the staged record this row is about (`raw`), the record
itself, and the `ExportContext` (a small cache of lookups in the store, such as user logins).
Every table also gets `staged_at`, when haul last staged a change to the record. The writers
(`writers.py`) know nothing but the types; nobody else knows a table by name.

A table whose records the source can restrict (`access=`, a rule giving a record's
`Restriction`, or None when it is open) also gets `restricted` and `access_holders`; a
restricted record's rows are left out, and counted in `ExportContext.left_out`, unless
`[export] restricted = "include"`. A table that is restricted content as a whole (a grid on
a restricted page: even its name is) says so in `restriction`, and the export leaves it out
whole.

A *derived* table (`derive=`) is computed from the store rather than read one row per staged
record: its function streams `Derived` groups of rows, each about one subject (an issue, a
queue) with the newest `staged_at` of what it was computed from, so `--since` keeps the rows
of the subjects that moved. `entity` then names what it needs staged (no rows without it).
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal, TypeVar

import structlog

from haul.pipelines.config import Config, Export
from haul.pipelines.export.values import parse_date, parse_timestamp
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

ColumnType = Literal["string", "int", "float", "bool", "timestamp", "date", "json"]
COLUMN_TYPES: tuple[ColumnType, ...] = (
    "string",
    "int",
    "float",
    "bool",
    "timestamp",
    "date",
    "json",
)
T = TypeVar("T")


@dataclass(frozen=True)
class Restriction:
    """A record the source lets only some people read: `holders` names them (``user alice``,
    ``group hr``), sorted; None when the source did not say who (it is restricted all the same:
    an access haul could not read fails closed)."""

    holders: tuple[str, ...] | None = None


class ExportContext:
    """What a column may look up beyond its record: the store, through a bounded cache.

    Records arrive in (parent, source_id) order, so a lookup per parent (an issue's comments,
    say) stays warm while its children are flattened and is dropped soon after.
    """

    def __init__(
        self,
        store: StagingStore,
        size: int = 256,
        *,
        as_of: datetime | None = None,
        settings: Export | None = None,
        config: Config | None = None,
    ) -> None:
        self.store = store
        self.config = config  # the whole config, for what only it says (the key map's slugs)
        # what derived tables compute as of (the instant the staged data stands for), and
        # the config's [export] settings they follow; given, never read from a clock here
        self.as_of = as_of or datetime.now(UTC)
        self.settings = settings or Export()
        self._size = size
        self._cache: OrderedDict[Hashable, Any] = OrderedDict()
        self.left_out: Counter[str] = Counter()  # table -> restricted rows left out

    @property
    def includes_restricted(self) -> bool:
        """Whether restricted content is written (`[export] restricted = "include"`)."""
        return self.settings.restricted == "include"

    def withholds(self, table: str, restriction: Restriction | None, rows: int = 1) -> bool:
        """Whether `rows` of `table` under `restriction` are left out (then counted)."""
        if restriction is None or self.includes_restricted:
            return False
        self.left_out[table] += rows
        return True

    def memo(self, key: Hashable, build: Callable[[StagingStore], T]) -> T:
        """`build(store)`, computed once per `key` while it stays among the recent ones."""
        if key in self._cache:
            self._cache.move_to_end(key)
            value: T = self._cache[key]
            return value
        value = build(self.store)
        self._cache[key] = value
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return value


@dataclass(frozen=True)
class Item:
    """One row to flatten: `raw` is what the row is about (the record's JSON, or one element of
    it, such as a checklist item), `position` its place within the record."""

    raw: dict[str, Any]
    record: StagedRecord
    context: ExportContext
    position: int = 0
    restriction: Restriction | None = None  # the record's, when its table has an access rule

    def get(self, *path: str) -> Any:
        """The value at `path` in `raw` (`item.get("queue", "key")`), or None on the way."""
        value: Any = self.raw
        for step in path:
            if not isinstance(value, dict):
                return None
            value = value.get(step)
        return value


@dataclass(frozen=True)
class Column:
    """One typed column: its value for an item is `read(item)` (None for an empty cell)."""

    name: str
    type: ColumnType
    doc: str
    read: Callable[[Item], Any]

    def __post_init__(self) -> None:
        if self.type not in COLUMN_TYPES:
            raise ValueError(f"column {self.name}: type {self.type!r} is not one of {COLUMN_TYPES}")


def whole_record(record: StagedRecord) -> Iterable[dict[str, Any]]:
    """The default: one row per staged record."""
    return (record.raw,)


STAGED_AT = Column(
    "staged_at",
    "timestamp",
    "when haul last staged a change to this record (UTC): what --since compares",
    lambda item: item.record.staged_at,
)


def _holders(item: Item) -> list[str] | None:
    restriction = item.restriction
    return None if restriction is None or restriction.holders is None else [*restriction.holders]


RESTRICTED = Column(
    "restricted",
    "bool",
    "whether the source lets only some people read this record (or what it belongs to)",
    lambda item: item.restriction is not None,
)
ACCESS_HOLDERS = Column(
    "access_holders",
    "json",
    "who may read it at the source when restricted, a JSON list (`user alice`, `group hr`); "
    "empty when open, or when haul could not read its access",
    _holders,
)
ACCESS_COLUMNS = (RESTRICTED, ACCESS_HOLDERS)
AccessRule = Callable[[StagedRecord, "ExportContext"], Restriction | None]


DERIVED_STAGED_AT = Column(
    "staged_at",
    "timestamp",
    "the newest staged_at of the records the row was computed from (UTC): what --since compares",
    lambda item: item.record.staged_at,
)


@dataclass(frozen=True)
class Derived:
    """Rows a derived table computed about one subject (an issue, a queue); `staged_at` is
    the newest of the staged records they were computed from."""

    subject: str
    staged_at: str
    rows: Iterable[dict[str, Any]]


Derive = Callable[[ExportContext], Iterable[Derived]]


@dataclass(frozen=True)
class Table:
    """One exported file: rows of `entity`'s staged records (only those under `parent`, when
    given), `items(record)` rows per record, each read through `columns`; or, for a derived
    table, the rows `derive(context)` computes (a group's `subject` stands for its record).
    `partition_by` names the timestamp or date column `--partition month` splits the table by
    (the large tables only). `access` gives a record's `Restriction` (None: it is open) and
    adds the access columns; `restriction` marks a table that is restricted as a whole.
    `settings_check` names what the config tells a derived table that the staged data does
    not have (a typo in a setting): each a sentence; any stops the export before it writes."""

    name: str
    entity: str
    columns: tuple[Column, ...]
    doc: str = ""
    service: str = ""
    parent: str | None = None
    items: Callable[[StagedRecord], Iterable[dict[str, Any]]] = whole_record
    derive: Derive | None = None
    partition_by: str | None = None
    access: AccessRule | None = None
    restriction: Restriction | None = None
    settings_check: Callable[[ExportContext], list[str]] | None = None
    all_columns: tuple[Column, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        access = ACCESS_COLUMNS if self.access is not None else ()
        columns = (*self.columns, *access, STAGED_AT if self.derive is None else DERIVED_STAGED_AT)
        names = [column.name for column in columns]
        if duplicated := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"table {self.name}: columns {', '.join(duplicated)} appear twice")
        if self.partition_by is not None and self.partition_by not in names:
            raise ValueError(f"table {self.name}: no column {self.partition_by} to partition by")
        object.__setattr__(self, "all_columns", columns)

    @property
    def origin(self) -> str:
        """Where its rows come from, in words (for `haul export --describe`)."""
        if self.entity == "*":  # the key map: rows of every loaded record
            return "derived from the load ledger and the staged records"
        if self.derive is not None:
            return f"derived from staged `{self.entity}`"
        return f"from staged `{self.entity}`"


def flatten(
    table: Table, records: Iterable[StagedRecord], context: ExportContext
) -> Iterator[tuple[Any, ...]]:
    """The rows of `table` for `records`, each a tuple of typed values in column order.

    A value a column cannot read (a malformed date, an id of the wrong shape) is left empty
    and counted in the log, never the end of the export. A restricted record's rows are left
    out (and counted) unless the export includes restricted content.
    """
    columns = table.all_columns
    for record in records:
        restriction = table.access(record, context) if table.access is not None else None
        items = list(table.items(record))
        if context.withholds(table.name, restriction, len(items)):
            continue
        for position, raw in enumerate(items):
            item = Item(raw, record, context, position, restriction)
            yield tuple(_cell(table, column, item) for column in columns)


def flatten_derived(table: Table, context: ExportContext) -> Iterator[tuple[Any, ...]]:
    """The rows of a derived table, typed as `flatten` types them, `staged_at` last."""
    if table.derive is None:
        raise ValueError(f"table {table.name} is not derived")
    columns = table.all_columns
    for group in table.derive(context):
        record = StagedRecord(table.name, group.subject, None, None, "", None, {}, group.staged_at)
        restriction = table.access(record, context) if table.access is not None else None
        rows = list(group.rows)
        if context.withholds(table.name, restriction, len(rows)):
            continue
        for position, raw in enumerate(rows):
            item = Item(raw, record, context, position, restriction)
            yield tuple(_cell(table, column, item) for column in columns)


def _cell(table: Table, column: Column, item: Item) -> Any:
    try:
        return coerce(column.type, column.read(item))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        log.warning(
            "export_value_unreadable",
            table=table.name,
            column=column.name,
            source_id=item.record.source_id,
            error=f"{type(exc).__name__}: {exc}",
        )
        return None


def coerce(kind: ColumnType, value: Any) -> Any:
    """`value` as the Python type the writers expect for `kind`; None stays None.

    ValueError or TypeError when it cannot be one (the cell is then left empty).
    """
    if value is None:
        return None
    if kind == "json":
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    converter = _CONVERTERS[kind]
    return converter(value)


def _to_string(value: Any) -> str:
    if isinstance(value, dict | list):
        raise TypeError(f"a {type(value).__name__} in a string column (declare it json)")
    return str(value)


INT64 = range(-(2**63), 2**63)  # what an int column holds in Parquet and DuckDB


def _to_int(value: Any) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{value!r} is not an integer")
    number = int(value)
    if number not in INT64:
        raise ValueError(f"{value!r} is larger than a 64-bit integer")
    return number


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return bool(value == "true")
    raise ValueError(f"{value!r} is not a boolean")


def _to_timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    moment = parse_timestamp(value)
    if moment is None:
        raise ValueError(f"{value!r} is not a timestamp")
    return moment


def _to_date(value: Any) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    day = parse_date(value)
    if day is None:
        raise ValueError(f"{value!r} is not a date")
    return day


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "string": _to_string,
    "int": _to_int,
    "float": float,
    "bool": _to_bool,
    "timestamp": _to_timestamp,
    "date": _to_date,
}


@dataclass(frozen=True)
class BrokenTable:
    """What a family could not make a table of: `name` says which (by id: a title may be
    restricted), `error` why."""

    name: str
    error: Exception
    entity: str = ""  # the staged entity its rows would have come from

    @property
    def reason(self) -> str:
        return f"{type(self.error).__name__}: {self.error}"


def each_table(
    records: Iterable[StagedRecord],
    build: Callable[[StagedRecord], Table],
    name: Callable[[StagedRecord], str],
    entity: str,
) -> Iterator[Table | BrokenTable]:
    """A family's tables, one per record: a record `build` fails on is a BrokenTable named by
    `name(record)`, so one grid or survey haul cannot read leaves the others' tables."""
    for record in records:
        try:
            yield build(record)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            yield BrokenTable(name(record), exc, entity)


TableFamily = Callable[[StagingStore], Iterable[Table | BrokenTable]]


@dataclass(frozen=True)
class Family:
    """Tables that depend on what was staged (one per grid, one per survey), built from the
    store when an export runs; `doc` describes them for `haul export --describe`."""

    name: str
    build: TableFamily
    doc: str
    service: str = ""


class Registry:
    """Every table an export can write: fixed tables, and families built from the store."""

    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}
        self._families: dict[str, Family] = {}

    def add_table(self, table: Table) -> Table:
        """Register `table`; a second table of the same name is a mistake (ValueError)."""
        if table.name in self._tables or table.name in self._families:
            raise ValueError(f"an export table named {table.name!r} is already registered")
        self._tables[table.name] = table
        return table

    def add_family(self, name: str, build: TableFamily, *, doc: str, service: str = "") -> Family:
        """Register tables built from the store at export time (their names must not clash)."""
        if name in self._tables or name in self._families:
            raise ValueError(f"an export table family named {name!r} is already registered")
        family = Family(name, build, doc, service)
        self._families[name] = family
        return family

    @property
    def tables(self) -> list[Table]:
        """The fixed tables, in registration order."""
        return list(self._tables.values())

    @property
    def families(self) -> list[Family]:
        """The families, in registration order."""
        return list(self._families.values())

    def tables_for(
        self, store: StagingStore, broken: list[BrokenTable] | None = None
    ) -> list[Table]:
        """Every table of this store: the fixed ones, then each family's. A table a family
        cannot build (a grid or survey haul cannot read) is added to `broken` when given, the
        other tables kept; raised when not."""
        built: list[Table] = []
        for family in self._families.values():
            made: list[Table | BrokenTable]
            try:
                made = list(family.build(store))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                made = [BrokenTable(family.name, exc)]
            for table in made:
                if isinstance(table, Table):
                    built.append(table)
                elif broken is None:
                    raise table.error
                else:
                    broken.append(table)
        names = [table.name for table in (*self._tables.values(), *built)]
        if clashes := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"export tables built twice under one name: {', '.join(clashes)}")
        return [*self._tables.values(), *built]

    def of_service(self, service: str) -> Registry:
        """The tables and families registered for one service, as a registry of their own."""
        mine = Registry()
        for table in self._tables.values():
            if table.service == service:
                mine.add_table(table)
        for family in self._families.values():
            if family.service == service:
                mine._families[family.name] = family
        return mine

    @classmethod
    def of(cls, items: Iterable[Table | Family]) -> Registry:
        """A registry of these tables and families, in their order (a name twice: ValueError)."""
        registry = cls()
        for item in items:
            if isinstance(item, Family):
                registry.add_family(item.name, item.build, doc=item.doc, service=item.service)
            else:
                registry.add_table(item)
        return registry

    @classmethod
    def joined(cls, registries: Iterable[Registry]) -> Registry:
        """One registry of every table and family of `registries` (a name twice: ValueError)."""
        every = cls()
        for registry in registries:
            for table in registry.tables:
                every.add_table(table)
            for family in registry.families:
                every.add_family(family.name, family.build, doc=family.doc, service=family.service)
        return every
