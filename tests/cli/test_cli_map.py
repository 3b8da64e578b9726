"""`haul map` after a `haul run`: the key map lists every loaded issue with its key in the
target as the target's API reports it, and the export's `id_map` table holds the same rows.

One migration (queue TEST remapped to NEW) serves the module, and the tests of the commands
that only read its store at their edges (a closed pipe, a read-only store); nothing here
changes the target.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.cli_fixtures import HAUL, run_haul, source_queues, tokens_env, write_config

MAPPING = {"TEST": "NEW"}


@dataclass
class Migration:
    info: dict[str, Any]
    directory: Path
    config: Path
    env: dict[str, str]
    run: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    """Every queue of a tiny source org migrated by one `haul run`, TEST into NEW."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        directory = tmp_path_factory.mktemp("map")
        config = write_config(directory, info, queues=source_queues(info), queue_mapping=MAPPING)
        env = tokens_env(info["tokens"]["admin"])
        run = run_haul("run", "--config", config, env=env)
        assert run.returncode == 0, run.stderr
        yield Migration(info, directory, config, env, run)


def _search(info: dict[str, Any], org: str, queue: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    reply = httpx.post(
        info["tracker"] + "/issues/_search",
        headers=headers,
        params={"perPage": 100},
        json={"query": f"Queue: {queue}"},
        timeout=30,
    )
    reply.raise_for_status()
    assert reply.headers["X-Total-Pages"] == "1"
    issues: list[dict[str, Any]] = reply.json()
    return issues


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_map_lists_every_loaded_issue_with_its_target_key(migrated: Migration) -> None:
    """Each source issue has one row whose target key is an issue of the target holding the
    same summary, every target issue is some row's target, and `moved` says whether the key
    changed (every TEST issue: it went to NEW)."""
    printed = run_haul("map", "--config", migrated.config, "--format", "csv", env=migrated.env)
    assert printed.returncode == 0, printed.stderr
    rows = [row for row in _csv_rows(printed.stdout) if row["entity"] == "issue"]
    by_source = {row["source_key"]: row for row in rows}
    assert len(by_source) == len(rows)
    queues = source_queues(migrated.info)
    source = {i["key"]: i for q in queues for i in _search(migrated.info, "source", q)}
    target = {
        i["key"]: i for q in queues for i in _search(migrated.info, "target", MAPPING.get(q, q))
    }
    assert set(by_source) == set(source)
    assert {row["target_key"] for row in rows} == set(target)
    for key, row in by_source.items():
        assert target[row["target_key"]]["summary"] == source[key]["summary"], key
        assert row["target_id"] == row["target_key"]  # an issue is known by its key
        assert row["moved"] == ("true" if row["target_key"] != key else "false")
        assert (row["moved"] == "true") == key.startswith("TEST-"), key


def test_the_exports_id_map_table_holds_the_same_rows(migrated: Migration) -> None:
    """`haul export` writes id_map.csv with exactly the rows `haul map` prints."""
    printed = run_haul("map", "--config", migrated.config, env=migrated.env)
    assert printed.returncode == 0, printed.stderr
    out = migrated.directory / "exports"
    exported = run_haul(  # the table alone: this migration did not stage the changelog
        "export", "--config", migrated.config, "--out", out, "--entities", "id_map",
        env=migrated.env,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    (table,) = (out / "latest").glob("id_map.csv")
    in_export = _csv_rows(table.read_text(encoding="utf-8"))
    columns = ("entity", "source_id", "source_key", "target_id", "target_key", "moved")
    mapped = _csv_rows(printed.stdout)
    assert {row["entity"] for row in mapped} >= {"issue", "attachment"}
    assert sorted(tuple(row[c] for c in columns) for row in in_export) == sorted(
        tuple(row[c] for c in columns) for row in mapped
    )


def test_map_as_json_for_one_entity(migrated: Migration) -> None:
    """`--format json --entity attachment` prints the tracker files' rows only, as objects,
    each keyed by the path the tracker's links give it (`<issue key>/attachments/<id>`) on
    both sides: a file each side's API lists on that issue under that id (the key does not
    repeat the issue, as the staged id `<issue key>/<id>` would make it)."""
    printed = run_haul(
        "map", "--config", migrated.config, "--format", "json", "--entity", "attachment",
        env=migrated.env,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    rows = json.loads(printed.stdout)
    assert rows and {row["entity"] for row in rows} == {"attachment"}
    info = migrated.info
    for row in rows:
        source_issue, _, source_file = row["source_key"].partition("/attachments/")
        issue, _, file_id = row["target_key"].partition("/attachments/")
        assert row["source_id"] == f"{source_issue}/{source_file}" and file_id == row["target_id"]
        assert row["moved"] is (row["source_key"] != row["target_key"])
        assert source_issue.startswith("TEST-") == issue.startswith("NEW-"), row
        assert source_file in _file_ids(info, "source", source_issue), row
        assert file_id in _file_ids(info, "target", issue), row


def _file_ids(info: dict[str, Any], org: str, issue: str) -> set[str]:
    """The ids of the files the org's tracker lists on `issue`."""
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    listed = httpx.get(f"{info['tracker']}/issues/{issue}/attachments", headers=headers)
    listed.raise_for_status()
    return {str(file["id"]) for file in listed.json()}


def test_map_refuses_an_entity_it_does_not_hold(migrated: Migration) -> None:
    """An unknown `--entity` is a usage error (exit 2) that names the choices."""
    printed = run_haul("map", "--config", migrated.config, "--entity", "sprint", env=migrated.env)
    assert printed.returncode == 2
    assert "sprint" in printed.stderr and "wiki_page" in printed.stderr


@pytest.mark.parametrize("command", [["map"], ["status"]])
def test_a_closed_pipe_on_stdout_ends_the_command_quietly(
    migrated: Migration, command: list[str]
) -> None:
    """`haul map | head`: stdout is a pipe whose reader is gone (closed before haul starts, so
    every write finds it closed): haul drops its output, says nothing, and exits as the
    command would have (0), not with an internal error."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [str(HAUL), *command, "--config", str(migrated.config)],
            stdout=write, stderr=subprocess.PIPE, env=migrated.env, text=True, timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, "")


def _as_owner_without_privileges() -> list[str]:
    """The prefix that runs a command so that file modes bite: as is for a user, in a user
    namespace of its own for root (mapped to a plain uid there, it owns its files and has no
    capability over them: a 0444 file is read-only, as for anyone)."""
    if os.geteuid() != 0:
        return []
    mapped = ["unshare", "--user", "--map-user=1000", "--map-group=1000"]
    if subprocess.run([*mapped, "true"], capture_output=True, check=False).returncode:
        pytest.skip("root, and no user namespaces (unshare --user): file modes cannot bite")
    return mapped


def test_status_reads_a_read_only_store(migrated: Migration, tmp_path: Path) -> None:
    """A copy of the store in a folder and file haul may not write (0555, 0444; in WAL mode,
    without its -shm file, as a copy off a server is): `haul status` prints the status, as
    for a writable store, and writes nothing there."""
    staging = tmp_path / "staging"
    staging.mkdir()
    config = tmp_path / "haul.toml"
    config.write_text(migrated.config.read_text(encoding="utf-8"), encoding="utf-8")
    with (
        sqlite3.connect(migrated.directory / "staging" / "haul.db") as source,
        sqlite3.connect(staging / "haul.db") as copy,
    ):
        source.backup(copy)
    (staging / "haul.db").chmod(0o444)
    staging.chmod(0o555)
    try:
        done = subprocess.run(
            [*_as_owner_without_privileges(), str(HAUL), "status", "--config", str(config)],
            capture_output=True, env=migrated.env, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert [path.name for path in staging.iterdir()] == ["haul.db"]
    finally:
        staging.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert "next: everything staged is loaded" in done.stdout, done.stdout
