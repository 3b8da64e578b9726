"""``GET /_sandbox/info`` (sandbox only, on the tracker's port): the JSON line ``haul sandbox
serve`` prints (the three services' URLs, the org ids, each org's web hosts, the source's
queues, wiki roots and surveys, the tokens), so that a tool given only the tracker's URL finds
the rest (``haul init --sandbox URL``).

It needs no token: whoever has only the URL has none yet. The tokens are told only to a client
on the sandbox's own machine (a loopback address); a sandbox served on another interface
(``--host 0.0.0.0``) tells the rest to everyone else, and not the tokens.
"""

from __future__ import annotations

import ipaddress

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.world import World


async def sandbox_info(request: Request) -> Response:
    """The sandbox's JSON line; without ``tokens`` to a client that is not on loopback."""
    world: World = request.app.state.world
    info = dict(world.info)
    if not _on_loopback(request):
        info.pop("tokens", None)
    return JSONResponse(info)


def _on_loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
