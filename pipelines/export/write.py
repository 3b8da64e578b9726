"""Writing one exported table: its file (or monthly Parquet files) and its rows in the
export's database, a chunk at a time, the file appearing only complete (see `layout`)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pyarrow as pa
import structlog

from haul.pipelines.export import duck, layout
from haul.pipelines.export.errors import stops_every_table
from haul.pipelines.export.tables import (
    ExportContext,
    Table,
    flatten,
    flatten_derived,
    whole_record,
)
from haul.pipelines.export.values import parse_timestamp
from haul.pipelines.export.writers import MonthlyParquetWriter, TableWriter, open_writer
from haul.pipelines.progress import Progress

log = structlog.get_logger(__name__)

Row = tuple[Any, ...]


class FileOptions(Protocol):
    """How an export writes its files (`command.ExportRequest` is one)."""

    @property
    def format(self) -> str: ...

    @property
    def partition(self) -> str | None: ...

    @property
    def chunk_rows(self) -> int: ...


@dataclass(frozen=True)
class ExportedFile:
    """One file of an export, as the manifest lists it."""

    file: str
    table: str
    entity: str
    format: str
    rows: int
    bytes: int
    sha256: str


@dataclass
class TableWritten:
    """What writing one table left: its files, and its rows' digest (any format's)."""

    files: list[ExportedFile]
    rows: int
    rows_sha256: str


@dataclass
class WrittenTables:
    """Every table an export wrote, in order; the tables left out whole as restricted (by
    entity: their names are restricted too), and those that failed, with why."""

    tables: dict[str, TableWritten] = field(default_factory=dict)
    withheld: dict[str, dict[str, int]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def add(self, table: Table, written: TableWritten) -> None:
        """Note what writing `table` left."""
        self.tables[table.name] = written

    def withhold(self, table: Table, rows: int) -> None:
        """Note `table` left out whole, with the rows it had."""
        entry = self.withheld.setdefault(table.entity, {"tables": 0, "rows": 0})
        entry["tables"] += 1
        entry["rows"] += rows

    @property
    def files(self) -> list[ExportedFile]:
        """Every file, table by table."""
        return [file for written in self.tables.values() for file in written.files]


class TableFailure(Exception):
    """One table could not be written: nothing of it was kept (file or database table)."""

    def __init__(self, table: Table, cause: BaseException) -> None:
        self.reason = f"{type(cause).__name__}: {cause}"
        super().__init__(f"table {table.name}: {self.reason}")


# what one table's rows or file can fail with (a value pyarrow or DuckDB refuses, a name the
# file system refuses); anything else is a fault of haul's and stops the export
TABLE_ERRORS = (
    OSError, ValueError, TypeError, KeyError, ArithmeticError, pa.ArrowException, duckdb.Error,
)  # fmt: skip


def write_table(
    table: Table,
    folder: Path,
    request: FileOptions,
    since: tuple[str | None, bool],
    context: ExportContext,
    progress: Progress,
    database: duck.DuckDatabase,
) -> TableWritten:
    """One table into `folder` (`<table>.<format>`, or a folder of monthly Parquet files),
    a chunk at a time, appearing only complete; and into the export's database.
    TableFailure when it cannot be, with neither its file nor its database table left."""
    try:
        return _write_table(table, folder, request, since, context, progress, database)
    except TABLE_ERRORS as exc:
        as_os = duck.as_os_error(exc, folder) if isinstance(exc, duckdb.Error) else exc
        if stops_every_table(as_os):  # a full disk: no other table would do better
            raise as_os from exc
        database.drop(table)
        raise TableFailure(table, exc) from exc


def count_rows(table: Table, since: tuple[str | None, bool], context: ExportContext) -> int:
    """The rows `table` holds `since`, read but not written (a table left out whole)."""
    rows, keep, _ = table_rows(table, since, context)
    read = sum(1 for row in rows if keep is None or keep(row))  # rows its records did not hold back
    return read + context.left_out.pop(table.name, 0)  # counted as a whole table, not by name


def _write_table(
    table: Table,
    folder: Path,
    request: FileOptions,
    since: tuple[str | None, bool],
    context: ExportContext,
    progress: Progress,
    database: duck.DuckDatabase,
) -> TableWritten:
    rows, keep, total = table_rows(table, since, context)
    task = progress.task(f"{table.name} exported", total)
    in_database = database.table(table)
    digest, count = hashlib.sha256(), 0
    with table_files(table, folder, request) as (writer, files):
        for chunk in chunked(rows, request.chunk_rows):
            in_database.write(chunk)
            kept = chunk if keep is None else [row for row in chunk if keep(row)]
            writer.write(kept)
            for row in kept:
                digest.update(repr(row).encode("utf-8"))
            count += len(kept)
            progress.advance(task, len(chunk))
    log.info("table_exported", table=table.name, rows=count)
    exported = [
        ExportedFile(
            path.relative_to(folder).as_posix(),
            table.name,
            table.entity,
            request.format,
            rows,
            path.stat().st_size,
            layout.sha256_of(path),
        )
        for path, rows in files.items()
    ]
    return TableWritten(exported, count, digest.hexdigest())


def table_rows(
    table: Table, since: tuple[str | None, bool], context: ExportContext
) -> tuple[Iterator[Row], Callable[[Row], bool] | None, int | None]:
    """The rows of `table`, which of them its file keeps (None: all), and their number if
    known. Every table's rows are all read, so the export's database is whole as of the
    export (an analyst joins `cycle_times` to `issues` in any night's file); under `since`
    its file keeps the rows staged since (`staged_at`, every row's last cell)."""
    bound, inclusive = since
    keep = _kept_since(parse_timestamp(bound) if bound else None, inclusive)
    if table.derive is not None:
        return flatten_derived(table, context), keep, None
    store = context.store
    total = None
    if table.items is whole_record:
        total = store.count_changed(table.entity, parent=table.parent)
    records = store.iter_records(table.entity, parent=table.parent)
    return flatten(table, records, context), keep, total


def _kept_since(moment: datetime | None, inclusive: bool) -> Callable[[Row], bool] | None:
    """Which rows a `--since` file keeps: staged at or after `moment` (after, when not
    `inclusive`); None without a bound (all of them)."""
    if moment is None:
        return None
    if inclusive:
        return lambda row: row[-1] is not None and row[-1] >= moment
    return lambda row: row[-1] is not None and row[-1] > moment


@contextmanager
def table_files(
    table: Table, folder: Path, request: FileOptions
) -> Iterator[tuple[TableWriter, dict[Path, int]]]:
    """The writer of `table`'s file (or monthly files), and, once closed, each file written
    with its rows."""
    files: dict[Path, int] = {}
    if request.partition == "month" and table.partition_by is not None:
        monthly = MonthlyParquetWriter(folder, table, request.chunk_rows)
        try:
            yield monthly, files
            monthly.close()
        except BaseException:
            monthly.abort()
            shutil.rmtree(monthly.root, ignore_errors=True)  # the others' files stay: not its
            raise
        files.update(sorted(monthly.rows.items()))
        return
    final = folder / layout.file_name(table.name, f".{request.format}")
    with layout.atomic_file(final) as partial:
        writer = open_writer(request.format, partial, table)
        counting = _Counting(writer)
        try:
            yield counting, files
        except BaseException:
            writer.abort()
            raise
        writer.close()
    files[final] = counting.rows


class _Counting:
    """A writer that counts the rows it passes on."""

    def __init__(self, writer: TableWriter) -> None:
        self._writer = writer
        self.rows = 0

    def write(self, rows: Any) -> None:
        self._writer.write(rows)
        self.rows += len(rows)

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        self._writer.abort()


def chunked(rows: Iterable[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    """`rows` in lists of at most `size`."""
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk
