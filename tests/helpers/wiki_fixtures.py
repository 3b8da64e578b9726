"""Clients of a sandbox's wiki, the root mapping the wiki tests migrate with, snapshots of both
trees, and the roles a page grants."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from haul.connectors.wiki import WikiClient
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.sync.references import References, WebHosts, moved_slug
from haul.pipelines.wiki.content import Rewriter, SlugMap
from haul.sandbox.people import ADMIN_LOGIN
from tests.helpers.haul_fixtures import TOKEN_ENV, source_queues
from tests.helpers.wiki_snapshot import wiki_snapshot

TEXT_CELLS = ("ticket", "string", "ticket_field")


def wiki_client(info: dict[str, Any], org: str) -> WikiClient:
    return WikiClient.connect(
        base_url=info["wiki"], token=info["tokens"]["admin"], org_id=info["orgs"][org]
    )


def mapping_for(info: dict[str, Any]) -> dict[str, str]:
    """The first root moves elsewhere; the others keep their slugs."""
    first = info["wiki_roots"]["source"][0]
    return {first: "archive/" + first.rpartition("/")[2]}


def snapshots(info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    roots = list(info["wiki_roots"]["source"])
    mapping = mapping_for(info)

    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        async with wiki_client(info, "source") as source, wiki_client(info, "target") as target:
            return (
                await wiki_snapshot(source, {root: root for root in roots}),
                await wiki_snapshot(target, {root: mapping.get(root, root) for root in roots}),
            )

    return asyncio.run(read())


def rewriter_for(info: dict[str, Any], services: tuple[str, ...] = ("tracker", "wiki")) -> Rewriter:
    """The rewriting a migration of the sandbox's wiki applies (its roots mapped, TEST to NEW,
    the web hosts of the services it moves; every mentioned login is the target's too)."""
    roots = tuple(info["wiki_roots"]["source"])
    web = info["web"]
    hosts = {
        name: WebHosts(web["source"][name], web["target"][name]) if name in services else None
        for name in ("tracker", "wiki")
    }
    references = References(page=moved_slug(roots, mapping_for(info)), **hosts)
    return Rewriter(SlugMap(roots, mapping_for(info)), {"TEST": "NEW"}, references)


def keys_rewritten(grid: dict[str, Any], rewriter: Rewriter) -> dict[str, Any]:
    """A source grid as the target should hold it: tracker keys in text cells remapped."""
    types = [kind for _, _, kind in grid["columns"]]
    rows = [
        [
            rewriter.keys(value) if isinstance(value, str) and kind in TEXT_CELLS else value
            for value, kind in zip(row, types, strict=False)
        ]
        for row in grid["rows"]
    ]
    return {**grid, "rows": rows}


def wiki(info: dict[str, Any], org: str, token: str = "admin") -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens'][token]}", "X-Org-Id": info["orgs"][org]}
    return httpx.Client(base_url=info["wiki"], headers=headers, timeout=30)


def roles(info: dict[str, Any], org: str, slug: str) -> dict[str, str]:
    """Every user's role on a page by login, the admin's own account left out (it owns every
    page it makes in the target)."""
    with wiki(info, org) as client:
        reply = client.get(
            info["wiki"].removesuffix("/v1") + "/_sandbox/roles", params={"slug": slug}
        )
        assert reply.status_code == 200, reply.text
        found = dict(reply.json()["roles"])
    found.pop(ADMIN_LOGIN, None)
    return found


def write_wiki_config(directory: Path, info: dict[str, Any], **options: Any) -> Path:
    """A config migrating the tracker and the wiki of a sandbox, its roots mapped."""
    settings: dict[str, Any] = {
        "source_token_env": TOKEN_ENV,
        "endpoint_extra": {"read_rps": 2000, "write_rps": 2000},
        "queues": source_queues(info),
        "services": ("tracker", "wiki"),
        "wiki_mapping": mapping_for(info),
    }
    return write_sandbox_config(directory, info, SandboxConfig(**{**settings, **options}))
