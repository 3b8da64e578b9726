"""Helpers for the trust tests: a migrated sandbox org, and edits planted in its target."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx

from tests.helpers.cli_fixtures import (
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    run_haul,
    source_queues,
    staging_db,
    start_haul,
    stop,
    tokens_env,
    wait_for,
    write_config,
)

__all__ = [
    "SOURCE_TOKEN_ENV",
    "TARGET_TOKEN_ENV",
    "loaded_rows",
    "migrated",
    "run_haul",
    "source_queues",
    "staging_db",
    "start_haul",
    "stop",
    "target_call",
    "tokens_env",
    "wait_for",
    "write_config",
]


def migrated(directory: Path, info: dict[str, Any]) -> tuple[Path, dict[str, str]]:
    """A config for the sandbox, after a complete `haul run`; (config path, haul's env)."""
    config = write_config(directory, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    done = run_haul("run", "--config", config, env=env)
    assert done.returncode == 0, done.stderr
    return config, env


def target_call(info: dict[str, Any], method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request to the sandbox's target org with the admin token; raises on an error reply."""
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    base = info["tracker"]
    if path.startswith("/_sandbox"):
        base = base.rsplit("/", 1)[0]
    reply = httpx.request(method, base + path, headers=headers, timeout=30, **kwargs)
    reply.raise_for_status()
    return reply


def loaded_rows(directory: Path, entity: str) -> list[tuple[str, str, str]]:
    """(source id, target id, target issue key) of each loaded row of `entity`."""
    staged = "attachment" if entity.endswith("attachment") else entity
    with sqlite3.connect(staging_db(directory)) as db:
        rows = db.execute(
            "SELECT l.source_id, l.target_id, r.parent FROM ledger l JOIN records r"
            " ON r.entity = ? AND r.source_id = l.source_id"
            " WHERE l.entity = ? AND l.status = 'done' ORDER BY l.source_id",
            [staged, entity],
        ).fetchall()
    owner = (lambda s, p: s) if entity == "issue" else (lambda s, p: p)
    return [(s, t, owner(s, p).replace("TEST-", "NEW-")) for s, t, p in rows]


HELD = "comments"  # the hold that keeps a load under way: see load_under_way


def load_under_way(sandbox: Any, directory: Path) -> tuple[Path, dict[str, str], Any]:
    """Extract the sandbox, then start a load whose comment imports the sandbox holds; return
    (config, env, the load process) once records are done and a comment is held: the load
    stays under way until the caller releases the hold (or clears the faults) or ends it."""
    info = sandbox.info
    config = write_config(directory, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    sandbox.set_faults(f"hold:{HELD}@*/comments/_import")  # after the issues they are on
    load = start_haul("load", "--config", config, env=env)

    def loading() -> bool:
        with sqlite3.connect(staging_db(directory)) as db:
            query = "SELECT count(*) FROM ledger WHERE status = 'done'"
            return bool(db.execute(query).fetchone()[0]) and sandbox.held(HELD) > 0

    wait_for(loading, 60, "the load to load records and be held")
    return config, env, load
