"""No secret in any file haul writes, however a run ends, and every such file private.

Each test hands haul the sandbox's token (through the variables the config names) and one
more secret in its environment (`HAUL_TOKEN`, as an operator's shell would hold it), stages
the source with `haul extract`, then ends a `haul load` the way a night can end it: a service
that keeps answering 503, a signal (once: a graceful stop; twice: at once), a SIGKILL, an
internal error. Then every byte haul printed and every file it left (log, staging database,
WAL and shared memory, lock, blobs, reports) is searched for each secret, the log for any
frame's local variables, and every file and folder haul made beside the store for its mode.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import (
    asked_to_stop,
    files_containing,
    finish,
    run_haul,
    staging_db,
    start_haul,
    tokens_env,
    wait_for,
    write_config,
)

STRAY_SECRET = "stray-secret-in-the-environment-7Qm2"
CRASH_LAUNCHER = Path(__file__).parents[1] / "helpers" / "crash_launcher.py"


@dataclass
class Ended:
    """What a run that did not end well left: its exit status and everything it printed."""

    returncode: int
    output: str


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most hosts have (0022): files are readable by all unless haul says not."""
    before = os.umask(0o022)
    yield
    os.umask(before)


@pytest.fixture
def extracted(sandbox: Any, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The source staged by `haul extract`; (the config, haul's environment with secrets)."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=list(info["queues"]["source"]))
    with config.open("a", encoding="utf-8") as text:
        text.write('\n[tuning]\noutage_patience = "2s"\n')
    env = {**tokens_env(info["tokens"]["admin"]), "HAUL_TOKEN": STRAY_SECRET}
    done = run_haul("extract", "--config", config, env=env)
    assert done.returncode == 0, done.stderr
    return config, env


def a_service_that_keeps_failing(sandbox: Any, config: Path, env: dict[str, str]) -> Ended:
    sandbox.set_faults("5xx:1.0@*/_import")
    done = run_haul("load", "--config", config, env=env)
    return Ended(done.returncode, done.stdout + done.stderr)


def one_signal(sandbox: Any, config: Path, env: dict[str, str]) -> Ended:
    return _signalled(sandbox, config, env, signal.SIGTERM)


def two_signals(sandbox: Any, config: Path, env: dict[str, str]) -> Ended:
    return _signalled(sandbox, config, env, signal.SIGINT, signal.SIGINT)


def sigkill(sandbox: Any, config: Path, env: dict[str, str]) -> Ended:
    return _signalled(sandbox, config, env, signal.SIGKILL)


def an_internal_error(sandbox: Any, config: Path, env: dict[str, str]) -> Ended:
    done = subprocess.run(
        # -v: the traceback goes to the console (a cron mail, a CI log) as well
        [sys.executable, str(CRASH_LAUNCHER), "-v", "load", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "internal error: RuntimeError: a planted bug" in done.stderr
    assert "Traceback" in done.stderr and "a planted bug under an import request" in done.stderr
    return Ended(done.returncode, done.stdout + done.stderr)


def _signalled(sandbox: Any, config: Path, env: dict[str, str], *signals: int) -> Ended:
    # held comment imports keep the load going until the signals are in
    sandbox.set_faults("hold:comments@*/comments/_import")
    load = start_haul("load", "--config", config, env=env)
    store = staging_db(config.parent)
    try:
        wait_for(
            lambda: loaded_issues(store) and sandbox.held("comments"),
            timeout=60,
            what="a first issue loaded and a comment held",
        )
        for signum in signals:
            load.send_signal(signum)
        if signals[0] != signal.SIGKILL:
            wait_for(lambda: asked_to_stop(store), timeout=60, what="the load asked to stop")
        sandbox.set_faults("")  # what is in flight ends; nothing new starts
        out, err = finish(load)
    finally:
        if load.poll() is None:
            load.kill()
    return Ended(load.returncode, out + err)


def loaded_issues(path: Path) -> int:
    """How many issues the ledger holds as loaded (0 while it cannot be read)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            query = "SELECT count(*) FROM ledger WHERE entity = 'issue' AND status = 'done'"
            return int(db.execute(query).fetchone()[0])
    except sqlite3.Error:
        return 0


ENDINGS = [a_service_that_keeps_failing, one_signal, two_signals, sigkill, an_internal_error]


@pytest.mark.parametrize("ending", ENDINGS, ids=lambda ending: ending.__name__)
def test_a_run_that_ends_badly_leaves_no_secret_anywhere(
    sandbox: Any,
    extracted: tuple[Path, dict[str, str]],
    ending: Callable[[Any, Path, dict[str, str]], Ended],
) -> None:
    """Exit 1; neither token nor the stray variable is in what haul printed or in any file
    it left; the tracebacks (in the log, and on the console with -v) have frames but no
    local variables: no request's headers."""
    config, env = extracted
    try:
        ended = ending(sandbox, config, env)
    finally:
        sandbox.set_faults("")

    expected = -signal.SIGKILL if ending is sigkill else 1
    assert ended.returncode == expected, ended.output
    log = staging_db(config.parent).with_name("haul.log").read_text(encoding="utf-8")
    if ending is not sigkill:
        assert '"exception"' in log and '"frames"' in log  # a traceback was logged, as data
    assert '"locals"' not in log
    for text in (log, ended.output):  # no request's headers rendered, not even redacted
        assert "Authorization" not in text and "authorization" not in text
    for secret in (env["HAUL_CLI_SOURCE_TOKEN"], STRAY_SECRET):
        assert secret not in ended.output
        assert files_containing(config.parent, secret) == []


@pytest.mark.parametrize(
    "ending", [sigkill, a_service_that_keeps_failing], ids=["killed", "failed"]
)
def test_every_file_beside_the_store_is_the_users_alone(
    sandbox: Any,
    extracted: tuple[Path, dict[str, str]],
    ending: Callable[[Any, Path, dict[str, str]], Ended],
) -> None:
    """Under a umask of 0022, the staging folder haul made and the blob folders are 0700; the
    database, its WAL and shared memory (left by a SIGKILL), the lock, the log, the blobs
    and the reports are 0600."""
    config, env = extracted
    try:
        ending(sandbox, config, env)
    finally:
        sandbox.set_faults("")

    staging = staging_db(config.parent).parent
    made = [staging, *staging.rglob("*")]
    names = {path.name for path in made}
    assert {"haul.db", "haul.db.lock", "haul.log", "haul.db.blobs"} <= names
    if ending is sigkill:
        assert {"haul.db-wal", "haul.db-shm"} <= names
    else:
        assert {"report.json", "report.html"} <= names
    assert any(path.is_file() for path in (staging / "haul.db.blobs").rglob("*"))
    modes = {str(path.relative_to(staging)): stat.S_IMODE(path.stat().st_mode) for path in made}
    wanted = {str(path.relative_to(staging)): 0o700 if path.is_dir() else 0o600 for path in made}
    assert modes == wanted
