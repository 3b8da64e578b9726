"""A recording reverse proxy on loopback: haul talks to it as to the service, it forwards every
request to the real upstream (the sandbox) and keeps what was sent, so a test reads the exact
requests haul made (method, path, JSON body) without a seam in haul itself.

    with RecordingProxy({"tracker": info["tracker"], ...}) as proxy:
        ... run haul against proxy.urls["tracker"] ...
        proxy.sent["tracker"]  # [Sent(method, path, body), ...]
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}
NO_BODY = object()


@dataclass(frozen=True)
class Sent:
    method: str
    path: str
    body: Any  # the parsed JSON body; NO_BODY for none or a non-JSON body (an upload)


class RecordingProxy:
    """One proxy port per upstream; ``urls`` mirrors the upstreams' (same path prefix)."""

    def __init__(self, upstreams: dict[str, str]) -> None:
        self.upstreams = upstreams
        self.urls: dict[str, str] = {}
        self.sent: dict[str, list[Sent]] = {name: [] for name in upstreams}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runners: list[web.AppRunner] = []
        self._session: aiohttp.ClientSession | None = None

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(auto_decompress=False)
        for name, upstream in self.upstreams.items():
            app = web.Application(client_max_size=1 << 30)
            app.router.add_route("*", "/{tail:.*}", self._forwarder(name, upstream))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            parts = urlsplit(upstream)
            self.urls[name] = f"http://127.0.0.1:{port}{parts.path}"
            self._runners.append(runner)

    async def _stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def _forwarder(self, name: str, upstream: str) -> Any:
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(upstream))

        async def forward(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            self.sent[name].append(Sent(request.method, request.path, _json_or_none(request, body)))
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
            assert self._session is not None
            async with self._session.request(
                request.method, origin + request.path_qs, headers=headers, data=io.BytesIO(body) if body else None,
                allow_redirects=False,
            ) as reply:  # fmt: skip
                content = await reply.read()
                kept = {k: v for k, v in reply.headers.items() if k.lower() not in HOP_BY_HOP}
                return web.Response(status=reply.status, body=content, headers=kept)

        return forward


def _json_or_none(request: web.Request, body: bytes) -> Any:
    if not body or "json" not in request.headers.get("content-type", ""):
        return NO_BODY
    return json.loads(body)
