"""An httpx transport that sends through aiohttp's connection pool.

httpx stays the API every client is written against (requests, responses, errors,
``MockTransport`` in tests); only the wire underneath changes. httpx's own pool (httpcore
and its pure-Python h11 parser) cost about 1.9 ms of CPU per request here, aiohttp's C
parser and pool about 0.5 ms (``bench/http_overhead.py``), and CPU per request is what
bounds a migration once the rate budget is out of the way.

Errors keep httpx's meaning, because the retry policy and the exactly-once protocol rest
on it: only a failure *before* the request left this machine (no connection could be
made) becomes a connect-stage error, safe to repeat for a write; a connection that broke
once the request was on it becomes a read/protocol error, which a write never repeats.
(The httpx-aiohttp package maps a server disconnect to ``ConnectTimeout``, which would
repeat a write the server may have applied; hence this module.)
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import aiohttp
import httpx
from yarl import URL

CHUNK_SIZE = 64 * 1024
# A connection idle this long is not used again. A server closes an idle connection when its
# own keep-alive runs out (uvicorn, the sandbox's, after 5 s; many others after 5 s too), and a
# request sent on it as it closes is lost on the way: a read is retried, but a write is
# uncertain (was it applied?) and must be looked for. aiohttp keeps them 15 s: the
# 100 000-issue run met that race on one import and a few reads, between phases.
IDLE_KEEPALIVE_S = 4.0


@contextmanager
def _mapped(request: httpx.Request) -> Iterator[None]:
    """Re-raise aiohttp's errors as the httpx error of the same stage."""
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:  # no connection within the connect timeout
        raise httpx.ConnectTimeout(str(exc) or "connect timeout", request=request) from exc
    except aiohttp.ClientConnectorError as exc:  # refused, DNS, TLS handshake: nothing sent
        raise httpx.ConnectError(str(exc), request=request) from exc
    except aiohttp.ServerTimeoutError as exc:  # the socket went quiet mid-reply
        raise httpx.ReadTimeout(str(exc) or "read timeout", request=request) from exc
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.ClientResponseError as exc:  # a reply aiohttp could not parse
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc
    except (aiohttp.ClientOSError, ConnectionError) as exc:  # reset or broken pipe mid-way
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:
        raise httpx.UnsupportedProtocol(str(exc), request=request) from exc


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    view = memoryview(body)
    for start in range(0, len(view), CHUNK_SIZE):
        yield bytes(view[start : start + CHUNK_SIZE])


class _Body(httpx.AsyncByteStream):
    """The reply body, read from aiohttp chunk by chunk; closing it frees the connection."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped(self._request):
            async for chunk in self._response.content.iter_chunked(CHUNK_SIZE):
                yield chunk

    async def aclose(self) -> None:
        self._response.release()


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (HTTPS_PROXY, HTTP_PROXY, NO_PROXY)."""
    parts = urlsplit(url)
    if parts.hostname is None or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Send httpx requests over one aiohttp pool of at most ``max_connections``."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext,
        max_connections: int,
        proxy: str | None = None,
        keepalive_s: float = IDLE_KEEPALIVE_S,
    ) -> None:
        self._ssl = ssl_context
        self._max_connections = max_connections
        self._proxy = proxy
        self._keepalive_s = keepalive_s
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        # made on first use: a session belongs to the event loop it was made in
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self._max_connections,
                    ssl=self._ssl,
                    keepalive_timeout=self._keepalive_s,
                ),
                # httpx keeps the cookies and decodes the body; the proxy is looked up once
                # (env_proxy), not by aiohttp's trust_env in a thread on every request
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None),
            )
            # aiohttp resends a PUT or DELETE whose reused connection broke; whether a write
            # is repeated is the retry policy's call alone (aiohttp's own test client turns
            # this off the same way)
            self._session._retry_connection = False
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._open()
        timeouts = request.extensions.get("timeout", {})
        body: bytes | AsyncIterator[bytes] | httpx.AsyncByteStream | None
        try:
            body = request.content or None
        except httpx.RequestNotRead:  # a streamed upload: aiohttp reads it as it sends
            body = request.stream  # type: ignore[assignment]
        if isinstance(body, bytes) and len(body) > CHUNK_SIZE:
            body = _chunks(body)  # sent piece by piece (Content-Length is already set)
        with _mapped(request):
            response = await session.request(
                request.method,
                URL(str(request.url), encoded=True),
                headers=[
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                ],
                data=body,
                allow_redirects=False,  # HttpCore follows them, refusing another host
                compress=False,
                proxy=self._proxy,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=timeouts.get("pool"),
                    sock_connect=timeouts.get("connect"),
                    sock_read=timeouts.get("read"),
                ),
            )
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
            await asyncio.sleep(0)  # let the connector's transports close before the loop does
