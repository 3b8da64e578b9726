"""The aiohttp transport over real loopback sockets: what each way of failing becomes.

A raw asyncio server plays the service, so each test can break the exchange at the exact
point it means: before any connection, after the request arrived, halfway through a body.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from haul.connectors.errors import AmbiguousWriteError, BodyMismatch, TransientError
from haul.connectors.http import HttpCore, ssl_context
from haul.connectors.transport import IDLE_KEEPALIVE_S, AiohttpTransport, env_proxy

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

Reply = Callable[[bytes, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """The request's head and body (by Content-Length), as received."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + await reader.readexactly(length)


@asynccontextmanager
async def serving(reply: Reply) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A one-purpose HTTP/1.1 server on loopback; yields its base URL and what it received."""
    received: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await read_request(reader)
                received.append(request)
                await reply(request, writer)
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v3", received
    finally:
        server.close()
        await server.wait_closed()


def ok(body: bytes, *, headers: str = "") -> Reply:
    async def reply(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + headers.encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()

    return reply


async def hang_up(_: bytes, writer: asyncio.StreamWriter) -> None:
    """Read the request, then close the connection without a word."""
    writer.close()


def core_for(base_url: str, **options: object) -> HttpCore:
    settings: dict = {
        "service": "tracker",
        "base_url": base_url,
        "token": "secret-token",
        "org_id": "42",
        "max_attempts": 2,
        "sleep": lambda _: asyncio.sleep(0),
    }
    settings.update(options)
    return HttpCore.of(**settings)


async def test_a_reply_is_read_decoded_and_the_connection_reused() -> None:
    body = gzip.compress(json.dumps({"key": "T-1"}).encode())
    reply = ok(body, headers="Content-Encoding: gzip\r\n")
    async with serving(reply) as (url, received), core_for(url) as core:
        assert await core.get_json("/issues/T-1") == {"key": "T-1"}
        assert await core.get_json("/issues/T-1") == {"key": "T-1"}
    assert len(received) == 2
    head = received[0].decode()
    assert head.startswith("GET /v3/issues/T-1 HTTP/1.1")
    assert "Authorization: OAuth secret-token" in head and "X-Org-ID: 42" in head


async def test_a_connection_idle_past_the_keep_alive_is_not_used_again() -> None:
    """A server drops an idle connection when its keep-alive runs out, and a write sent on it
    as it does is lost on the way: the pool opens a new one instead (IDLE_KEEPALIVE_S, below
    the 5 s of uvicorn and many servers)."""
    clients: list[object] = []

    async def reply(request: bytes, writer: asyncio.StreamWriter) -> None:
        clients.append(writer.get_extra_info("peername"))
        await ok(b"{}")(request, writer)

    async with serving(reply) as (url, _):
        transport = AiohttpTransport(ssl_context=ssl_context(), max_connections=1, keepalive_s=0.2)
        async with core_for(url, transport=transport) as core:
            await core.post_json("/issues/_import", json={})
            await core.post_json("/issues/_import", json={})  # at once: the same connection
            await asyncio.sleep(0.5)
            await core.post_json("/issues/_import", json={})  # idle past 0.2 s: a new one
    assert clients[0] == clients[1] != clients[2]
    assert IDLE_KEEPALIVE_S < 5


async def test_a_posted_body_and_a_multipart_upload_arrive_whole() -> None:
    async with serving(ok(b"{}")) as (url, received), core_for(url) as core:
        await core.post_json("/issues/_import", json={"summary": "é" * 3})
        await core.request("POST", "/attachments", files={"file": ("a.bin", b"\x00" * 70_000)})
        await core.request("POST", "/attachments", content=BIG)
    assert received[0].endswith('{"summary":"ééé"}'.encode())
    assert b"multipart/form-data" in received[1] and b"\x00" * 70_000 in received[1]
    assert received[2].endswith(BIG) and f"Content-Length: {len(BIG)}".encode() in received[2]


BIG = bytes(range(256)) * 12_000  # 3 MB: sent in pieces


async def test_a_streamed_upload_redirected_on_the_same_host_is_sent_again_whole() -> None:
    async def moved_once(request: bytes, writer: asyncio.StreamWriter) -> None:
        if request.startswith(b"POST /v3/issues/OLD-1/"):
            writer.write(
                b"HTTP/1.1 307 Temporary Redirect\r\n"
                b"Location: /v3/issues/NEW-1/attachments/_import\r\nContent-Length: 0\r\n\r\n"
            )
            await writer.drain()
        else:
            await ok(b"{}")(request, writer)

    upload = {"file": ("a.bin", io.BytesIO(b"\x01" * 100_000))}
    async with serving(moved_once) as (url, received), core_for(url) as core:
        await core.request("POST", "/issues/OLD-1/attachments/_import", files=upload)
    assert [r.split(b" ")[1] for r in received] == [
        b"/v3/issues/OLD-1/attachments/_import",
        b"/v3/issues/NEW-1/attachments/_import",
    ]
    assert all(b"\x01" * 100_000 in r for r in received)


async def test_no_connection_is_a_connect_error_and_a_write_is_retried() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    transport = AiohttpTransport(ssl_context=ssl_context(), max_connections=1)
    request = httpx.Request("GET", f"http://127.0.0.1:{port}/", extensions={"timeout": {}})
    with pytest.raises(httpx.ConnectError):
        await transport.handle_async_request(request)
    await transport.aclose()
    async with core_for(f"http://127.0.0.1:{port}/v3") as core:
        with pytest.raises(TransientError) as caught:
            await core.post_json("/issues/_import", json={})
    assert not isinstance(caught.value, AmbiguousWriteError)  # nothing was sent: safe to repeat
    assert "2 attempts" in str(caught.value)


async def test_a_hang_up_after_the_request_is_an_ambiguous_write_never_repeated() -> None:
    async with serving(hang_up) as (url, received), core_for(url) as core:
        with pytest.raises(AmbiguousWriteError):
            await core.post_json("/issues/_import", json={"summary": "once"})
        assert len(received) == 1
        with pytest.raises(TransientError):  # a read may be repeated
            await core.get_json("/issues/T-1")
    assert len(received) == 3


async def test_a_put_on_a_reused_connection_that_breaks_is_not_resent() -> None:
    """aiohttp would quietly resend a PUT whose kept-alive connection broke; haul does not."""

    async def answer_then_hang_up(request: bytes, writer: asyncio.StreamWriter) -> None:
        if request.startswith(b"GET"):
            await ok(b"{}")(request, writer)
        else:
            writer.close()

    async with serving(answer_then_hang_up) as (url, received), core_for(url) as core:
        await core.get_json("/issues/T-1")  # leaves a kept-alive connection in the pool
        with pytest.raises(AmbiguousWriteError):
            await core.request("PUT", "/pages/1/grids/2", json={"rows": []})
    assert [r.split(b" ")[0] for r in received] == [b"GET", b"PUT"]


async def test_a_body_cut_short_is_never_taken_for_the_file() -> None:
    async def short(_: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
        await writer.drain()
        writer.close()

    class Sink(bytearray):
        def write(self, data: bytes) -> int:
            self.extend(data)
            return len(data)

    async with serving(short) as (url, _), core_for(url) as core:
        with pytest.raises((BodyMismatch, TransientError)):
            await core.download("/attachments/1/file", Sink())


async def test_a_silent_server_is_a_read_timeout() -> None:
    async def silent(_: bytes, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    async with serving(silent) as (url, _):
        transport = AiohttpTransport(ssl_context=ssl_context(), max_connections=1)
        timeouts = httpx.Timeout(0.2).as_dict()
        request = httpx.Request("GET", url + "/x", extensions={"timeout": timeouts})
        with pytest.raises(httpx.ReadTimeout):
            await transport.handle_async_request(request)
        await transport.aclose()


def test_the_proxy_comes_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "tracker.internal")
    assert env_proxy("https://api.tracker.example/v3") == "http://proxy.corp:3128"
    assert env_proxy("https://tracker.internal/v3") is None
    assert env_proxy("http://plain.example/v3") is None  # no HTTP_PROXY set
