"""One table into one file, a chunk of rows at a time: CSV, Parquet or XLSX.

A writer takes rows as tuples of typed values in the table's column order (see `tables`),
never the whole table: memory stays at one chunk whatever the size of the store.

- CSV: UTF-8, a header row, `,` and `"` quoting; empty for no value; timestamps ISO-8601 in
  UTC (`2024-05-01T12:00:00.000000+00:00`), booleans `true`/`false`, JSON as its text.
- Parquet: a pyarrow schema from the column types (timestamp[us, tz=UTC], int64, double,
  bool, date32, string); each column's meaning in its field metadata; a row group per chunk.
- XLSX: openpyxl in write-only mode (rows stream to disk); one sheet named after the table
  with a header row, continued on `<name> (2)`, ... past Excel's 1 048 576 rows. Excel has no
  time zones: timestamps are written in UTC without one. Text longer than a cell holds
  (32 767 characters) is cut, and characters XML forbids are dropped.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq
from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from haul.pipelines.export.tables import ColumnType, Table

FORMATS = ("csv", "parquet", "xlsx")
EXCEL_MAX_ROWS = 1_048_576  # the header row included
EXCEL_MAX_TEXT = 32_767

Rows = Sequence[tuple[Any, ...]]


class TableWriter(Protocol):
    """Writes one table's rows to one open file; `close` finishes the file."""

    def write(self, rows: Rows) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None:
        """Let go of the file after a failure (the caller removes it)."""
        ...


def open_writer(fmt: str, path: Path, table: Table) -> TableWriter:
    """A writer of `table` into a new file at `path`, in format `fmt` (one of FORMATS)."""
    if fmt == "csv":
        return CsvWriter(path, table)
    if fmt == "parquet":
        return ParquetWriter(path, table)
    if fmt == "xlsx":
        return XlsxWriter(path, table)
    raise ValueError(f"unknown export format {fmt!r}: one of {', '.join(FORMATS)}")


class CsvWriter:
    """UTF-8 CSV with a header row."""

    def __init__(self, path: Path, table: Table) -> None:
        self._file = path.open("x", encoding="utf-8", newline="")
        self._csv = csv.writer(self._file)
        self._csv.writerow([column.name for column in table.all_columns])

    def write(self, rows: Rows) -> None:
        self._csv.writerows([[_csv_text(cell) for cell in row] for row in rows])

    def close(self) -> None:
        self._file.close()

    def abort(self) -> None:
        with suppress(OSError):  # the file is being thrown away: a failing flush changes nothing
            self._file.close()


def _csv_text(cell: Any) -> Any:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, datetime):
        return cell.isoformat(timespec="microseconds")
    if isinstance(cell, date):
        return cell.isoformat()
    return cell


ARROW_TYPES: dict[ColumnType, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "json": pa.string(),
}


def arrow_schema(table: Table) -> pa.Schema:
    """The Parquet schema of `table`: one typed, nullable field per column, with its meaning."""
    return pa.schema(
        [
            pa.field(
                column.name,
                ARROW_TYPES[column.type],
                metadata={"doc": column.doc, "haul_type": column.type},
            )
            for column in table.all_columns
        ],
        metadata={"table": table.name, "entity": table.entity},
    )


class ParquetWriter:
    """Parquet with the table's own schema, a row group per chunk."""

    def __init__(self, path: Path, table: Table) -> None:
        self._schema = arrow_schema(table)
        path.touch(exist_ok=False)  # like the other formats: never over an existing file
        self._writer = pq.ParquetWriter(path, self._schema)
        self._width = len(table.all_columns)

    def write(self, rows: Rows) -> None:
        if not rows:
            return
        columns = [[row[index] for row in rows] for index in range(self._width)]
        batch = pa.Table.from_arrays(
            [
                pa.array(data, type=field.type)
                for data, field in zip(columns, self._schema, strict=True)
            ],
            schema=self._schema,
        )
        self._writer.write_table(batch)

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        with suppress(OSError, pa.ArrowException):  # thrown away: its footer does not matter
            self._writer.close()


class XlsxWriter:
    """A write-only workbook: one sheet with a header row, continued past Excel's row limit."""

    def __init__(self, path: Path, table: Table, max_rows: int = EXCEL_MAX_ROWS) -> None:
        path.touch(exist_ok=False)
        self._path = path
        self._book = Workbook(write_only=True)
        self._title = sheet_title(table.name)
        self._header = [column.name for column in table.all_columns]
        self._max_rows = max_rows
        self._sheets = 0
        self._new_sheet()

    def _new_sheet(self) -> None:
        self._sheets += 1
        suffix = "" if self._sheets == 1 else f" ({self._sheets})"
        self._sheet = self._book.create_sheet(self._title[: 31 - len(suffix)] + suffix)
        self._sheet.append(self._header)
        self._filled = 1

    def write(self, rows: Rows) -> None:
        for row in rows:
            if self._filled >= self._max_rows:
                self._new_sheet()
            self._sheet.append([_xlsx_cell(cell) for cell in row])
            self._filled += 1

    def close(self) -> None:
        self._book.save(self._path)

    def abort(self) -> None:
        """Nothing is open: openpyxl removes its sheets' temporary files when haul exits."""


def sheet_title(name: str) -> str:
    """A valid sheet name for `name`: at most 31 characters, none of []:*?/\\."""
    cleaned = "".join("_" if char in "[]:*?/\\" else char for char in name).strip("'")
    return cleaned[:31] or "table"


def _xlsx_cell(cell: Any) -> Any:
    if isinstance(cell, datetime):
        return cell.astimezone(UTC).replace(tzinfo=None)
    if isinstance(cell, str):
        return ILLEGAL_CHARACTERS_RE.sub("", cell)[:EXCEL_MAX_TEXT]
    return cell
