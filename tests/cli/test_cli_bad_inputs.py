"""A bad input or a bad night ends in one clear last line and the documented exit status.

Each test runs `haul` as a user would, against the sandbox where a service is involved, and
checks: the exit status, a last stderr line that names the problem, no traceback on the
console, no token anywhere, a bounded time, and (where it applies) that the good rerun that
follows leaves every record in place.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import (
    asked_to_stop,
    counts_table,
    files_containing,
    haul_env,
    run_haul,
    staging_db,
    tokens_env,
    wait_for,
    write_config,
)

NOWHERE = {"tracker": "http://127.0.0.1:9/v3", "orgs": {"source": "1", "target": "2"}}


def last_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def assert_clean_failure(done: Any, code: int, *words: str, token: str | None = None) -> None:
    """The exit status, the words on the last stderr line, and nothing a user should not see."""
    assert done.returncode == code, done.stdout + done.stderr
    line = last_line(done.stderr)
    assert line.startswith("haul: "), done.stderr
    for word in words:
        assert word in line, line
    assert "Traceback" not in done.stdout + done.stderr
    if token:
        assert token not in done.stdout + done.stderr


def test_a_config_that_is_not_utf8(tmp_path: Path) -> None:
    """Latin-1 bytes in the config: exit 2 naming the file and the byte."""
    config = tmp_path / "haul.toml"
    config.write_bytes(b'[source]\ntracker_url = "caf\xe9"\n')
    done = run_haul("status", "--config", config)
    assert_clean_failure(done, 2, "config error", "not UTF-8", "haul.toml")


def test_a_users_csv_with_a_malformed_line(sandbox: Any, tmp_path: Path) -> None:
    """A users file line without its second login: exit 2 naming the file and the line,
    before anything is written to the target."""
    info = sandbox.info
    users = tmp_path / "users.csv"
    users.write_text("alice,alice2\nbob\n", encoding="utf-8")
    config = write_config(tmp_path, info, queues=["DEV"], users_file=users)
    done = run_haul("run", "--config", config, env=tokens_env(info["tokens"]["admin"]))
    assert_clean_failure(done, 2, "mapping.users_file", "users.csv:2", "'bob'")
    assert "loaded" not in done.stdout


def test_check_stops_at_a_users_csv_that_maps_one_login_twice(tmp_path: Path) -> None:
    """`haul check` passes no users file that maps one source login on two lines (even to
    the same target): exit 2 naming the login and both lines, before any service is asked."""
    users = tmp_path / "users.csv"
    users.write_text("alice,alice2\nbob,bob\nalice,alice2\n", encoding="utf-8")
    config = write_config(tmp_path, NOWHERE, queues=["TEST"], users_file=users)
    done = run_haul("check", "--config", config)
    assert_clean_failure(done, 2, "mapping.users_file", "'alice'", "users.csv:1", "users.csv:3")


def test_a_staging_path_under_a_file(sandbox: Any, tmp_path: Path) -> None:
    """The staging folder's name is taken by a file: exit 1 naming it."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=["DEV"])
    (tmp_path / "staging").write_text("a file, not a folder")
    done = run_haul("extract", "--config", config, env=tokens_env(info["tokens"]["admin"]))
    assert_clean_failure(done, 1, "a file is in the way")


def test_a_staging_file_that_is_not_a_database(tmp_path: Path) -> None:
    """Garbage at the staging path: exit 1, named as not a staging store."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"])
    staging_db(tmp_path).parent.mkdir(parents=True)
    staging_db(tmp_path).write_text("garbage, not a database\n" * 50)
    done = run_haul("status", "--config", config)
    assert_clean_failure(done, 1, "not a haul staging store")


def test_a_store_written_by_a_newer_haul(tmp_path: Path) -> None:
    """A schema from the future: exit 1, upgrade haul."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"])
    staging_db(tmp_path).parent.mkdir(parents=True)
    with sqlite3.connect(staging_db(tmp_path)) as db:
        db.execute("PRAGMA user_version = 999")
    done = run_haul("status", "--config", config)
    assert_clean_failure(done, 1, "written by a newer haul", "upgrade haul")


def test_a_long_retry_after_stops_at_once_with_exit_4(sandbox: Any, tmp_path: Path) -> None:
    """Every request answered 429 with Retry-After: 3600: exit 4 at once, saying when."""
    info = sandbox.info
    token = info["tokens"]["admin"]
    config = write_config(tmp_path, info, queues=["DEV"])
    sandbox.set_faults("429:1.0:3600")
    try:
        started = time.monotonic()
        done = run_haul("extract", "--config", config, env=tokens_env(token))
        took = time.monotonic() - started
    finally:
        sandbox.set_faults("")
    assert_clean_failure(done, 4, "rate-limited", "run the same command again after", token=token)
    assert took < 60


def test_html_with_200_is_named_not_a_traceback(sandbox: Any, tmp_path: Path) -> None:
    """A proxy's HTML login page where the API's JSON belongs: exit 1 naming what came."""
    info = sandbox.info
    token = info["tokens"]["admin"]
    config = write_config(tmp_path, info, queues=["DEV"])
    sandbox.set_faults("html:1.0@*/myself")
    try:
        done = run_haul("extract", "--config", config, env=tokens_env(token))
    finally:
        sandbox.set_faults("")
    assert_clean_failure(done, 1, "text/html", "not JSON", token=token)


@pytest.mark.parametrize(
    "fault",
    [pytest.param("short_body", marks=pytest.mark.slow), "cut_body"],  # one by default
)
def test_a_download_cut_short_is_a_failed_record_then_mended(
    sandbox: Any, tmp_path: Path, fault: str
) -> None:
    """Every attachment download comes short: the extract ends with exit 3, no wrong blob is
    kept, `haul failures` lists them; the next extract, with the fault gone, stages them whole."""
    info = sandbox.info
    token = info["tokens"]["admin"]
    config = write_config(tmp_path, info, queues=["DEV"])
    env = tokens_env(token)
    sandbox.set_faults(f"{fault}:1.0@*/attachments/*/*")
    try:
        done = run_haul("extract", "--config", config, env=env)
    finally:
        sandbox.set_faults("")
    assert_clean_failure(done, 3, "record(s) failed", "haul failures", token=token)
    listed = run_haul("failures", "--config", config, env=env)
    assert "attachment" in listed.stdout and "bytes" in listed.stdout
    with sqlite3.connect(staging_db(tmp_path)) as db:
        blobs = db.execute(
            "SELECT count(*) FROM records WHERE entity = 'attachment' AND blob IS NOT NULL"
        ).fetchone()[0]
    assert blobs == 0

    again = run_haul("extract", "--config", config, env=env)

    assert again.returncode == 0, again.stderr
    with sqlite3.connect(staging_db(tmp_path)) as db:
        missing = db.execute(
            "SELECT count(*) FROM records WHERE entity = 'attachment' AND blob IS NULL"
        ).fetchone()[0]
        problems = db.execute("SELECT count(*) FROM problems").fetchone()[0]
    assert missing == 0 and problems == 0
    assert files_containing(tmp_path, token) == []


def test_sigterm_mid_load_stops_cleanly_and_the_rerun_finishes(
    sandbox: Any, tmp_path: Path
) -> None:
    """SIGTERM while loading: exit 1 with the resume hint, run recorded as interrupted; the same
    command again loads the rest, each record once."""
    import signal
    import subprocess

    from tests.helpers.cli_fixtures import HAUL

    info = sandbox.info
    token = info["tokens"]["admin"]
    config = write_config(tmp_path, info, queues=list(info["queues"]["source"]))
    env = tokens_env(token)
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    # held comment imports keep the load going until it is asked to stop, and then let it
    # finish what it has in flight
    sandbox.set_faults("hold:comments@*/comments/_import")
    load = subprocess.Popen(
        [str(HAUL), "load", "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    store = staging_db(tmp_path)
    try:
        wait_for(
            lambda: loaded_issues(store) and sandbox.held("comments"),
            timeout=60,
            what="a first issue loaded and a comment held",
        )
        load.send_signal(signal.SIGTERM)
        wait_for(lambda: asked_to_stop(store), timeout=60, what="the load asked to stop")
        sandbox.set_faults("")
        out, err = load.communicate(timeout=60)
    finally:
        sandbox.set_faults("")
        if load.poll() is None:
            load.kill()
    assert load.returncode == 1, err
    assert last_line(err) == "haul: stopped; run the same command to resume"
    assert "Traceback" not in out + err and "Aborted" not in err
    with sqlite3.connect(staging_db(tmp_path)) as db:
        outcome = db.execute("SELECT outcome FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert outcome == "interrupted"

    again = run_haul("load", "--config", config, env=env)

    assert again.returncode == 0, again.stderr
    table = counts_table(again.stdout)
    assert table["total"]["loaded"] == table["total"]["to load"]
    assert table["total"]["failed"] == table["total"]["pending"] == 0


def loaded_issues(path: Path) -> int:
    """How many issues the ledger holds as loaded (0 while the store is still being made)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            row = db.execute(
                "SELECT count(*) FROM ledger WHERE entity = 'issue' AND status = 'done'"
            ).fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


def test_an_unexpected_error_is_one_line_with_the_log(tmp_path: Path) -> None:
    """Something haul did not foresee: one line naming it and the log, exit 1."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"])
    staging_db(tmp_path).parent.mkdir(parents=True)
    with sqlite3.connect(staging_db(tmp_path)) as db:  # a store whose ledger is not a table
        db.execute("CREATE TABLE records (x)")
        db.execute("PRAGMA user_version = 1")
    done = run_haul("status", "--config", config, env=haul_env())
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert last_line(done.stderr).startswith("haul: ")


def test_an_error_object_where_a_list_belongs_is_that_issues_problem(
    sandbox: Any, tmp_path: Path
) -> None:
    """The links listing answers 200 with an error object: never a hang, each issue a failed
    record (exit 3, listed by haul failures); the next extract drains them whole."""
    info = sandbox.info
    token = info["tokens"]["admin"]
    config = write_config(tmp_path, info, queues=["DEV"])
    env = tokens_env(token)
    sandbox.set_faults("error_object:1.0@*/links")
    try:
        started = time.monotonic()
        done = run_haul("extract", "--config", config, env=env)
        took = time.monotonic() - started
    finally:
        sandbox.set_faults("")
    assert_clean_failure(done, 3, "record(s) failed", token=token)
    assert took < 60
    listed = run_haul("failures", "--config", config, env=env)
    assert "expected a list of links" in listed.stdout

    again = run_haul("extract", "--config", config, env=env)

    assert again.returncode == 0, again.stderr
    with sqlite3.connect(staging_db(tmp_path)) as db:
        problems = db.execute("SELECT count(*) FROM problems").fetchone()[0]
        undrained = db.execute(
            "SELECT count(*) FROM records r WHERE entity = 'issue' AND NOT EXISTS"
            " (SELECT 1 FROM drained d WHERE d.source_id = r.source_id)"
        ).fetchone()[0]
    assert problems == 0 and undrained == 0
