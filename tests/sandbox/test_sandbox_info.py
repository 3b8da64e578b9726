"""``GET /_sandbox/info``: the sandbox's JSON line, for a tool that has only the tracker's URL."""

from __future__ import annotations

import asyncio

import httpx

from haul.sandbox.faults import FaultPlan, RequestStats
from haul.sandbox.server import RunningSandbox
from haul.sandbox.tracker.app import build_tracker_app
from haul.sandbox.tracker.seed.generate import build_world


def test_info_is_the_json_line_with_every_orgs_web_hosts(sandbox: RunningSandbox) -> None:
    """Asked on the tracker's port with no token, the sandbox tells what its JSON line says,
    the empty org's web hosts among them, each org's apart from the others'."""
    origin = sandbox.info["tracker"].removesuffix("/v3")

    reply = httpx.get(f"{origin}/_sandbox/info", timeout=10)

    assert reply.status_code == 200
    assert reply.json() == sandbox.info
    web = sandbox.info["web"]
    assert set(web) == {"source", "target", "empty"}
    hosts = [web[role]["tracker"] for role in web] + [web[role]["wiki"] for role in web]
    assert len(set(hosts)) == 6
    assert sandbox.info["orgs"]["empty"] in web["empty"]["tracker"]


def test_info_tells_the_tokens_only_on_loopback() -> None:
    """A client that is not on the sandbox's machine is told everything but the tokens."""
    world = build_world(1, "tiny", admin_token="admin-secret", user_token="user-secret")
    world.info = {"tracker": "http://192.0.2.1:1/v3", "tokens": {"admin": "admin-secret"}}
    app = build_tracker_app(world, FaultPlan("", seed=1), RequestStats())

    async def ask(client_host: str) -> dict[str, object]:
        transport = httpx.ASGITransport(app=app, client=(client_host, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as client:
            reply = await client.get("/_sandbox/info")
        assert reply.status_code == 200
        body: dict[str, object] = reply.json()
        return body

    assert asyncio.run(ask("192.0.2.7")) == {"tracker": "http://192.0.2.1:1/v3"}
    assert asyncio.run(ask("127.0.0.1"))["tokens"] == {"admin": "admin-secret"}
