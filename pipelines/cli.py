"""The `haul` command line: each command opens the config and calls one library function.

One handler, on the command group, turns what went wrong into the last line on stderr
(`haul: <message>`) and the documented exit status; details and tracebacks go to the log
file only. Every error haul raises on purpose carries its exit status (`HaulError`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
import structlog
from rich.console import Console

from haul.connectors.errors import AuthError, HaulError
from haul.pipelines.commands.run import (
    Interrupted,
    RunSummary,
    extract,
    load,
    open_store,
    read_store,
    run_all,
)
from haul.pipelines.config import Config, load_config
from haul.pipelines.logs import (
    configure_logging,
    current_log_path,
    log_trouble,
    settle_console,
    without_secrets,
)
from haul.pipelines.pipes import guard_standard_streams
from haul.pipelines.progress import LiveProgress
from haul.pipelines.registry import services
from haul.pipelines.report.counts import (
    entity_counts,
    in_use,
    print_run,
    service_lines,
    summary_json,
)
from haul.pipelines.stopping import GracefulStop
from haul.pipelines.waiting import next_step
from haul.state.errors import StoreError

if TYPE_CHECKING:
    from haul.pipelines.commands.verify import Difference

console = Console()
log = structlog.get_logger(__name__)

EXIT_STATUS = """\b
Exit status:
  0  done
  1  stopped: a rejected token, a service that kept failing, a held or broken
     staging store, a log file that cannot be written, a signal (run the same
     command to resume)
  2  usage or config error (every problem is listed with its key)
  3  done, but records failed (haul failures lists them)
  4  stopped by rate limiting; resumable (the message says when)
A closed pipe (haul map | head) ends nothing: what nobody reads is dropped,
quietly, and the exit status is the command's own.
"""

CONFIG_OPTION = click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The haul TOML file (source, target, scope, mapping, staging).",
)

JSON_OPTION = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the summary as one JSON object on stdout, for scripts (same exit status).",
)

RETRY_OPTION = click.option(
    "--retry-failed", is_flag=True, help="Try the records that failed before once more."
)


MANIFEST_OPTION = click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A shard manifest (haul plan --shards N --manifest FILE): its config, every part.",
)


class Exit(Exception):
    """End the command with this exit status, having said all there is to say."""

    def __init__(self, code: int) -> None:
        self.code = code


class HaulGroup(click.Group):
    """The command group, with the one handler of everything a command raises."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        guard_standard_streams()  # a closed pipe (haul map | head) drops output, stops nothing
        return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exit as done:
            settle_console()
            sys.exit(done.code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except (HaulError, StoreError) as exc:
            _fail(exc.exit_code, _message(exc), exc)
        except (KeyboardInterrupt, asyncio.CancelledError) as exc:
            _fail(1, "stopped; run the same command to resume", exc)
        except Exception as exc:
            where = current_log_path()
            details = f"details in {where}" if where else "run with a config to keep a log"
            _fail(1, f"internal error: {type(exc).__name__}: {exc}; {details}", exc)


def _message(exc: BaseException) -> str:
    if isinstance(exc, AuthError):
        return f"access denied: {exc}"
    return str(exc)


def _fail(code: int, message: str, exc: BaseException | None = None) -> NoReturn:
    """The last stderr line and the exit status; the traceback goes to the log file only."""
    log.info("run_stopped", exit_status=code, reason=message, exc_info=exc)
    settle_console()
    click.echo(f"haul: {without_secrets(message)}", err=True)
    sys.exit(code)


_verbose = False  # `haul -v`: the log's events on the console too


def open_config(path: Path) -> Config:
    """Read the config and send the log to the file beside its staging store."""
    config = load_config(path)
    configure_logging(config.log_path, verbose=_verbose)
    return config


@click.group(
    cls=HaulGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_STATUS
)
@click.version_option(package_name="haul", message="haul %(version)s")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Print the log's events on the console too (they always go to haul.log); without "
    "it, the console gets one short line per kind of trouble.",
)
def main(verbose: bool) -> None:
    """haul moves an organisation's work history (tracker issues, wiki pages, form answers)
    between service instances, exactly once.

    Extract stages the source into a SQLite file; load replays it into the target through the
    admin import endpoints and the wiki's upload pipeline, with a ledger so that a run killed
    anywhere can simply be run again; export writes what is staged as CSV, Parquet or XLSX.
    Tokens come from the environment variables the config names (token_env).
    """
    global _verbose
    _verbose = verbose
    configure_logging(None, verbose=verbose)  # until a config names the log file


@main.command("extract")
@CONFIG_OPTION
@JSON_OPTION
def extract_command(config_path: Path, as_json: bool) -> None:
    """Stage the source org's issues and their sub-records (incremental after the first run)."""
    config = open_config(config_path)
    _finish(_run_stage(extract, config), config, as_json, needs_complete=False)


@main.command("load")
@CONFIG_OPTION
@RETRY_OPTION
@JSON_OPTION
def load_command(config_path: Path, retry_failed: bool, as_json: bool) -> None:
    """Load what is staged into the target org; resumes where the last run stopped."""
    config = open_config(config_path)
    _finish(_run_stage(load, config, retry_failed=retry_failed), config, as_json)


@main.command("run")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The haul TOML file (source, target, scope, mapping, staging).")  # fmt: skip
@MANIFEST_OPTION
@click.option("--part", help="With --manifest: the part to run (first, a shard's number, last).")
@RETRY_OPTION
@JSON_OPTION
def run_command(
    config_path: Path | None,
    manifest_path: Path | None,
    part: str | None,
    retry_failed: bool,
    as_json: bool,
) -> None:
    """Extract, load, then check counts (exit 3 when records failed; see haul failures).
    With --manifest and --part: one part of a sharded migration (see docs/how-to/shards.md)."""
    if manifest_path is not None:
        if part is None or config_path is not None:
            raise click.UsageError("--manifest runs one part: give --part, and no --config")
        from haul.pipelines.shards.parts import run_part

        raise Exit(run_part(manifest_path, part, services(), console=console))
    if config_path is None:
        raise click.UsageError("give --config (or --manifest with --part)")
    config = open_config(config_path)
    _finish(_run_stage(run_all, config, retry_failed=retry_failed), config, as_json)


@main.command("status")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The haul TOML file (source, target, scope, mapping, staging).")  # fmt: skip
@MANIFEST_OPTION
@JSON_OPTION
def status_command(config_path: Path | None, manifest_path: Path | None, as_json: bool) -> None:
    """Show what is staged, loaded, failed and pending, per entity, and the last runs.
    With --manifest: every part of a sharded migration."""
    if manifest_path is not None:
        from haul.pipelines.shards.manifest import read_manifest
        from haul.pipelines.shards.status import manifest_status, print_parts

        statuses = manifest_status(read_manifest(manifest_path))
        if as_json:
            click.echo(json.dumps({"parts": [row.as_json() for row in statuses]}))
        else:
            print_parts(statuses, console)
        return
    if config_path is None:
        raise click.UsageError("give --config (or --manifest)")
    config = load_config(config_path)
    if not config.staging_path.exists():
        _fail(1, f"nothing staged yet: {config.staging_path} does not exist (run haul extract)")
    from haul.pipelines.commands.status import gather_status, print_status

    with read_store(config.staging_path) as store:  # it only reads: a read-only store will do
        status = gather_status(store, services())
        counts = entity_counts(store, in_use(store, services()))
        runs = store.recent_runs(1)
    last: dict[str, object] = (runs[0].get("counts") or {}) if runs else {}
    if as_json:
        import dataclasses

        figures = {"status": dataclasses.asdict(status), **summary_json(counts, last, [])}
        click.echo(json.dumps(figures, default=str))
        return
    print_status(status, counts, console, title=f"haul status: {config.staging_path.name}")
    for line in service_lines(last):  # the services' share of the last run
        console.print(f"last run: {line}", markup=False, highlight=False, soft_wrap=True)


@main.command("failures")
@CONFIG_OPTION
@click.option("--entity", help="Only this entity (issue, comment, worklog, link, ...).")
@click.option("--limit", default=50, show_default=True, help="Show at most this many.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write every failure (no limit) to this CSV file.")  # fmt: skip
def failures_command(
    config_path: Path, entity: str | None, limit: int, csv_path: Path | None
) -> None:
    """List the records that could not be extracted whole or loaded: first their causes,
    commonest first (with the records waiting under each), then each record with its error."""
    from haul.pipelines.commands.failures import problem_stage, store_failures

    config = load_config(config_path)
    if not config.staging_path.exists():
        _fail(1, f"nothing staged yet: {config.staging_path} does not exist")
    with open_store(config.staging_path) as store:
        problems = [p for p in store.problems if entity in (None, p.entity)]
        rows = list(store.ledger.iter_rows(status="failed", entity=entity))
        failures = store_failures(store, entity)
        if csv_path is not None:
            from haul.pipelines.commands.status import write_failures_csv

            write_failures_csv(csv_path, problems, rows)
    for cause in failures.causes:
        click.echo(f"cause: {cause.line()}")
    lines = [
        (
            failures.rank(p.entity, p.source_id),
            f"{p.entity} {p.source_id} ({problem_stage(p.entity)}): {p.error}",
        )
        for p in problems
    ]
    lines += [
        (
            failures.rank(r.entity, r.source_id),
            f"{r.entity} {r.source_id} (attempts {r.attempts}): {r.error}",
        )
        for r in rows
    ]
    lines.sort(key=lambda line: line[0])  # stable: roots of the commonest cause first
    for _, line in lines[:limit]:  # one line per record, so the list can be grepped
        click.echo(line)
    shown = min(limit, len(lines))
    more = "" if shown == len(lines) else f", {shown} shown"
    again = "haul extract, then " if problems else ""
    click.echo(
        f"{len(lines)} failed record(s){more}; fix the cause, then: {again}haul load --retry-failed"
    )


@main.command("verify")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The haul TOML file (source, target, scope, mapping, staging).")  # fmt: skip
@MANIFEST_OPTION
@click.option("--sample", type=int, help="Check N random loaded records per entity.")
@click.option("--entities", help="Comma-separated entities to check (default: all).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path))
def verify_command(
    config_path: Path | None,
    manifest_path: Path | None,
    sample: int | None,
    entities: str | None,
    csv_path: Path | None,
) -> None:
    """Read the target back and compare every loaded record field by field (exit 3 on any
    difference). With --manifest: over the union of every part (the last part's store), and
    the source counted whole against the manifest's shards (one missing is a difference)."""
    from haul.pipelines.commands.verify_cli import run_verify

    config = _config_or_union(config_path, manifest_path)
    uncovered = _not_in_manifest(manifest_path) if manifest_path is not None else []
    raise Exit(run_verify(config, services(), sample, entities, csv_path, console, uncovered))


def _not_in_manifest(manifest_path: Path) -> list[Difference]:
    from haul.pipelines.shards.coverage import uncovered
    from haul.pipelines.shards.manifest import read_manifest

    return asyncio.run(uncovered(read_manifest(manifest_path), services()))


@main.command("report")
@MANIFEST_OPTION
def report_command(manifest_path: Path | None) -> None:
    """One report over every part of a sharded migration: the union's counts per entity, and
    where its report.json and report.html are."""
    if manifest_path is None:
        raise click.UsageError("give --manifest (a single store's report is beside it)")
    config = _config_or_union(None, manifest_path)
    with open_store(config.staging_path) as store:
        counts = entity_counts(store, in_use(store, services()))
        runs = store.recent_runs(1)
    last: dict[str, object] = (runs[0].get("counts") or {}) if runs else {}
    print_run(counts, last, [], console, "haul report: every part")
    folder = config.staging_path.parent
    click.echo(f"report: {folder / 'report.html'} ({folder / 'report.json'})")


def _config_or_union(config_path: Path | None, manifest_path: Path | None) -> Config:
    """The config given, or a manifest's union (its last part's config)."""
    if (config_path is None) == (manifest_path is None):
        raise click.UsageError("give one of --config or --manifest")
    if config_path is not None:
        return open_config(config_path)
    from haul.pipelines.shards.manifest import read_manifest
    from haul.pipelines.shards.status import union_config

    config = union_config(read_manifest(Path(str(manifest_path))))
    configure_logging(config.log_path, verbose=_verbose)
    return config


@main.command("plan")
@CONFIG_OPTION
@click.option("--conflicts", "conflicts_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--changes",
    "changes_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every change the load would make as CSV, one per row.",
)
@click.option("--shards", type=click.IntRange(min=1),
              help="Cut the migration into N shards by the source's counts; needs --manifest.")  # fmt: skip
@MANIFEST_OPTION
@click.option("--stores", "store_template", default="stores/{part}/haul.db", show_default=True,
              help="With --shards: each part's store, relative to the manifest.")  # fmt: skip
@click.option("--source-token-env", help="With --shards: each shard's source token variable, "
              "e.g. SRC_TOKEN_{part} (default: the config's).")  # fmt: skip
@click.option("--target-token-env", help="With --shards: each shard's target token variable.")
def plan_command(
    config_path: Path,
    conflicts_path: Path | None,
    changes_path: Path | None,
    shards: int | None,
    manifest_path: Path | None,
    **shard_options: Any,
) -> None:
    """After extract: what the load would create, update, transition, move, delete, skip and
    find in conflict (writes nothing). With --shards N --manifest FILE: write a shard
    manifest from the source's counts instead (see docs/how-to/shards.md)."""
    from haul.pipelines.commands.plan import make_plan, print_plan, write_changes, write_conflicts

    config = open_config(config_path)
    if (shards is None) != (manifest_path is None):
        raise click.UsageError("--shards and --manifest go together")
    if shards is not None and manifest_path is not None:
        from haul.pipelines.shards.planning import plan_shards
        from haul.pipelines.shards.status import print_manifest

        manifest = asyncio.run(
            plan_shards(config, services(), config_path, manifest_path, shards, **shard_options)
        )
        print_manifest(manifest, console)
        return
    plan = asyncio.run(make_plan(config, services(), list_creates=changes_path is not None))
    print_plan(plan, config.require_target("plan"), console)
    if conflicts_path is not None:
        write_conflicts(conflicts_path, plan)
    if changes_path is not None:
        write_changes(changes_path, plan)


@main.command("check")
@CONFIG_OPTION
def check_command(config_path: Path) -> None:
    """Before a migration: tokens, admin rights, queues, dictionaries, users, disk (exit 1 on an error)."""
    from haul.pipelines.commands.check import print_findings, run_check

    config = open_config(config_path)
    raise Exit(print_findings(asyncio.run(run_check(config, services())), console))


@main.command("export")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The haul TOML file (its [staging] store is read, never written).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "xlsx"]),
              help="Default: [export] format, else csv.")  # fmt: skip
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="The folder that receives a dated folder per run. Default: [export] out, "
              "else exports beside the config.")  # fmt: skip
@click.option("--entities", help="Comma-separated tables or staged entities (default: all).")
@click.option("--since", help='Only records staged at or after a date or instant; "last": '
              "only those staged since the previous export in --out.")  # fmt: skip
@click.option("--keep", type=click.IntRange(min=1), help="Keep the newest N dated folders.")
@click.option("--partition", type=click.Choice(["month"]),
              help="With --format parquet: the large tables as Hive-style monthly folders.")  # fmt: skip
@click.option("--healthcheck-url", help="GET this URL after a good export (10 s timeout).")
@click.option("--describe", is_flag=True, help="Print every table's typed columns; export nothing.")
@MANIFEST_OPTION
def export_command(
    config_path: Path | None, describe: bool, manifest_path: Path | None, **options: Any
) -> None:
    """Write the staged records as CSV, Parquet or XLSX files (one per entity) into a new
    dated folder under --out, with manifest.json and a `latest` pointer. With --manifest:
    the union of every part of a sharded migration (the last part's store)."""
    from haul.pipelines.export import command
    from haul.pipelines.export.describe import describe_markdown
    from haul.pipelines.export.errors import ExportOptionError

    if describe:
        click.echo(describe_markdown(command.service_tables(services())), nl=False)
        return
    if config_path is None and manifest_path is None:
        raise ExportOptionError("--config: give the haul TOML file to export from")
    config = _config_or_union(config_path, manifest_path)
    request = command.ExportRequest.from_options(config, **options)
    with LiveProgress() as progress:
        result = command.run_export(config, request, services=services(), progress=progress)
    command.print_export(result, console)
    for warning in result.warnings:
        click.echo(f"haul: warning: {warning}", err=True)
    if result.exit_code:
        raise Exit(result.exit_code)


@main.command("map")
@CONFIG_OPTION
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True, help="CSV with a header, or a JSON list of objects.")  # fmt: skip
@click.option("--entity", "entities", multiple=True, metavar="ENTITY",
              help="Only this entity (repeat for more): issue, attachment, wiki_page, "
              "wiki_attachment, project, portfolio, goal, filter, dashboard.")  # fmt: skip
def map_command(config_path: Path, fmt: str, entities: tuple[str, ...]) -> None:
    """Print the key map on stdout, for redirects and bots: one row per loaded issue, page,
    file and planning object (entity, source_id, source_key, target_id, target_key, moved),
    the rows of the export's id_map table. Restricted records follow [export] restricted."""
    from haul.pipelines.export.id_map import read_key_map, write_key_map

    key_map = read_key_map(open_config(config_path), entities)
    write_key_map(key_map, fmt, sys.stdout)
    if key_map.left_out:
        click.echo(f"haul: {key_map.left_out:,} restricted records left out "
                   '([export] restricted = "include" prints them)', err=True)  # fmt: skip


@main.command("undo")
@CONFIG_OPTION
@click.option("--dry-run", is_flag=True, help="Only list what it would delete and keep.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed off a terminal).")
@click.option(
    "--include-changed",
    is_flag=True,
    help="Delete also what a person changed in the target since haul wrote it (kept otherwise).",
)
def undo_command(config_path: Path, dry_run: bool, yes: bool, include_changed: bool) -> None:
    """Take the migration back from the ledger, newest first: delete from the target what
    the loads wrote and the API can delete (comments, worklogs, files, links, checklists,
    pages, grids, filters, entities, boards, ...), and list what it cannot (issues: the
    tracker deletes none; each is named with how to archive it). What a person changed in the
    target since haul wrote it (a comment edited, a page rewritten, a checklist item edited)
    is kept and named unless --include-changed; an item a person added to a checklist haul
    wrote stays. Killed, run it again: nothing is deleted twice. A page's recovery token is kept and printed. Afterwards haul
    verify reports each record taken back as missing. Exit 3 when a deletion failed or a
    stopped load left a record in flight; 1 when a deletion is not confirmed (a reply that is
    not the API's: a gateway's sign-in page), the rows as they were; 2 off a terminal without
    --yes."""
    from haul.pipelines.commands.undo import UndoPlan
    from haul.pipelines.commands.undo_cli import run_undo

    if not (dry_run or yes or sys.stdin.isatty()):
        raise click.UsageError("haul undo deletes from the target: off a terminal, pass --yes")
    config = open_config(config_path)
    if not config.staging_path.exists():
        _fail(1, f"nothing to undo: {config.staging_path} does not exist (no load used it)")

    def confirm(plan: UndoPlan) -> bool:
        if yes or not plan.to_delete:
            return True
        return click.confirm(f"Delete {len(plan.to_delete):,} records from the target?")

    raise Exit(
        run_undo(
            config,
            services(),
            console,
            dry_run=dry_run,
            include_changed=include_changed,
            confirm=confirm,
        )
    )


SIDE_FLAGS = (
    ("tracker-url", "its tracker's API root (ends in /v3; - for none)"),
    ("wiki-url", "its wiki's API root (ends in /v1; - for none)"),
    ("forms-url", "its forms service's API root (ends in /v1; - for none)"),
    ("org", "its org id (X-Org-ID)"),
    ("token-env", "the variable holding its token ({default})"),
)
TOKEN_ENV_DEFAULTS = {
    "source": "default HAUL_SOURCE_TOKEN; with --sandbox HAUL_SANDBOX_TOKEN",
    "target": "default HAUL_TARGET_TOKEN; with --sandbox the source's",
}


def _side_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """--source-tracker-url, ..., --target-token-env: each answers its question of haul init."""
    for side in ("target", "source"):
        for flag, what in reversed(SIDE_FLAGS):
            what = what.format(default=TOKEN_ENV_DEFAULTS[side])
            command = click.option(f"--{side}-{flag}", help=f"The {side} org: {what}.")(command)
    return command


@main.command("init")
@click.option("--sandbox", metavar="URL_OR_FILE",
              help="A running sandbox: its tracker URL as printed (http://127.0.0.1:PORT/v3), or "
              "a file holding its JSON line (- for stdin). Without it: real services, asked.")  # fmt: skip
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("haul.toml"),
              show_default=True, help="The config file to write.")  # fmt: skip
@click.option("--force", is_flag=True, help="Replace --out if it exists (exit 2 otherwise).")
@click.option("--no-input", is_flag=True,
              help="Ask nothing: flags and defaults only; a value that does not pass is exit 2.")  # fmt: skip
@_side_flags
@click.option("--queues", help="Tracker queue keys to move, comma-separated.")
@click.option("--wiki-roots", help="Wiki subtrees (slugs) to move, comma-separated.")
@click.option("--surveys", help='Survey ids whose answers to stage, comma-separated, or "all".')
@click.option("--staging", help="The staging database, relative to --out's folder (haul.db).")
def init_command(
    sandbox: str | None, out: Path, force: bool, no_input: bool, **given: str | None
) -> None:
    """Write a commented haul.toml. For a running sandbox (--sandbox): every org, web host,
    queue, wiki root and survey filled in; the token's export line printed on stdout. For real
    services: each value asked with its default shown (or given by its flag), each URL, org
    and token probed as haul check probes them, and only what answered written. No token is
    ever written (exit 2: the file exists without --force, or a value did not pass)."""
    from haul.pipelines.commands.init import refuse_to_overwrite, write_config_text

    refuse_to_overwrite(out, force)  # before asking anything
    if sandbox is not None:
        from haul.pipelines.commands.init import init_sandbox

        exports = init_sandbox(sandbox, out, force, given, say=_say)
        click.echo(
            "# the sandbox's tokens are throwaway: they open only this sandbox, and die with it"
        )
        for line in exports:
            click.echo(line)
        return
    from haul.pipelines.commands.init_ask import ask_config

    text, token_envs = ask_config(
        dict(given), interactive=not no_input, out=out, say=_say, services=services()
    )
    write_config_text(out, text, force)
    _say(f"wrote {out}; its tokens come from {', '.join(token_envs)} (never from the file): "
         f"export them where haul runs, then haul check --config {out}")  # fmt: skip


def _say(line: str) -> None:
    click.echo(line, err=True)


@main.command("resolve")
@CONFIG_OPTION
@click.option("--take", type=click.Choice(["source", "target"]),
              help="Settle one conflict: take the source's value or the target's.")  # fmt: skip
@click.option("--issue", "issue_key", help="With --take: the issue (its source or target key).")
@click.option("--record", "record_ref", metavar="ENTITY:ID",
              help="With --take: another record (comment:123, wiki_page:team/a).")  # fmt: skip
@click.option("--field", "field_name", help="With --take: the field in conflict.")
@click.option("--from", "from_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Settle each row of a CSV (--format csv) by its decision column: source, "
              "target, or blank (left open).")  # fmt: skip
@click.option("--format", "output_format", type=click.Choice(["table", "csv"]), default="table",
              show_default=True, help="How to list the open conflicts.")  # fmt: skip
def resolve_command(
    config_path: Path,
    take: str | None,
    issue_key: str | None,
    record_ref: str | None,
    field_name: str | None,
    from_path: Path | None,
    output_format: str,
) -> None:
    """List the sync's open conflicts (fields changed on both sides, the target's value kept),
    or settle them: --take source|target for one issue (or record) and field, or --from a CSV
    whose decision column a person filled in (haul resolve --format csv writes it). The next
    haul load (or haul run) writes the source's value where it was taken, exactly once, and
    the conflict leaves haul status and the report; taking the target writes nothing. A
    decision made against values that moved since is not applied: the run names it, and it is
    open again. Exit 2 for a conflict that is not open or a bad decision (the line is named),
    3 when --from rows were made against values a run has seen move since."""
    from haul.pipelines.commands import resolve

    if take is not None and from_path is not None:
        raise click.UsageError("give --take (one conflict) or --from (a CSV), not both")
    if take is not None and (field_name is None or (issue_key is None) == (record_ref is None)):
        raise click.UsageError("--take needs --field and one of --issue or --record")
    config = open_config(config_path)
    if not config.staging_path.exists():
        _fail(1, f"nothing staged yet: {config.staging_path} does not exist")
    if take is not None:
        entity, record = ("issue", issue_key or "") if issue_key else _record(record_ref or "")
        raise Exit(resolve.take_one(config, console, take, (entity, record, field_name or "")))
    if from_path is not None:
        raise Exit(resolve.take_from(config, console, from_path))
    resolve.list_conflicts(config, console, sys.stdout, as_csv=output_format == "csv")


def _record(ref: str) -> tuple[str, str]:
    entity, colon, record = ref.partition(":")
    if not (entity and colon and record):
        raise click.UsageError(f"--record {ref!r}: write ENTITY:ID (comment:123)")
    return entity, record


@main.command("config-schema")
def config_schema_command() -> None:
    """Print the JSON Schema of the config file (editors use it for completion and checks)."""
    import json

    from haul.pipelines.config import config_json_schema

    click.echo(json.dumps(config_json_schema(), indent=2))


@main.command("demo")
@click.option(
    "--size",
    type=click.Choice(["tiny", "small", "medium", "large"]),
    default="small",
    show_default=True,
)
@click.option("--seed", default=1, show_default=True, help="Seed of the generated source org.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("haul-demo"),
    show_default=True,
    help="Where the demo writes its config, staging database and log.",
)
def demo_command(size: str, seed: int, workdir: Path) -> None:
    """Start the embedded sandbox, migrate its seeded source org to its target org, print a report."""
    from haul.pipelines.commands.demo import (
        run_demo,  # the demo is the only command that needs the sandbox
    )

    raise Exit(run_demo(workdir=workdir, size=size, seed=seed, console=console))


@main.group("sandbox")
def sandbox_group() -> None:
    """A local stand-in for the services, to rehearse migrations on."""


@sandbox_group.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=0, show_default=True, help="The tracker's port (0: a free one).")
@click.option("--seed", default=1, show_default=True)
@click.option(
    "--size",
    type=click.Choice(["tiny", "small", "medium", "large"]),
    default="tiny",
    show_default=True,
)
@click.option("--latency-ms", default=0.0, show_default=True, help="Added to every request.")
@click.option(
    "--faults",
    default="",
    help="e.g. '429:0.05,drop_after:0.05@*/_import' (see docs/reference/sandbox.md).",
)
@click.option(
    "--language",
    "languages",
    multiple=True,
    metavar="ROLE=LANG",
    help="An organisation's language (en or ru; en unless told), e.g. target=ru.",
)
def sandbox_serve(
    host: str,
    port: int,
    seed: int,
    size: str,
    latency_ms: float,
    faults: str,
    languages: tuple[str, ...],
) -> None:
    """Serve the sandbox; prints one JSON line (URLs, org ids, tokens), then serves until stopped."""
    from haul.sandbox.server import serve

    told = dict(item.partition("=")[::2] for item in languages)
    try:
        serve(host=host, port=port, seed=seed, size=size, latency_ms=latency_ms, faults=faults,
              languages=told)  # fmt: skip
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--language/--faults") from None


def _run_stage(stage: Callable[..., Any], config: Config, **options: Any) -> RunSummary:
    """Run one library stage with progress bars on a terminal; the first SIGINT or SIGTERM
    stops it gracefully (see `stopping`), and so does a log file that cannot be written: a
    run whose log is lost could not be traced, so it ends with exit 1 naming the file."""

    async def supervised() -> RunSummary:
        stop = GracefulStop()
        stop.install()
        try:
            result: RunSummary = await stage(
                config,
                services(),
                progress=progress,
                stop_requested=lambda: stop.requested() or log_trouble() is not None,
                **options,
            )
            return result
        finally:
            stop.uninstall()

    _stop_if_log_lost()
    try:
        with LiveProgress() as progress:
            summary = asyncio.run(supervised())
    except Interrupted:
        _stop_if_log_lost()
        raise
    _stop_if_log_lost()
    return summary


class LogLostError(HaulError):
    """The log file cannot be written (a full disk): the run stopped, resumable."""


def _stop_if_log_lost() -> None:
    if (trouble := log_trouble()) is not None:
        raise LogLostError(f"stopped: {trouble}; then run the same command to resume")


def _print_summary(summary: RunSummary, as_json: bool) -> None:
    if as_json:
        figures = summary_json(summary.counts, summary.details, summary.unmapped_users)
        click.echo(json.dumps({"command": summary.command, **figures}, default=str))
        return
    title = f"haul {summary.command}"
    print_run(summary.counts, summary.details, summary.unmapped_users, console, title)
    if summary.problems:
        console.print(
            f"records the extract could not stage whole: {summary.problems}",
            markup=False,
            highlight=False,
        )


def _commonest(config: Config) -> str:
    """The commonest cause of the failed records, for the last line of a run
    (`; the commonest cause (N of them): <cause>`; empty when the store holds no failure)."""
    from haul.pipelines.commands.failures import store_failures

    with open_store(config.staging_path) as store:
        failures = store_failures(store)
    cause = failures.commonest()
    if cause is None:
        return ""
    of = f" ({cause.total} of them)" if len(failures.causes) > 1 else ""
    return f"; the commonest cause{of}: {cause.line()}"


def _finish(
    summary: RunSummary, config: Config, as_json: bool = False, *, needs_complete: bool = True
) -> None:
    """Exit 3 when records failed (the last line names the commonest cause), 1 when the
    target does not hold what was staged."""
    settle_console()
    _print_summary(summary, as_json)
    failed = summary.failed + summary.problems
    if failed:
        click.echo(
            f"haul: {failed} record(s) failed{_commonest(config)}; see haul failures", err=True
        )
        raise Exit(3)
    if needs_complete and not summary.complete:
        click.echo("haul: the target does not hold every staged record: see haul status", err=True)
        raise Exit(1)
    if summary.waiting:  # not failed: each is named, and a later run makes it
        click.echo(f"haul: {next_step(summary.waiting)}; haul status names them", err=True)
