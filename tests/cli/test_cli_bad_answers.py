"""Bad answers from a server, each named in the words a person uses: a JSON reply cut short,
and times sent as epoch milliseconds (normalised, not 422 on every record)."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.helpers.cli_fixtures import run_haul, source_queues, staging_db, tokens_env, write_config


def test_a_json_reply_cut_short_says_so(sandbox: Any, tmp_path: Path) -> None:
    """Every search reply is half its JSON: exit 1, and the last line says the reply broke
    off after N bytes, not "Unterminated string starting at: line 1 column N"."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    sandbox.set_faults("short_body:1.0@*/issues/_search")
    try:
        done = run_haul("extract", "--config", config, env=env)
    finally:
        sandbox.set_faults("")

    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stderr.splitlines()[-1]
    assert "the JSON reply breaks off after" in last and "cut short on the way" in last
    assert "Unterminated" not in done.stderr and "Traceback" not in done.stderr


def test_times_in_epoch_milliseconds_are_loaded_as_dates(sandbox: Any, tmp_path: Path) -> None:
    """Staged comments whose times came as epoch milliseconds load (exit 0) with the same
    instant in the target, instead of each failing with a 422."""
    info = sandbox.info
    queue = source_queues(info)[0]
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    with sqlite3.connect(staging_db(tmp_path)) as db:
        rows = db.execute(
            "SELECT source_id, json_extract(raw, '$.createdAt') FROM records"
            " WHERE entity = 'comment' AND source_id LIKE ?",
            [f"{queue}-%"],
        ).fetchall()
        for source_id, created in rows:
            moment = datetime.strptime(created, "%Y-%m-%dT%H:%M:%S.%f%z")
            ms = round(moment.timestamp() * 1000)
            db.execute(
                "UPDATE records SET raw = json_set(raw, '$.createdAt', ?)"
                " WHERE entity = 'comment' AND source_id = ?",
                [ms, source_id],
            )
        changed = len(rows)
    assert changed > 0

    done = run_haul("load", "--config", config, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    verify = run_haul("verify", "--config", config, "--entities", "comment", env=env)
    assert verify.returncode == 0, verify.stdout + verify.stderr  # the same instants


async def test_an_item_listed_without_its_identity_is_a_problem_not_dropped() -> None:
    """A user listed without its uid cannot be staged: it becomes a problem of its own (which
    `haul failures` lists and which makes the extract exit 3), never a silent gap."""
    from haul.pipelines.tracker.organisation.streams import tracker_list

    async def users() -> list[dict[str, Any]]:
        return [{"uid": 1, "login": "ann"}, {"login": "ghost"}]

    pages = [page async for page in tracker_list("user", users, id_key="uid").pages(lambda: None)]

    assert [row["source_id"] for row in pages[0].rows] == ["1"]
    assert pages[0].problems == [
        ("user", "user listing", "the tracker listed 1 user(s) without their uid")
    ]


async def test_a_listing_that_comes_whole_again_settles_its_problem() -> None:
    """The next listing with every identity clears the listing's problem (exit 0 again)."""
    from haul.pipelines.tracker.organisation.streams import tracker_list

    async def users() -> list[dict[str, Any]]:
        return [{"uid": 1, "login": "ann"}]

    pages = [page async for page in tracker_list("user", users, id_key="uid").pages(lambda: None)]

    assert pages[0].problems == [] and pages[0].settled == [("user", "user listing")]


def test_an_html_page_answering_an_upload_fails_that_file_not_the_run(
    sandbox: Any, tmp_path: Path
) -> None:
    """A page of HTML with status 200 answers every attachment upload: each file's record
    fails (exit 3) naming the service, the method and path, the status, the content type and
    what to do; the issues and comments load; no "internal error", no JSONDecodeError."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    sandbox.set_faults("html:1.0@*/attachments/_import")
    try:
        done = run_haul("load", "--config", config, env=env)
    finally:
        sandbox.set_faults("")
    failures = run_haul("failures", "--config", config, env=env).stdout

    assert done.returncode == 3, done.stdout + done.stderr
    assert "internal error" not in done.stderr and "JSONDecodeError" not in done.stderr
    lines = [line for line in failures.splitlines() if line.startswith("attachment ")]
    assert lines, failures
    assert all("tracker POST" in line and "/attachments/_import" in line for line in lines)
    assert all("-> 200 (text/html): the reply is not JSON but text/html" in line for line in lines)
    assert all("haul load --retry-failed" in line for line in lines)
    assert "issue " not in failures and "comment " not in failures
