"""`haul.duckdb`: every table of one export in one DuckDB database, so an analyst opens one
file (`duckdb exports/latest/haul.duckdb`, then `FROM status_intervals`).

The database is filled from the rows as they are written to the files, not read back from
the files: the store is read once, and the result is the same whatever the format (CSV loses
types, XLSX is slow to read). Column types follow the table's (`VARCHAR`, `BIGINT`,
`DOUBLE`, `BOOLEAN`, `TIMESTAMPTZ` in UTC, `DATE`; JSON as text), and each table and column
carries its meaning as a comment (`SELECT * FROM duckdb_columns()`).

It is written under a temporary name in the export's folder (itself still temporary) and
renamed when closed; DuckDB is single-threaded here and capped in memory, so the export's
peak stays at a few chunks of rows.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb

from haul.pipelines.export.tables import ColumnType, Table
from haul.pipelines.export.writers import Rows, arrow_rows, arrow_schema

DATABASE = "haul.duckdb"
MEMORY_LIMIT = "32MB"
DUCK_TYPES: dict[ColumnType, str] = {
    "string": "VARCHAR",
    "int": "BIGINT",
    "float": "DOUBLE",
    "bool": "BOOLEAN",
    "timestamp": "TIMESTAMPTZ",
    "date": "DATE",
    "json": "VARCHAR",
}


def quoted(name: str) -> str:
    """`name` as a DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def column_names(names: list[str]) -> list[str]:
    """`names` made distinct as DuckDB compares them (regardless of case): a later `Name`
    beside `name` becomes `Name_2` (a survey's or a grid's columns are the users' slugs)."""
    seen: set[str] = set()
    distinct = []
    for name in names:
        chosen, count = name, 1
        while chosen.lower() in seen:
            count += 1
            chosen = f"{name}_{count}"
        seen.add(chosen.lower())
        distinct.append(chosen)
    return distinct


class DuckTable:
    """Appends one table's rows to the database, a chunk at a time."""

    def __init__(self, db: duckdb.DuckDBPyConnection, table: Table) -> None:
        self._db = db
        self._name = quoted(table.name)
        self._schema = arrow_schema(table)
        self.rows = 0
        names = column_names([column.name for column in table.all_columns])
        columns = ", ".join(
            f"{quoted(name)} {DUCK_TYPES[column.type]}"
            for name, column in zip(names, table.all_columns, strict=True)
        )
        db.execute(f"CREATE TABLE {self._name} ({columns})")
        db.execute(f"COMMENT ON TABLE {self._name} IS {_literal(table.doc)}")
        for name, column in zip(names, table.all_columns, strict=True):
            db.execute(f"COMMENT ON COLUMN {self._name}.{quoted(name)} IS {_literal(column.doc)}")

    def write(self, rows: Rows) -> None:
        """Append `rows` (tuples in the table's column order)."""
        if not rows:
            return
        batch = arrow_rows(self._schema, rows)
        self._db.register("haul_batch", batch)
        try:
            self._db.execute(f"INSERT INTO {self._name} SELECT * FROM haul_batch")
        finally:
            self._db.unregister("haul_batch")
        self.rows += len(rows)


class DuckDatabase:
    """The export's database: `table(t)` for each table written, then closed and renamed."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db
        self.tables: dict[str, DuckTable] = {}

    def table(self, table: Table) -> DuckTable:
        """A new table in the database, shaped like `table`."""
        self.tables[table.name] = DuckTable(self._db, table)
        return self.tables[table.name]

    def drop(self, table: Table) -> None:
        """Remove `table` (one that failed half-way), if it was made."""
        if self.tables.pop(table.name, None) is not None:
            self._db.execute(f"DROP TABLE IF EXISTS {quoted(table.name)}")

    def row_counts(self) -> dict[str, int]:
        """Table -> the rows written to it."""
        return {name: table.rows for name, table in self.tables.items()}


@contextmanager
def database(path: Path) -> Iterator[DuckDatabase]:
    """A new DuckDB database that appears at `path` only when the block ends well."""
    partial = path.with_name(f".{path.name}.part")
    try:
        db = duckdb.connect(str(partial))
    except duckdb.Error as exc:
        raise as_os_error(exc, partial) from exc
    try:
        db.execute("SET threads = 1")  # one writer, rows in the order given
        db.execute(f"SET memory_limit = {_literal(MEMORY_LIMIT)}")
        db.execute("SET TimeZone = 'UTC'")
        yield DuckDatabase(db)
        db.execute("CHECKPOINT")
        db.close()
        os.replace(partial, path)
    except BaseException as exc:
        _discard(db, partial)
        if isinstance(exc, duckdb.Error):
            raise as_os_error(exc, partial) from exc
        raise


def _discard(db: duckdb.DuckDBPyConnection, partial: Path) -> None:
    with suppress(duckdb.Error):  # it is being thrown away: a failing final write changes nothing
        db.close()
    for leftover in (partial, partial.with_name(partial.name + ".wal")):
        leftover.unlink(missing_ok=True)


_CAUSES = (
    ("no space left", errno.ENOSPC),
    ("file too large", errno.EFBIG),
    ("permission denied", errno.EACCES),
    ("read-only file system", errno.EROFS),
)


def as_os_error(exc: duckdb.Error, path: Path) -> OSError:
    """DuckDB's failure to write its file as the OSError the export reports (exit 1)."""
    text = str(exc)
    code = next((code for cause, code in _CAUSES if cause in text.lower()), errno.EIO)
    return OSError(code, f"{os.strerror(code)} (DuckDB: {text})", str(path))


def table_rows(path: Path) -> dict[str, Any]:
    """Table -> row count of a DuckDB database (read-only): what an analyst would find."""
    with duckdb.connect(str(path), read_only=True) as db:
        names = [row[0] for row in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return {
            name: db.execute(f"SELECT count(*) FROM {quoted(name)}").fetchone()[0]  # type: ignore[index]
            for name in names
        }
