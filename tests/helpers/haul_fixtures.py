"""Helpers for pipeline tests: a config pointing at a sandbox, clients of its orgs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config

TOKEN_ENV = "HAUL_TEST_TOKEN"


def source_queues(info: dict[str, Any]) -> list[str]:
    """The source org's queues, as the sandbox's JSON line lists them."""
    return list(info["queues"]["source"])


def write_config(
    directory: Path,
    info: dict[str, Any],
    *,
    queues: list[str],
    mapping: dict[str, str] | None = None,
    extra: str = "",
    services: tuple[str, ...] = ("tracker",),
    scope: dict[str, Any] | None = None,
    wiki_roots: list[str] | None = None,
) -> Path:
    """haul.toml in `directory` for the sandbox `info`, both orgs' token in TOKEN_ENV."""
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        # fixed budgets: these tests are about what moves, not how fast; the CLI tests and
        # tests/connectors/test_budget_on_sandbox.py run the default "auto" budget
        endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=queues,
        queue_mapping={"TEST": "NEW"} if mapping is None else mapping,
        sections=extra,
        services=services,
        scope_extra=scope or {},
        wiki_roots=wiki_roots,
    )
    return write_sandbox_config(directory, info, options)


def client_for(info: dict[str, Any], org: str) -> TrackerClient:
    return TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"][org]
    )


def environ(info: dict[str, Any]) -> dict[str, str]:
    return {TOKEN_ENV: info["tokens"]["admin"]}


WRITES = ("POST", "PUT", "DELETE", "PATCH")
READS_BY_POST = ("_search", "_count", "_findByUnique", "_clear")  # searches sent as POST


def writes(stats: dict[str, Any]) -> dict[str, int]:
    """The sandbox's requests that change something, by route (from `sandbox.stats()`)."""
    return {
        route: n
        for route, n in stats["by_route"].items()
        if route.split(" ")[0] in WRITES and not route.endswith(READS_BY_POST)
    }


def written_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The write requests between two `writes()` snapshots, by route."""
    return {
        route: n - before.get(route, 0) for route, n in after.items() if n != before.get(route, 0)
    }


def mapping_files(directory: Path, mapping: dict[str, str]) -> dict[str, str]:
    """Write each of `users_file` and `groups_file` given as CSV text into `directory` (made if
    needed); the mapping with their file names in place of the text."""
    directory.mkdir(parents=True, exist_ok=True)
    named = dict(mapping)
    for name in ("users_file", "groups_file"):
        if name in named:
            (directory / f"{name}.csv").write_text(named[name], encoding="utf-8")
            named[name] = f"{name}.csv"
    return named


def lose_store(path: Path) -> None:
    """The staging store gone whole, as with a lost disk: database, WAL, blobs."""
    for leftover in path.parent.glob(f"{path.name}*"):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
