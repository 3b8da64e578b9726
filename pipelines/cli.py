"""The `haul` command line: each command opens the config, calls one library function, and
translates what went wrong into a message and an exit status (2: bad config or input;
1: the run could not finish or did not move everything; 0: done)."""

from __future__ import annotations

import asyncio
import functools
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import structlog
from rich.console import Console

from haul.connectors.errors import AuthError, FatalError, HaulHTTPError, TransientError
from haul.pipelines.config import Config, ConfigError, load_config
from haul.pipelines.logs import configure_logging
from haul.pipelines.progress import LiveProgress
from haul.pipelines.report import entity_counts, print_run, render_counts
from haul.pipelines.runner import RunSummary, extract, load, run_all
from haul.pipelines.services import all_services
from haul.pipelines.tracker.service import PreflightError
from haul.pipelines.tracker.streams import ScrollStalled
from haul.pipelines.tracker.transform import MissingDictionaryValues
from haul.state.runs import RunLockedError
from haul.state.store import StagingStore

console = Console()
log = structlog.get_logger(__name__)

CONFIG_OPTION = click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The haul TOML file (source, target, scope, mapping, staging).",
)

RETRY_OPTION = click.option(
    "--retry-failed", is_flag=True, help="Try the records that failed before once more."
)


class Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def translate_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the library's errors into one clear line on stderr and the documented exit status."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except Exit as done:
            sys.exit(done.code)
        except ConfigError as exc:
            _fail(2, f"config error: {exc}")
        except AuthError as exc:
            _fail(1, f"access denied: {exc}")
        except RunLockedError as exc:
            _fail(1, str(exc))
        except ScrollStalled as exc:
            _fail(1, f"stopped: {exc}")
        except (PreflightError, MissingDictionaryValues) as exc:
            _fail(1, f"cannot load: {exc}")
        except TransientError as exc:
            _fail(
                1,
                f"the service kept failing, so the run stopped; run the same command again to resume: {exc}",
            )
        except (FatalError, HaulHTTPError) as exc:
            _fail(1, f"stopped: {exc}")

    return wrapper


def _fail(code: int, message: str) -> None:
    log.info(
        "run_stopped", exit_status=code, reason=message
    )  # the file's record; stderr has the line
    click.echo(f"haul: {message}", err=True)
    sys.exit(code)


def _stop_on_sigterm() -> None:
    """`kill` or `docker stop` ends a run like Ctrl-C: recorded as interrupted, resumable."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def open_config(path: Path) -> Config:
    config = load_config(path)
    configure_logging(config.log_path)
    _stop_on_sigterm()
    return config


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """haul moves an organisation's work history between tracker instances, exactly once.

    Extract stages the source into a SQLite file; load replays it into the target through the
    admin import endpoints, with a ledger so that a run killed anywhere can simply be run again.
    Tokens come from the environment variables the config names (token_env).
    """
    configure_logging(None)  # until a config names the log file: warnings to stderr only


@main.command("extract")
@CONFIG_OPTION
@translate_errors
def extract_command(config_path: Path) -> None:
    """Stage the source org's issues and their sub-records (incremental after the first run)."""
    _print_summary(_run_stage(extract, config_path))


@main.command("load")
@CONFIG_OPTION
@RETRY_OPTION
@translate_errors
def load_command(config_path: Path, retry_failed: bool) -> None:
    """Load what is staged into the target org; resumes where the last run stopped."""
    _finish(_run_stage(load, config_path, retry_failed=retry_failed))


@main.command("run")
@CONFIG_OPTION
@RETRY_OPTION
@translate_errors
def run_command(config_path: Path, retry_failed: bool) -> None:
    """Extract, load, then check counts; exits 1 unless everything staged is loaded."""
    _finish(_run_stage(run_all, config_path, retry_failed=retry_failed))


@main.command("status")
@CONFIG_OPTION
@translate_errors
def status_command(config_path: Path) -> None:
    """Show what is staged, loaded, failed and pending, per entity, and the last runs."""
    config = load_config(config_path)
    if not config.staging_path.exists():
        _fail(1, f"nothing staged yet: {config.staging_path} does not exist (run haul extract)")
    with StagingStore.open(config.staging_path) as store:
        render_counts(
            entity_counts(store, all_services()),
            console,
            title=f"haul status: {config.staging_path.name}",
        )
        for run in store.recent_runs(5):
            click.echo(
                f"run {run.get('id')}: {run.get('command')} {run.get('outcome') or 'running'} "
                f"started {run.get('started_at')} ended {run.get('ended_at') or '-'}"
            )


@main.command("failures")
@CONFIG_OPTION
@click.option("--entity", help="Only this entity (issue, comment, worklog, link, ...).")
@click.option("--limit", default=50, show_default=True, help="Show at most this many.")
@translate_errors
def failures_command(config_path: Path, entity: str | None, limit: int) -> None:
    """List the records that could not be loaded, with the target's error for each."""
    config = load_config(config_path)
    if not config.staging_path.exists():
        _fail(1, f"nothing staged yet: {config.staging_path} does not exist")
    with StagingStore.open(config.staging_path) as store:
        rows = list(store.ledger.iter_rows(status="failed", entity=entity))
        for row in rows[:limit]:  # one line per record, so the list can be grepped
            click.echo(f"{row.entity} {row.source_id} (attempts {row.attempts}): {row.error}")
        shown = min(limit, len(rows))
        more = "" if shown == len(rows) else f", {shown} shown"
        click.echo(
            f"{len(rows)} failed record(s){more}; fix the cause, then: haul load --retry-failed"
        )


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
@translate_errors
def demo_command(size: str, seed: int, workdir: Path) -> None:
    """Start the embedded sandbox, migrate its seeded source org to its target org, print a report."""
    from haul.pipelines.demo import run_demo  # the demo is the only command that needs the sandbox

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
    "--faults", default="", help="e.g. '429:0.05,drop_after:0.05@*/_import' (see the README)."
)
def sandbox_serve(
    host: str, port: int, seed: int, size: str, latency_ms: float, faults: str
) -> None:
    """Serve the sandbox; prints one JSON line (URLs, org ids, tokens), then serves until stopped."""
    from haul.sandbox.server import serve

    serve(host=host, port=port, seed=seed, size=size, latency_ms=latency_ms, faults=faults)


def _run_stage(stage: Callable[..., Any], config_path: Path, **options: Any) -> RunSummary:
    """Read the config, then run one library stage with progress bars on a terminal."""
    config = open_config(config_path)
    with LiveProgress() as progress:
        return asyncio.run(stage(config, progress=progress, **options))


def _print_summary(summary: RunSummary) -> None:
    title = f"haul {summary.command}"
    print_run(summary.counts, summary.details, summary.unmapped_users, console, title)


def _finish(summary: RunSummary) -> None:
    _print_summary(summary)
    if summary.failed:
        click.echo(f"haul: {summary.failed} record(s) failed: see haul failures", err=True)
    if not summary.complete:
        raise Exit(1)
