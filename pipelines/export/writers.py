"""One table into one file, a chunk of rows at a time: CSV, Parquet or XLSX.

A writer takes rows as tuples of typed values in the table's column order (see `tables`),
never the whole table: memory stays at one chunk whatever the size of the store.

- CSV: UTF-8, a header row, `,` and `"` quoting; empty for no value; timestamps ISO-8601 in
  UTC (`2024-05-01T12:00:00.000000+00:00`), booleans `true`/`false`, JSON as its text. Text
  a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage
  return: OWASP's CSV injection list) gets a leading `'`; a number, and text that is just a
  number (`-5`), is written as it is.
- Parquet: a pyarrow schema from the column types (timestamp[us, tz=UTC], int64, double,
  bool, date32, string); each column's meaning in its field metadata; a row group per chunk.
- XLSX: openpyxl in write-only mode (rows stream to disk); one sheet named after the table
  with a header row, continued on `<name> (2)`, ... past Excel's 1 048 576 rows. Excel has no
  time zones: timestamps are written in UTC without one. Text longer than a cell holds
  (32 767 characters) is cut, and characters XML forbids are dropped. Text is always a text
  cell, never a formula, whatever it starts with (openpyxl would make `=...` one).

Parquet and the DuckDB file keep text as it is: they are read by programs, not opened as
spreadsheets.
"""

from __future__ import annotations

import csv
import re
import shutil
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Protocol
from zipfile import ZIP_DEFLATED, ZipFile, ZipInfo

import pyarrow as pa
import pyarrow.parquet as pq
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.writer.excel import ExcelWriter

from haul.pipelines.export.layout import file_name
from haul.pipelines.export.tables import ColumnType, Table

FORMATS = ("csv", "parquet", "xlsx")
EXCEL_MAX_ROWS = 1_048_576  # the header row included
EXCEL_MAX_TEXT = 32_767

Rows = Sequence[tuple[Any, ...]]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may run (OWASP)
PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


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


def may_run(text: str) -> bool:
    """Whether a spreadsheet could take `text` for a formula (`=SUM(A1)`, `@cmd`, `-1+2`):
    it starts with one of FORMULA_STARTS and is not simply a number (`-5`, `+1.5`)."""
    return text.startswith(FORMULA_STARTS) and PLAIN_NUMBER.fullmatch(text) is None


def _csv_text(cell: Any) -> Any:
    if cell is None:
        return ""
    if isinstance(cell, str):
        return "'" + cell if may_run(cell) else cell
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


def arrow_rows(schema: pa.Schema, rows: Rows) -> pa.Table:
    """`rows` (tuples in the schema's column order) as an Arrow table of that schema."""
    columns = [[row[index] for row in rows] for index in range(len(schema))]
    return pa.Table.from_arrays(
        [pa.array(data, type=field.type) for data, field in zip(columns, schema, strict=True)],
        schema=schema,
    )


class ParquetWriter:
    """Parquet with the table's own schema, a row group per chunk."""

    def __init__(self, path: Path, table: Table) -> None:
        self._schema = arrow_schema(table)
        path.touch(exist_ok=False)  # like the other formats: never over an existing file
        self._writer = pq.ParquetWriter(path, self._schema)

    def write(self, rows: Rows) -> None:
        if rows:
            self._writer.write_table(arrow_rows(self._schema, rows))

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        with suppress(OSError, pa.ArrowException):  # thrown away: its footer does not matter
            self._writer.close()


NO_MONTH = "__HIVE_DEFAULT_PARTITION__"  # Hive's name for an empty partition value


def month_of(cell: Any) -> str:
    """The `YYYY-MM` of a timestamp (in UTC) or date cell; Hive's default name for none."""
    if isinstance(cell, datetime):
        cell = cell.astimezone(UTC)
    return cell.strftime("%Y-%m") if isinstance(cell, date) else NO_MONTH


class MonthlyParquetWriter:
    """Parquet split Hive-style by the month of the table's `partition_by` column:
    `<folder>/<table>/month=2024-05/part-0.parquet`, every column kept in each file.

    Rows arrive in the table's order, not by month: each month's rows wait in a buffer that
    is written as a row group when it fills, and the fullest buffers are written early so
    that at most two chunks of rows wait in all. One file per month is open at a time.
    """

    def __init__(self, folder: Path, table: Table, chunk_rows: int) -> None:
        if table.partition_by is None:
            raise ValueError(f"table {table.name} has no column to partition by")
        self.root = folder / file_name(table.name, "")
        self.root.mkdir()
        self._schema = arrow_schema(table)
        self._column = [column.name for column in table.all_columns].index(table.partition_by)
        self._chunk = max(1, chunk_rows)
        self._buffers: dict[str, list[tuple[Any, ...]]] = {}
        self._waiting = 0
        self._writers: dict[str, pq.ParquetWriter] = {}
        self.rows: dict[Path, int] = {}

    def write(self, rows: Rows) -> None:
        for row in rows:
            self._buffers.setdefault(month_of(row[self._column]), []).append(row)
        self._waiting += len(rows)
        for month in [month for month, rows in self._buffers.items() if len(rows) >= self._chunk]:
            self._flush(month)
        while self._waiting > 2 * self._chunk:
            self._flush(max(self._buffers, key=lambda month: len(self._buffers[month])))

    def _flush(self, month: str) -> None:
        rows = self._buffers.pop(month)
        self._waiting -= len(rows)
        path = self.root / f"month={month}" / "part-0.parquet"
        if month not in self._writers:
            path.parent.mkdir()
            self._writers[month] = pq.ParquetWriter(path, self._schema)
        self._writers[month].write_table(arrow_rows(self._schema, rows))
        self.rows[path] = self.rows.get(path, 0) + len(rows)

    def close(self) -> None:
        for month in sorted(self._buffers):
            self._flush(month)
        for writer in self._writers.values():
            writer.close()

    def abort(self) -> None:
        for writer in self._writers.values():
            with suppress(OSError, pa.ArrowException):  # thrown away with its folder
                writer.close()


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
            self._sheet.append([self._cell(cell) for cell in row])
            self._filled += 1

    def _cell(self, cell: Any) -> Any:
        """The value to append; text a spreadsheet would run is a text cell, kept exact."""
        value = _xlsx_cell(cell)
        if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
            return value
        text = WriteOnlyCell(self._sheet, value=value)
        text.data_type = "s"  # openpyxl makes a text starting with "=" a formula
        return text

    def close(self) -> None:
        # openpyxl's own save stamps the workbook and each zip entry with the time: without
        # them, the same rows make the same bytes
        self._book.properties.created = self._book.properties.modified = SteadyZip.MOMENT
        book = SteadyZip(self._path, "w", ZIP_DEFLATED, allowZip64=True)
        try:
            ExcelWriter(self._book, book).save()
        except BaseException:  # a full disk, say: the file is thrown away
            with suppress(OSError, ValueError):  # closed now, not by the collector, loudly
                book.close()
            self.abort()
            raise

    def abort(self) -> None:
        """Close each sheet not yet saved: left open, its rows' writer would be closed as the
        interpreter ends, after openpyxl closed its temporary file, and print a traceback
        under the export's last line. openpyxl removes those files when haul exits."""
        for sheet in self._book.worksheets:
            if not sheet.closed:
                with suppress(OSError, ValueError):  # thrown away: its tail does not matter
                    sheet.close()


class SteadyZip(ZipFile):
    """A zip file whose entries carry one fixed time and mode, whenever they were written."""

    WHEN = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry holds
    MOMENT = datetime(*WHEN)  # the workbook's own created and modified properties

    def _entry(self, name: str) -> ZipInfo:
        info = ZipInfo(name, date_time=self.WHEN)
        info.compress_type = self.compression
        info.external_attr = 0o600 << 16
        return info

    def writestr(self, zinfo_or_arcname: Any, data: Any, *args: Any, **kwargs: Any) -> None:
        """As ZipFile's, the entry's time and mode fixed."""
        if not isinstance(zinfo_or_arcname, ZipInfo):
            zinfo_or_arcname = self._entry(zinfo_or_arcname)
        super().writestr(zinfo_or_arcname, data, *args, **kwargs)

    def write(self, filename: Any, arcname: Any = None, *args: Any, **kwargs: Any) -> None:
        """A file's bytes as an entry (streamed), its time and mode fixed."""
        with open(filename, "rb") as source, self.open(self._entry(str(arcname)), "w") as entry:
            shutil.copyfileobj(source, entry, 1 << 20)


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
