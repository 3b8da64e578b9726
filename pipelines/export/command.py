"""`haul export`: every staged table (or those `--entities` names) into a new dated folder.

The staging store is opened read-only and read as of one instant (a concurrent extract does
not tear the export). Each table streams from the store to its file a chunk of rows at a
time. `since` keeps the records staged (new or changed) at or after an instant; `"last"`
keeps those staged after the watermark of the previous export in the same folder (the newest
`staged_at` it saw), so a nightly export after an incremental extract carries only what
changed. A failed write leaves neither a file nor a folder behind (see `layout`).

Restricted content (see `tables`) is left out unless `[export] restricted = "include"`: the
rows left out are counted per table in the manifest's `restricted` part and in the summary; a
table restricted as a whole (a grid on a restricted page) is counted under its entity, its name
unsaid. One table that cannot be written (its rows, its file) does not stop the others: it is
named in the manifest's `failed` and the summary, and the command exits 3. What stops every
table (a full disk, a folder haul may not write) stops the export, nothing kept.

Derived tables (the tracker's flow model) are computed as of `model_as_of`: the instant the
staged data describes (the end of the last extract, or the newest staging), never the
export's own clock, so exporting the same store twice writes the same bytes. Each table's
rows also go into the folder's `haul.duckdb` (see `duck`); under `--since` a derived table's
file keeps the rows of the subjects that moved, while the database keeps the whole model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import httpx
import structlog
from rich.console import Console
from rich.table import Table as RichTable

from haul.connectors.errors import StorageError
from haul.pipelines.config import Config, Export
from haul.pipelines.config.types import http_url
from haul.pipelines.export import duck, layout, pages
from haul.pipelines.export.errors import ExportOptionError, ExportWriteError
from haul.pipelines.export.id_map import ANY_ENTITY, ID_MAP
from haul.pipelines.export.tables import (
    BrokenTable,
    ExportContext,
    Registry,
    Table,
)
from haul.pipelines.export.values import parse_timestamp
from haul.pipelines.export.write import (
    ExportedFile,
    TableFailure,
    WrittenTables,
    count_rows,
    write_table,
)
from haul.pipelines.export.writers import FORMATS
from haul.pipelines.progress import Progress
from haul.pipelines.services import Service
from haul.pipelines.streams import not_staged
from haul.state.errors import StoreError, store_errors
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

CHUNK_ROWS = 5_000
PARTITIONS = ("month",)
HEALTHCHECK_TIMEOUT_S = 10.0
EXTRACTING_COMMANDS = ("extract", "run")  # the runs whose staging an export carries


@dataclass(frozen=True)
class ExportRequest:
    """What to export and where: the command's options over the config's `[export]`."""

    out: Path
    format: str = "csv"
    entities: tuple[str, ...] = ()
    since: str | None = None  # None, "last", or a date or instant
    keep: int | None = None
    healthcheck_url: str | None = None
    chunk_rows: int = CHUNK_ROWS
    partition: str | None = None  # "month": the large tables' Parquet split by month
    settings: Export = field(default_factory=Export)  # the config's [export] (the model's)

    @classmethod
    def from_options(
        cls,
        config: Config,
        *,
        out: Path | None = None,
        fmt: str | None = None,
        entities: str | None = None,
        since: str | None = None,
        keep: int | None = None,
        healthcheck_url: str | None = None,
        partition: str | None = None,
    ) -> ExportRequest:
        """The options given, else the config's `[export]` defaults; ExportOptionError (exit 2)
        for what cannot be used."""
        defaults = config.export
        out = out or (defaults.out if defaults else None) or config.folder / "exports"
        fmt = fmt or (defaults.format if defaults else "csv")
        if fmt not in FORMATS:
            raise ExportOptionError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
        url = healthcheck_url or (defaults.healthcheck_url if defaults else None)
        if url is not None:
            try:
                url = http_url(url)
            except ValueError as exc:
                raise ExportOptionError(f"--healthcheck-url: {exc}") from None
        if since is not None and since != "last":
            since_instant(since)  # refused here, before anything is opened
        if partition is not None and partition not in PARTITIONS:
            raise ExportOptionError(
                f"--partition: {partition!r} is not one of {', '.join(PARTITIONS)}"
            )
        if partition is not None and fmt != "parquet":
            raise ExportOptionError(f"--partition {partition}: only with --format parquet")
        names = tuple(name.strip() for name in (entities or "").split(",") if name.strip())
        return cls(
            out=out.resolve(),
            format=fmt,
            entities=names,
            since=since,
            keep=keep if keep is not None else (defaults.keep if defaults else None),
            healthcheck_url=url,
            partition=partition,
            settings=defaults or Export(),
        )


@dataclass
class ExportResult:
    """What an export wrote, and what the person should know about it."""

    folder: Path
    files: list[ExportedFile]
    manifest: dict[str, Any]
    pruned: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> dict[str, str]:
        """Table (or, for one a family could not build, its grid or survey) -> why it is missing."""
        failed: dict[str, str] = self.manifest.get("failed") or {}
        return failed

    @property
    def exit_code(self) -> int:
        """0, or 3 when a table could not be written (the others were)."""
        return 3 if self.failed else 0

    @property
    def rows(self) -> int:
        return sum(file.rows for file in self.files)

    @property
    def bytes(self) -> int:
        return sum(file.bytes for file in self.files)


def service_tables(services: Sequence[Service]) -> Registry:
    """Every service's export tables (`Service.tables`), then the key map (`id_map`: it spans
    the services), in one registry."""
    return Registry.joined([*(service.tables for service in services), Registry.of([ID_MAP])])


def run_export(
    config: Config,
    request: ExportRequest,
    *,
    services: Sequence[Service],
    progress: Progress | None = None,
    now: datetime | None = None,
) -> ExportResult:
    """Write the export `request` asks for; see the module's docstring."""
    progress = progress or Progress()
    now = now or datetime.now(UTC)
    path = config.staging_path
    if not path.is_file():
        raise ExportOptionError(
            f"nothing staged yet: {path} does not exist (run haul extract first)"
        )
    registry = service_tables(services)
    drawn = [page for service in services for page in service.pages]
    try:
        with StagingStore.open_readonly(path) as store, store_errors(path), store.snapshot():
            return _export(store, registry, drawn, request, progress, now, config)
    except StoreError as exc:
        raise StorageError(str(exc)) from exc


def _export(
    store: StagingStore,
    registry: Registry,
    drawn_pages: Sequence[pages.Page],
    request: ExportRequest,
    progress: Progress,
    now: datetime,
    config: Config | None = None,
) -> ExportResult:
    failed: dict[str, str] = {}
    tables = chosen_tables(store, registry, request.entities, failed)
    if problems := settings_problems(tables, ExportContext(store, config=config)):
        raise ExportOptionError(f"config error: {'; '.join(problems)}: correct the config")
    warnings = not_staged_warnings(store, registry, request.entities)
    out = request.out
    try:
        with layout.locked(out):
            layout.sweep(out)
            since, inclusive = _since_filter(request.since, out, tables, warnings)
            with layout.building(out) as folder:
                as_of = model_as_of(store, now)
                context = ExportContext(
                    store, as_of=as_of, settings=request.settings, config=config
                )
                written = WrittenTables(failed=failed)
                with duck.database(folder / duck.DATABASE) as database:
                    for table in tables:
                        _write_one(table, folder, request, (since, inclusive), context,
                                   progress, database, written)  # fmt: skip
                files = written.files
                drawn = pages.write_pages(folder, folder / duck.DATABASE, drawn_pages)
                manifest = _manifest(store, request, written, since, inclusive, now)
                manifest["pages"] = drawn
                manifest["restricted"] = _restricted_entry(request, context, written)
                manifest["failed"] = written.failed  # table or family -> why it is missing
                manifest["model_as_of"] = as_of.isoformat(timespec="milliseconds")
                manifest["duckdb"] = _duck_entry(folder / duck.DATABASE, database)
                layout.write_json(folder / layout.MANIFEST, manifest)
                final = layout.publish(out, folder, now)
            pruned = layout.prune(out, request.keep) if request.keep else []
    except OSError as exc:
        raise ExportWriteError.from_os_error(exc, out) from exc
    log.info(
        "export_finished", folder=str(final), files=len(files), rows=sum(f.rows for f in files)
    )
    result = ExportResult(final, files, manifest, pruned, warnings)
    if request.healthcheck_url:
        result.warnings += ping(request.healthcheck_url)
    return result


def _write_one(
    table: Table,
    folder: Path,
    request: ExportRequest,
    since: tuple[str | None, bool],
    context: ExportContext,
    progress: Progress,
    database: duck.DuckDatabase,
    written: WrittenTables,
) -> None:
    """Write one table into `written`, or note why it could not be: left out whole when it is
    restricted content the export excludes; failed (the others go on) when its rows or its
    file cannot be written (what would stop every table is raised by `write_table`)."""
    if table.restriction is not None and not context.includes_restricted:
        written.withhold(table, count_rows(table, since, context))
        return
    try:
        written.add(table, write_table(table, folder, request, since, context, progress, database))
    except TableFailure as failure:
        log.warning("table_failed", table=table.name, error=failure.reason)
        written.failed[table.name] = failure.reason


def chosen_tables(
    store: StagingStore,
    registry: Registry,
    names: Iterable[str],
    failed: dict[str, str] | None = None,
) -> list[Table]:
    """The tables to write: those `names` choose (table or entity names; all when empty)
    whose entity has staged records. ExportOptionError for a name no table has. A table a
    family cannot build, among those chosen, is noted in `failed` (when given); one derived
    from what the config chose not to stage is not (`not_staged_warnings`)."""
    broken: list[BrokenTable] = []
    every = registry.tables_for(store, broken)
    wanted = set(names)
    for table in broken:
        if not wanted or wanted & {table.name, table.entity}:
            log.warning("table_not_built", table=table.name, error=table.reason)
            if failed is not None:
                failed[table.name] = table.reason
    known = {table.name for table in every} | {table.entity for table in every} - {ANY_ENTITY}
    if unknown := sorted(wanted - known):
        choices = ", ".join(sorted(known))
        raise ExportOptionError(
            f"--entities: no table or entity {', '.join(unknown)} (choose from {choices})"
        )
    staged = store.count_records()
    loaded = any(statuses.get("done") for statuses in store.ledger.counts().values())
    return [
        table
        for table in every
        if (staged.get(table.entity) or (table.entity == ANY_ENTITY and loaded))
        and (not wanted or wanted & {table.name, table.entity})
    ]


def settings_problems(tables: Iterable[Table], context: ExportContext) -> list[str]:
    """What the config tells the chosen tables that the staged data does not have (a typo
    in `[model]`), each named once: the export stops before it writes (exit 2) rather than
    write a model that silently measures nothing."""
    found: dict[str, None] = {}
    for table in tables:
        if table.settings_check is not None:
            found.update(dict.fromkeys(table.settings_check(context)))
    return list(found)


def not_staged_warnings(
    store: StagingStore, registry: Registry, names: Iterable[str] = ()
) -> list[str]:
    """A warning per entity the config had the last extract leave out (a migration's config
    skips the changelog), naming the setting that stages it and the chosen tables it leaves
    out: its own and those derived from it. The config chose so: not an error (exit 0)."""
    wanted = set(names)
    every = registry.tables_for(store, broken=[])  # a family's broken table: chosen_tables'
    warnings = []
    for entity, why in not_staged(store).items():
        absent = [
            table.name
            for table in every
            if table.entity == entity and (not wanted or wanted & {table.name, table.entity})
        ]
        if wanted and not absent:
            continue
        tables = f" ({', '.join(absent)})" if absent else ""
        warnings.append(
            f"{entity}: not staged by the last extract, as the config chose ({why}), so its "
            f"tables{tables} are left out or stale"
        )
    return warnings


def model_as_of(store: StagingStore, now: datetime) -> datetime:
    """The instant the staged data describes: the end of the last extract (or its start,
    if it never ended) or the newest staging, whichever is later; `now` for an empty store."""
    run = store.latest_run(*EXTRACTING_COMMANDS) or {}
    moments = [
        parse_timestamp(run.get("ended_at") or run.get("started_at")),
        parse_timestamp(store.newest_staged_at()),
    ]
    known = [moment for moment in moments if moment is not None]
    return max(known) if known else now


def since_instant(text: str) -> str:
    """A `--since` date (`2024-05-01`, midnight UTC) or instant (ISO-8601; UTC without a zone)
    in the store's own form, so it compares with `staged_at`; ExportOptionError otherwise."""
    moment = parse_timestamp(text)
    if moment is None:
        try:
            moment = datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        except ValueError:
            raise ExportOptionError(
                f"--since: {text!r} is not a date (2024-05-01), an instant "
                '(2024-05-01T06:00:00+03:00) or "last"'
            ) from None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def _since_filter(
    since: str | None, out: Path, tables: list[Table], warnings: list[str]
) -> tuple[str | None, bool]:
    """The staged_at bound and whether it is inclusive: a date or instant is (at or after);
    "last" is the previous export's watermark, exclusive (its rows were in that export)."""
    if since is None:
        return None, True
    if since != "last":
        return since_instant(since), True
    previous = layout.latest_manifest(out)
    if previous is None or not previous.get("watermark"):
        warnings.append(f"--since last: no earlier export in {out}, so everything was exported")
        return None, True
    before = {entry.get("table") for entry in previous.get("files") or []}
    missing = sorted(table.name for table in tables if table.name not in before)
    if previous.get("entities") and missing:  # left out by choice, not yet staged then
        warnings.append(
            f"--since last: the previous export had no {', '.join(missing)}: their rows "
            "staged before it are not in this one (export them once without --since)"
        )
    return str(previous["watermark"]), False


def _manifest(
    store: StagingStore,
    request: ExportRequest,
    written: WrittenTables,
    since: str | None,
    inclusive: bool,
    now: datetime,
) -> dict[str, Any]:
    """What the export holds; `tables` gives each table's rows and their digest, equal
    between two exports of the same data whatever the format (an XLSX file's own bytes hold
    the time it was saved)."""
    run = store.latest_run(*EXTRACTING_COMMANDS)
    return {
        "haul_version": haul_version(),
        "created_at": now.astimezone(UTC).isoformat(timespec="milliseconds"),
        "format": request.format,
        "store": str(store.path.resolve()),
        "run_id": run["id"] if run else None,
        "run": {key: run[key] for key in ("id", "command", "outcome", "started_at", "ended_at")}
        if run
        else None,
        "watermark": store.newest_staged_at(),
        "since": since,
        "since_inclusive": inclusive if since is not None else None,
        "entities": list(request.entities) or None,
        "partition": request.partition,
        "files": [asdict(file) for file in written.files],
        "tables": {
            name: {"rows": table.rows, "rows_sha256": table.rows_sha256}
            for name, table in written.tables.items()
        },
    }


def _restricted_entry(
    request: ExportRequest, context: ExportContext, written: WrittenTables
) -> dict[str, Any]:
    """The manifest's `restricted` part: the setting, the rows each table left out, and the
    tables left out whole, by entity (their names hold restricted titles)."""
    return {
        "mode": request.settings.restricted,
        "left_out": {name: rows for name, rows in sorted(context.left_out.items()) if rows},
        "tables_left_out": written.withheld,
    }


def _duck_entry(path: Path, database: duck.DuckDatabase) -> dict[str, Any]:
    """The manifest's entry for `haul.duckdb`: its bytes (not the same twice: DuckDB's file
    carries its own bookkeeping) and each table's rows (the whole model under --since)."""
    return {
        "file": path.name,
        "bytes": path.stat().st_size,
        "sha256": layout.sha256_of(path),
        "tables": database.row_counts(),
    }


def haul_version() -> str:
    """The installed haul's version."""
    try:
        return version("haul-etl")
    except PackageNotFoundError:
        return "unknown"


def ping(url: str, timeout: float = HEALTHCHECK_TIMEOUT_S) -> list[str]:
    """GET the health check URL; a failure is a warning (the export itself is done)."""
    try:
        reply = httpx.get(url, timeout=timeout, follow_redirects=True)
        reply.raise_for_status()
    except httpx.HTTPError as exc:
        # the URL's path is often the check's secret: name its host only
        host = httpx.URL(url).host
        log.warning("healthcheck_failed", host=host, error=f"{type(exc).__name__}: {exc}")
        return [
            f"the health check ping to {host} failed ({type(exc).__name__}); the export is complete"
        ]
    log.info("healthcheck_pinged", host=httpx.URL(url).host, status=reply.status_code)
    return []


def print_export(result: ExportResult, console: Console) -> None:
    """The summary table of an export: each file with its rows and bytes, then the totals."""
    summary = RichTable(title=f"haul export: {result.folder}")
    for name, justify in (("file", "left"), ("rows", "right"), ("bytes", "right")):
        summary.add_column(name, justify=justify)  # type: ignore[arg-type]
    for file in result.files:
        summary.add_row(file.file, f"{file.rows:,}", f"{file.bytes:,}")
    summary.add_row("total", f"{result.rows:,}", f"{result.bytes:,}", style="bold")
    console.print(summary)
    for line in restricted_lines(result.manifest.get("restricted") or {}):
        console.print(line, markup=False, highlight=False)
    for table, reason in result.failed.items():
        console.print(
            f"failed: {table}: {reason} (the other tables were written; exit 3)",
            markup=False,
            highlight=False,
        )
    if result.pruned:
        names = ", ".join(path.name for path in result.pruned)
        console.print(f"removed (--keep): {names}", markup=False, highlight=False)


def restricted_lines(restricted: dict[str, Any]) -> list[str]:
    """The summary's lines on restricted content left out (none when nothing was)."""
    left_out = dict(restricted.get("left_out") or {})
    whole = restricted.get("tables_left_out") or {}
    if not left_out and not whole:
        return []
    parts = [f"{table} {rows:,} rows" for table, rows in left_out.items()]
    parts += [
        f"{entry['tables']} {entity} table(s) ({entry['rows']:,} rows)"
        for entity, entry in whole.items()
    ]
    return [
        "left out as restricted at the source: "
        + ", ".join(parts)
        + ' (counted in manifest.json; [export] restricted = "include" writes them)'
    ]
