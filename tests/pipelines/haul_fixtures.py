"""Helpers for pipeline tests: a config pointing at a sandbox, clients of its orgs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from haul.connectors.tracker import TrackerClient

TOKEN_ENV = "HAUL_TEST_TOKEN"

CONFIG = """\
[source]
tracker_url = "{tracker}"
org_id = "{source}"
token_env = "{token_env}"
[target]
tracker_url = "{tracker}"
org_id = "{target}"
token_env = "{token_env}"
[scope]
queues = [{queues}]
[mapping]
queues = {{ {mapping} }}
default_user = "robot"
[staging]
path = "haul.db"
{extra}
"""


def source_queues(info: dict[str, Any]) -> list[str]:
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    reply = httpx.get(info["tracker"] + "/queues", headers=headers, params={"perPage": 100})
    reply.raise_for_status()
    return [queue["key"] for queue in reply.json()]


def write_config(
    directory: Path,
    info: dict[str, Any],
    *,
    queues: list[str],
    mapping: dict[str, str] | None = None,
    extra: str = "",
) -> Path:
    mapping = {"TEST": "NEW"} if mapping is None else mapping
    path = directory / "haul.toml"
    path.write_text(
        CONFIG.format(
            tracker=info["tracker"],
            source=info["orgs"]["source"],
            target=info["orgs"]["target"],
            token_env=TOKEN_ENV,
            queues=", ".join(f'"{q}"' for q in queues),
            mapping=", ".join(f'{k} = "{v}"' for k, v in mapping.items()),
            extra=extra,
        ),
        encoding="utf-8",
    )
    return path


def client_for(info: dict[str, Any], org: str) -> TrackerClient:
    return TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"][org]
    )


def environ(info: dict[str, Any]) -> dict[str, str]:
    return {TOKEN_ENV: info["tokens"]["admin"]}
