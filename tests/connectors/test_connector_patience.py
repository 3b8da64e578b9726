"""Every wait has a bound: patience for 429s and outages, a deadline per request, and
replies that arrive wrong (not JSON, short, redirected elsewhere) named for what they are."""

from __future__ import annotations

import asyncio
import io
import socket
import time
from typing import Any

import httpx
import pytest

from haul.connectors.errors import (
    AmbiguousWriteError,
    BadReplyError,
    BodyMismatch,
    RateLimitedError,
    RedirectError,
    TransientError,
    UnreachableError,
)
from haul.connectors.http import (
    FIRST_CONTACT_ATTEMPTS,
    FIRST_CONTACT_CONNECT_TIMEOUT,
    FIRST_CONTACT_PATIENCE,
    HttpCore,
)
from tests.helpers.mock_core import TOKEN

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def answering(*responses: httpx.Response) -> Any:
    """A handler answering with `responses` in turn, then the last again; it counts calls."""
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        reply = responses[min(len(calls), len(responses)) - 1]
        return httpx.Response(reply.status_code, headers=reply.headers, content=reply.content)

    handler.calls = calls  # type: ignore[attr-defined]
    return handler


def answering_error(error: Exception) -> Any:
    """A handler that raises `error` on every call, as a transport does for a dead address."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    return handler


def too_many(retry_after: str | None = None) -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after else {}
    return httpx.Response(429, headers=headers, json={"errorMessages": ["slow down"]})


async def test_a_retry_after_beyond_the_patience_stops_at_once(make_core, sleep) -> None:
    """Retry-After: 3600 with 15 minutes of patience: no wait at all, exit code 4, a time."""
    handler = answering(too_many("3600"))
    async with make_core(handler, rate_limit_patience=900) as core:
        with pytest.raises(RateLimitedError) as caught:
            await core.get_json("/myself")
    assert sleep.delays == []
    assert len(handler.calls) == 1
    assert caught.value.exit_code == 4
    assert "asks to wait 3600 s" in str(caught.value)
    assert "run the same command again after" in str(caught.value)


async def test_429s_are_waited_out_up_to_the_patience(make_core, sleep) -> None:
    """A service that keeps answering 429 is waited on for the patience, then exit code 4."""
    async with make_core(answering(too_many()), rate_limit_patience=60) as core:
        with pytest.raises(RateLimitedError, match="rate_limit_patience"):
            await core.get_json("/myself")
    assert 0 < sum(sleep.delays) <= 60


async def test_a_short_outage_does_not_end_the_run(make_core, sleep) -> None:
    """Ten 503s in a row, then an answer: far more than the old six attempts, still fine."""
    handler = answering(*[httpx.Response(503)] * 10, httpx.Response(200, json={"ok": 1}))
    async with make_core(handler, max_backoff=10) as core:
        assert await core.get_json("/myself") == {"ok": 1}
    assert len(handler.calls) == 11


async def test_an_outage_longer_than_the_patience_stops_with_a_resume_hint(
    make_core, sleep
) -> None:
    """5xx past outage_patience: TransientError (exit 1) saying how long and how to resume."""
    async with make_core(answering(httpx.Response(502)), outage_patience=30) as core:
        with pytest.raises(TransientError) as caught:
            await core.get_json("/myself")
    assert not isinstance(caught.value, RateLimitedError)
    assert caught.value.exit_code == 1
    assert "run the same command to resume" in str(caught.value)
    assert sum(sleep.delays) <= 30


async def test_html_with_200_is_a_bad_reply_after_a_few_tries(make_core, sleep) -> None:
    """A proxy's HTML page where JSON belongs: tried three times, then named as such."""
    page = httpx.Response(200, headers={"Content-Type": "text/html"}, content=b"<html>Login</html>")
    handler = answering(page)
    async with make_core(handler) as core:
        with pytest.raises(BadReplyError) as caught:
            await core.get_json("/issues/T-1")
    assert len(handler.calls) == 3
    message = str(caught.value)
    assert "text/html" in message and "not JSON" in message and "<html>Login" in message


async def test_html_with_200_to_a_write_is_not_sent_again(make_core, sleep) -> None:
    """An HTML page answering an import (an upload, say): the write may have been applied,
    so it is sent once only and is an AmbiguousWriteError (the load asks the target) naming
    the service, method, path, status, content type and what to do."""
    page = httpx.Response(200, headers={"Content-Type": "text/html"}, content=b"<html>Login</html>")
    handler = answering(page)
    async with make_core(handler) as core:
        with pytest.raises(AmbiguousWriteError) as caught:
            await core.request_json("POST", "/issues/T-1/attachments/_import", files={"file": b"x"})
    assert len(handler.calls) == 1
    message = str(caught.value)
    assert "tracker POST https://tracker.test/v3/issues/T-1/attachments/_import" in message
    assert "-> 200 (text/html): the reply is not JSON but text/html" in message
    assert "haul load --retry-failed" in message and TOKEN not in message


@pytest.mark.parametrize("repeatable", [True, False])
async def test_a_deletion_answered_with_html_is_not_confirmed(make_core, sleep, repeatable) -> None:
    """A gateway whose session expired answers a DELETE 200 with its sign-in page, deleting
    nothing: not taken as done, not asked again, a BadReplyError (the run stops) naming the
    URL and what came back; an empty reply (204) confirms the deletion."""
    page = httpx.Response(200, headers={"Content-Type": "text/html"}, content=b"<html>Login</html>")
    handler = answering(page)
    async with make_core(handler) as core:
        with pytest.raises(BadReplyError) as caught:
            await core.delete("/issues/T-1/comments/5", repeatable=repeatable)
    assert len(handler.calls) == 1
    message = str(caught.value)
    assert (
        "tracker DELETE https://tracker.test/v3/issues/T-1/comments/5 -> 200 (text/html)" in message
    )
    assert "<html>Login" in message and "the deletion is not confirmed" in message
    async with make_core(answering(httpx.Response(204))) as core:
        assert await core.delete("/issues/T-1/comments/5", repeatable=repeatable) is None


async def test_a_redirect_to_another_host_is_named_and_gets_no_token(make_core) -> None:
    """Sent to another host, the call fails as a redirect, not as a rejected token, and the
    other host gets no request at all (so neither the token nor the org id)."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "tracker.test":
            return httpx.Response(302, headers={"Location": "https://elsewhere.test/login"})
        return httpx.Response(401, json={"errorMessages": ["who are you"]})

    async with make_core(handler) as core:
        with pytest.raises(RedirectError, match=r"redirected to another host \(elsewhere\.test\)"):
            await core.get_json("/myself")
    assert [r.url.host for r in seen] == ["tracker.test"]


async def test_a_redirect_on_the_same_host_is_followed(make_core) -> None:
    """A moved issue's old key answers 301 to its new key; a 303 after a POST becomes a GET."""
    seen: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path))
        if request.url.path.endswith("/OLD-1"):
            return httpx.Response(301, headers={"Location": "/v3/issues/NEW-1"})
        if request.url.path.endswith("/_search"):
            return httpx.Response(303, headers={"Location": "/v3/issues/NEW-1"})
        if request.url.path.endswith("/OLD-1/attachments/_import"):
            return httpx.Response(307, headers={"Location": "/v3/issues/NEW-1/attachments/_import"})
        if request.url.path.endswith("/attachments/_import"):
            uploads.append(request.read())
        return httpx.Response(200, json={"key": "NEW-1"})

    uploads: list[bytes] = []
    async with make_core(handler) as core:
        assert await core.get_json("/issues/OLD-1") == {"key": "NEW-1"}
        assert await core.post_json("/issues/_search", json={}, write=False) == {"key": "NEW-1"}
        upload = io.BytesIO(b"file bytes")
        await core.request("POST", "/issues/OLD-1/attachments/_import", files={"file": upload})
    assert seen[4:] == [
        ("POST", "/v3/issues/OLD-1/attachments/_import"),
        ("POST", "/v3/issues/NEW-1/attachments/_import"),
    ]
    assert b"file bytes" in uploads[0]
    assert seen[:4] == [
        ("GET", "/v3/issues/OLD-1"),
        ("GET", "/v3/issues/NEW-1"),
        ("POST", "/v3/issues/_search"),
        ("GET", "/v3/issues/NEW-1"),
    ]


async def test_a_body_shorter_than_its_content_length_is_a_body_mismatch(make_core) -> None:
    """A download whose bytes fall short of Content-Length is never taken for the file."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Length": "10"}, stream=_Chunks([b"abcd"]))

    async with make_core(handler) as core:
        with pytest.raises(BodyMismatch, match="expected 10 bytes \\(Content-Length\\), got 4"):
            await core.download("/f", io.BytesIO())


async def test_a_stalled_body_meets_the_request_deadline(make_core) -> None:
    """A body that stops arriving ends at the deadline instead of hanging the run."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=_Chunks([b"ab"], stall=30))

    async with make_core(handler, request_timeout=0.2) as core:
        with pytest.raises(BodyMismatch, match="broke off after 2"):
            await asyncio.wait_for(core.download("/f", io.BytesIO()), timeout=10)


class _Chunks(httpx.AsyncByteStream):
    """A body of `chunks`, then (optionally) a stall of `stall` seconds before its end."""

    def __init__(self, chunks: list[bytes], stall: float = 0.0) -> None:
        self.chunks = chunks
        self.stall = stall

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk
        if self.stall:
            await asyncio.sleep(self.stall)


async def test_a_service_that_never_answered_fails_within_seconds(make_core, sleep) -> None:
    """First contact: connection errors before any reply are a wrong address, not an outage:
    a few seconds of tries, then UnreachableError naming the service and its URL."""
    refused = answering_error(httpx.ConnectError("connection refused"))
    async with make_core(refused, outage_patience=300) as core:
        with pytest.raises(UnreachableError) as caught:
            await core.get_json("/myself")
    assert sum(sleep.delays) <= FIRST_CONTACT_PATIENCE
    assert "tracker at https://tracker.test cannot be reached" in str(caught.value)
    assert "has not answered once in this command" in str(caught.value)
    assert caught.value.exit_code == 1


async def test_a_host_that_drops_packets_costs_a_few_connect_timeouts_only(make_core) -> None:
    """Connect timeouts before any reply: FIRST_CONTACT_ATTEMPTS tries, each with the short
    first-contact connect timeout, then UnreachableError."""
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectTimeout("timed out")

    async with make_core(handler, timeout=30.0) as core:
        with pytest.raises(UnreachableError, match="3 attempts; ConnectTimeout"):
            await core.get_json("/myself")
    assert len(calls) == FIRST_CONTACT_ATTEMPTS
    assert calls[0].extensions["timeout"]["connect"] == FIRST_CONTACT_CONNECT_TIMEOUT


async def test_after_a_first_answer_a_lost_connection_is_waited_out(make_core, sleep) -> None:
    """Once the service has answered, connection errors are an outage: outage_patience."""
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            return httpx.Response(200, json={"login": "me"})
        raise httpx.ConnectError("connection refused")

    async with make_core(handler, outage_patience=60) as core:
        await core.get_json("/myself")
        with pytest.raises(TransientError) as caught:
            await core.get_json("/myself")
    assert not isinstance(caught.value, UnreachableError)
    assert sum(sleep.delays) > FIRST_CONTACT_PATIENCE


async def test_a_closed_port_on_loopback_fails_within_seconds() -> None:
    """A real socket: nothing listens on the port, so the first call fails fast, no waiting
    for the outage patience (real sleeps, so this is also a bound on wall time)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    core = HttpCore.of(
        service="wiki", base_url=f"http://127.0.0.1:{port}/v1", token="t", org_id="1"
    )
    started = time.monotonic()
    async with core:
        with pytest.raises(UnreachableError, match=f"wiki at http://127.0.0.1:{port} cannot"):
            await core.get_json("/myself")
    assert time.monotonic() - started < FIRST_CONTACT_PATIENCE + 5


async def test_a_json_reply_cut_short_is_named_in_a_persons_words(make_core, sleep) -> None:
    """A JSON body that breaks off: not "Unterminated string starting at: line 1 column N"
    but that the reply was cut short, after how many bytes, and what to do."""
    whole = b'[{"key": "TEST-1", "summary": "' + b"x" * 400 + b'"}]'
    cut = httpx.Response(200, headers={"Content-Type": "application/json"}, content=whole[:200])
    async with make_core(answering(cut)) as core:
        with pytest.raises(BadReplyError) as caught:
            await core.get_json("/issues")
    message = str(caught.value)
    assert "the JSON reply breaks off after 200 bytes: it was cut short on the way" in message
    assert "Unterminated" not in message and "column" not in message
    assert "run the same command again" in message
