"""The incremental extract at the edges of what a source says: an issue stamped in the
future, an issue listed without its key. Neither may make a later run skip anything."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.helpers.cli_fixtures import (
    run_haul,
    source_issues,
    source_queues,
    tokens_env,
    write_config,
)


def _admin(info: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"]["source"]}


def _staged_issues(directory: Path) -> dict[str, Any]:
    with sqlite3.connect(directory / "staging" / "haul.db") as db:
        rows = db.execute(
            "SELECT source_id, json_extract(raw, '$.summary') FROM records WHERE entity = 'issue'"
        ).fetchall()
    return dict(rows)


def test_an_issue_stamped_in_the_future_does_not_hide_later_changes(
    sandbox: Any, tmp_path: Path
) -> None:
    """One issue's update time a day ahead (a clock that ran ahead): the next extract does not
    carry the watermark there, so an edit made afterwards is staged by the one after."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    early, edited = (issue["key"] for issue in source_issues(info, source_queues(info)[0])[:2])
    ahead = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    httpx.put(
        f"{info['tracker'].removesuffix('/v3')}/_sandbox/issues/{early}/updated_at",
        headers=_admin(info),
        json={"updatedAt": ahead},
    ).raise_for_status()
    assert run_haul("extract", "--config", config, env=env).returncode == 0

    httpx.patch(
        f"{info['tracker']}/issues/{edited}",
        headers=_admin(info),
        json={"summary": "edited after the future one"},
    ).raise_for_status()
    done = run_haul("extract", "--config", config, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert _staged_issues(tmp_path)[edited] == "edited after the future one"


def test_an_issue_listed_without_its_key_is_named_and_read_again(
    sandbox: Any, tmp_path: Path
) -> None:
    """The search lists an issue without its key: the extract names it and exits 3; the
    watermark stays before it, so the next extract (the key back) stages it and exits 0."""
    info = sandbox.info
    queues = source_queues(info)
    config = write_config(tmp_path, info, queues=queues)
    env = tokens_env(info["tokens"]["admin"])
    everyone = {issue["key"] for queue in queues for issue in source_issues(info, queue)}
    sandbox.set_faults("no_key:1.0@*/issues/_search")
    try:
        first = run_haul("extract", "--config", config, env=env)
    finally:
        sandbox.set_faults("")
    failures = run_haul("failures", "--config", config, env=env).stdout

    assert first.returncode == 3, first.stdout + first.stderr
    assert "the tracker listed an issue without a key" in failures
    assert len(everyone - set(_staged_issues(tmp_path))) == len(queues)  # one per queue's page

    again = run_haul("extract", "--config", config, env=env)

    assert again.returncode == 0, again.stdout + again.stderr
    assert set(_staged_issues(tmp_path)) == everyone
    assert "without a key" not in run_haul("failures", "--config", config, env=env).stdout


def test_an_issue_the_deletion_listing_gives_without_its_key_is_named(
    sandbox: Any, tmp_path: Path
) -> None:
    """A later extract lists a queue whole to look for deleted issues (the source counts one
    fewer than are staged), and the search gives an issue without its key: that issue is
    named by its id among the failures, counted, and the extract exits 3, nothing judged
    deleted on that listing; the next extract (the key back) finds the deletion, exit 0."""
    info = sandbox.info
    queues = source_queues(info)
    config = write_config(tmp_path, info, queues=queues)
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    queue = queues[0]
    gone = source_issues(info, queue)[-1]["key"]
    httpx.delete(
        f"{info['tracker'].removesuffix('/v3')}/_sandbox/issues/{gone}", headers=_admin(info)
    ).raise_for_status()
    sandbox.set_faults("no_key:1.0@*/issues/_search")
    try:
        second = run_haul("extract", "--config", config, env=env)
    finally:
        sandbox.set_faults("")
    failures = run_haul("failures", "--config", config, env=env).stdout

    assert second.returncode == 3, second.stdout + second.stderr
    named = re.findall(rf"^issue {queue}:id=\S+ \(extract\): the tracker listed an issue "
                       "without a key, so no issue of its queue was judged deleted", failures,
                       re.M)  # fmt: skip
    assert len(named) == 1, failures
    assert gone in _staged_issues(tmp_path)

    third = run_haul("extract", "--config", config, env=env)

    assert third.returncode == 0, third.stdout + third.stderr
    assert gone not in _staged_issues(tmp_path)
    assert "without a key" not in run_haul("failures", "--config", config, env=env).stdout
