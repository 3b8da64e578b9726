"""Helpers for the CLI tests: run `haul` as a real subprocess, write its config, read its output.

The tests see haul as a user does: a command line, an exit status, stdout and stderr, and the
files it leaves beside the staging database. Only the config writer is haul's own (the
same one the demo uses).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config

HAUL = Path(sys.executable).parent / "haul"
SOURCE_TOKEN_ENV = "HAUL_CLI_SOURCE_TOKEN"
TARGET_TOKEN_ENV = "HAUL_CLI_TARGET_TOKEN"
COMMAND_TIMEOUT_S = 120.0


def haul_env(tokens: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a test runs haul in: this one, minus any token of ours, plus `tokens`.

    A wide COLUMNS keeps rich from wrapping or cutting the tables the tests read.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in (SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV)
    }
    env.update(COLUMNS="200", TERM="dumb", PYTHONUNBUFFERED="1")
    env.update(tokens or {})
    return env


def run_haul(
    *args: str | Path, env: dict[str, str] | None = None, **options: Any
) -> subprocess.CompletedProcess[str]:
    """Run `haul ARGS...` to its end and return what it did (never raises on a bad status);
    `options` go to `subprocess.run` (`cwd`, say)."""
    return subprocess.run(
        [str(HAUL), *(str(arg) for arg in args)],
        env=env or haul_env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
        **options,
    )


def start_haul(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    """Start `haul ARGS...` in the background, stdout and stderr piped; the caller ends it."""
    return subprocess.Popen(
        [str(HAUL), *(str(arg) for arg in args)],
        env=env or haul_env(),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(process: subprocess.Popen[str], timeout: float = 15.0) -> tuple[str, str]:
    """Terminate `process` if it still runs, wait for it, and return its remaining output."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate(timeout=timeout)


def finish(process: subprocess.Popen[str], timeout: float = 60.0) -> tuple[str, str]:
    """Let `process` end by itself and return its output; kill it if it overruns `timeout`."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(process)
        raise


def read_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The next line `process` prints on stdout; TimeoutError if none comes in time."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError(f"no line on stdout within {timeout} s")
    return process.stdout.readline()


def write_config(
    directory: Path,
    info: dict[str, Any],
    *,
    queues: list[str],
    queue_mapping: dict[str, str] | None = None,
    users_file: Path | None = None,
    default_user: str | None = None,
    source_url: str | None = None,
    create_missing: bool | None = None,
) -> Path:
    """Write haul.toml in `directory` for the sandbox described by `info` (its JSON line).

    Tokens are named, never written: SOURCE_TOKEN_ENV and TARGET_TOKEN_ENV hold them. The
    staging database is staging/haul.db under `directory`, so its log is staging/haul.log.
    """
    extra: dict[str, Any] = {}
    if users_file is not None:
        extra["users_file"] = users_file.name
    if default_user is not None:
        extra["default_user"] = default_user
    if create_missing is not None:
        extra["create_missing"] = create_missing
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        target_token_env=TARGET_TOKEN_ENV,
        queues=queues,
        queue_mapping={"TEST": "NEW"} if queue_mapping is None else queue_mapping,
        mapping_extra=extra,
        staging_path="staging/haul.db",
    )
    path = write_sandbox_config(directory, info, options)
    if source_url is not None:  # the source's URL only (the first in the file) elsewhere
        text = path.read_text(encoding="utf-8")
        old = f'tracker_url = "{info["tracker"]}"'
        path.write_text(text.replace(old, f'tracker_url = "{source_url}"', 1), encoding="utf-8")
    return path


def tokens_env(source: str, target: str | None = None) -> dict[str, str]:
    """haul's environment with `source` as the source token and `target` (default: the same)."""
    return haul_env({SOURCE_TOKEN_ENV: source, TARGET_TOKEN_ENV: target or source})


def staging_db(directory: Path) -> Path:
    """Where write_config puts the staging database."""
    return directory / "staging" / "haul.db"


def asked_to_stop(store: Path) -> bool:
    """Whether the haul process of the staging store `store` logged that a signal asked it
    to stop (it then finishes the requests in flight, and starts nothing new)."""
    log = store.with_name("haul.log")
    return log.exists() and "stop_requested" in log.read_text(encoding="utf-8")


def counts_table(output: str) -> dict[str, dict[str, int | str]]:
    """The per-entity table haul prints, as entity -> {"staged", "to load", "loaded", "failed",
    "pending"}, named by the table's own header.

    Reads the rows of a rich table (cells between "│"); a "-" cell stays the string "-".
    """
    rows: dict[str, dict[str, int | str]] = {}
    columns: list[str] = []
    for line in output.splitlines():
        if line.strip().startswith("┃") and "entity" in line:
            columns = [cell.strip() for cell in line.strip().strip("┃").split("┃")][1:]
            continue
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if not columns or len(cells) != len(columns) + 1:
            continue
        if not all(value.isdigit() or value == "-" for value in cells[1:]):
            continue
        rows[cells[0]] = {
            column: int(value) if value.isdigit() else value
            for column, value in zip(columns, cells[1:], strict=True)
        }
    return rows


def files_containing(directory: Path, secret: str) -> list[Path]:
    """Every file under `directory` whose bytes contain `secret`."""
    needle = secret.encode()
    return [path for path in directory.rglob("*") if path.is_file() and needle in path.read_bytes()]


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `condition` until it returns something truthy; return it, or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


def source_get(info: dict[str, Any], path: str, **params: Any) -> Any:
    """GET a path of the sandbox's source org with the admin token; the parsed JSON reply."""
    reply = httpx.get(info["tracker"] + path, headers=_headers(info), params=params, timeout=30)
    reply.raise_for_status()
    return reply.json()


def source_post(info: dict[str, Any], path: str, body: dict[str, Any]) -> Any:
    """POST a JSON body to a path of the sandbox's source org with the admin token (a test
    plants the record its case needs); the parsed JSON reply."""
    reply = httpx.post(info["tracker"] + path, headers=_headers(info), json=body, timeout=30)
    reply.raise_for_status()
    return reply.json()


def source_queues(info: dict[str, Any]) -> list[str]:
    """The keys of the source org's queues. A migration tested here takes them all: a link to
    an issue outside the scope cannot be loaded, which would blur what a test checks."""
    return list(info["queues"]["source"])


def source_issues(info: dict[str, Any], queue: str) -> list[dict[str, Any]]:
    """Every issue of one source queue (a tiny org's queue fits one page of 100)."""
    reply = httpx.post(
        info["tracker"] + "/issues/_search",
        headers=_headers(info),
        params={"perPage": 100},
        json={"query": f"Queue: {queue}"},
        timeout=30,
    )
    reply.raise_for_status()
    assert reply.headers["X-Total-Pages"] == "1"
    return reply.json()


def user_refs(record: Any) -> set[str]:
    """The ids of every user a record refers to, at any depth ({"self": ".../users/<id>"})."""
    if isinstance(record, list):
        return set().union(*(user_refs(item) for item in record))
    if not isinstance(record, dict):
        return set()
    found = {str(record["id"])} if "/users/" in str(record.get("self", "")) else set()
    return found.union(*(user_refs(value) for value in record.values()))


def count_issues(info: dict[str, Any], org: str, queue: str) -> int:
    """How many issues the sandbox's `org` ("source" or "target") holds in `queue`."""
    reply = httpx.post(
        info["tracker"] + "/issues/_count",
        headers=_headers(info, org),
        json={"query": f"Queue: {queue}"},
        timeout=30,
    )
    reply.raise_for_status()
    return reply.json()


def _headers(info: dict[str, Any], org: str = "source") -> dict[str, str]:
    return {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}


def invoke_haul(
    *args: str | Path, input: str | None = None, env: dict[str, str | None] | None = None
) -> Any:
    """Run `haul ARGS...` in this process (click's CliRunner: stdin from `input`, the
    environment changed by `env`) and return its result (`exit_code`, `stdout`, `stderr`):
    for commands that are quick and talk to the sandbox of this process, or to nothing."""
    from click.testing import CliRunner

    from haul.pipelines.cli import main

    runner = CliRunner()
    return runner.invoke(main, [str(arg) for arg in args], input=input, env=env)
