"""HttpCore over httpx.MockTransport: headers, retries, waits, the error tree, budgets."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from structlog.testing import capture_logs

from haul.connectors.budget import PACE
from haul.connectors.errors import (
    AmbiguousWriteError,
    AuthError,
    BodyMismatch,
    ConflictError,
    NotFoundError,
    TransientError,
    ValidationError,
)
from haul.connectors.http import HttpCore
from haul.connectors.tracker import TrackerClient
from tests.helpers.mock_core import BASE, ORG, TOKEN

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def replies(*responses: httpx.Response | Exception):
    """A handler answering with ``responses`` in turn (exceptions are raised), then the last."""
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        reply = responses[min(len(calls), len(responses)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return _fresh(reply)

    handler.calls = calls  # type: ignore[attr-defined]
    return handler


def _fresh(reply: httpx.Response) -> httpx.Response:
    """A new copy of a fully read reply, so one reply can be served many times."""
    try:
        content = reply.content
    except httpx.ResponseNotRead:
        return reply  # a streamed body: served once
    return httpx.Response(reply.status_code, headers=reply.headers, content=content)


def error_reply(status: int, message: str = "nope", **headers: str) -> httpx.Response:
    body = {"errors": {}, "errorMessages": [message], "statusCode": status}
    return httpx.Response(status, json=body, headers=headers)


async def test_paths_keep_the_version_and_headers_carry_token_and_org(make_core):
    """Relative paths join under /v3; the auth and org headers go on every request."""
    handler = replies(httpx.Response(200, json={"ok": True}))
    async with make_core(handler) as core:
        assert await core.get_json("/issues/TEST-1") == {"ok": True}
        await core.get_json("https://elsewhere.test/v3/myself")
    first, second = handler.calls
    assert str(first.url) == f"{BASE}/issues/TEST-1"
    assert first.headers["Authorization"] == f"OAuth {TOKEN}"
    assert first.headers["X-Org-ID"] == ORG
    assert str(second.url) == "https://elsewhere.test/v3/myself"


async def test_cloud_org_uses_its_own_header_and_scheme(make_core):
    """cloud_org_id sends X-Cloud-Org-ID (and no X-Org-ID); the auth scheme is configurable."""
    handler = replies(httpx.Response(200, json={}))
    async with make_core(handler, org_id=None, cloud_org_id="bpf1", auth_scheme="Bearer") as core:
        await core.get_json("/myself")
    (request,) = handler.calls
    assert request.headers["X-Cloud-Org-ID"] == "bpf1"
    assert "X-Org-ID" not in request.headers
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("orgs", [{}, {"org_id": "1", "cloud_org_id": "2"}])
def test_exactly_one_org_id_is_required(orgs):
    """Neither or both org ids: ValueError before anything is sent."""
    with pytest.raises(ValueError, match="exactly one"):
        HttpCore.of(service="tracker", base_url=BASE, token=TOKEN, **orgs)


async def test_retry_after_in_seconds_is_honoured(make_core, sleep):
    """429 with Retry-After: 7 waits exactly 7 s, then the retry succeeds."""
    handler = replies(error_reply(429, **{"Retry-After": "7"}), httpx.Response(200, json=[1]))
    async with make_core(handler) as core:
        assert await core.get_json("/issues") == [1]
        assert core.requests_sent == 2
    assert sleep.delays == [7.0]


async def test_retry_after_as_http_date_is_honoured(make_core, sleep):
    """An HTTP-date Retry-After waits until that moment."""
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    handler = replies(error_reply(503, **{"Retry-After": when}), httpx.Response(200, json={}))
    async with make_core(handler) as core:
        await core.get_json("/issues")
    (delay,) = sleep.delays
    assert 28 <= delay <= 30


async def test_a_throttle_without_retry_after_waits_for_its_reset_and_a_spread(make_core, sleep):
    """A 429 with ``RateLimit-Reset: 3`` and no Retry-After: each retry waits the three
    seconds it says, then a share of the next second (drawn anew: the requests refused
    together come back spread, not at the reset's instant)."""
    throttled = error_reply(429, **{"RateLimit-Reset": "3"})
    handler = replies(throttled, throttled, throttled, throttled, httpx.Response(200, json={}))
    async with make_core(handler) as core:
        await core.get_json("/issues")
    assert len(sleep.delays) == 4
    assert all(3.0 <= delay < 4.0 for delay in sleep.delays)
    assert len(set(sleep.delays)) > 1


async def test_retry_after_is_honoured_over_a_reset(make_core, sleep):
    """Retry-After says how long this request waits, whatever RateLimit-Reset says."""
    reply = error_reply(429, **{"Retry-After": "7", "RateLimit-Reset": "2"})
    handler = replies(reply, httpx.Response(200, json={}))
    async with make_core(handler) as core:
        await core.get_json("/issues")
    assert sleep.delays == [7.0]


async def test_budgets_start_where_a_core_before_left_them(make_core):
    """What one core's budget found of the service (a limit it states on a 200: 40 a second)
    starts the next core's there, before it sends anything; a fixed budget keeps its number."""
    stated = httpx.Response(200, json={}, headers={"RateLimit-Policy": "40;w=1"})
    async with make_core(replies(stated)) as first:
        await first.get_json("/myself")
        found = first.found_budgets()
    assert found["read"]["stated"] == 40.0 and "write" not in found
    async with make_core(replies(stated), write_rate=5) as again:
        again.resume_budgets(found)
        history = again.rate_history()
    assert history["read"][-1][1] == pytest.approx(PACE * 40.0)
    assert history["write"] == [(0.0, 5.0)]


@pytest.mark.parametrize("value", ["0", "-5", "soon", "Mon, 01 Jan 2001 00:00:00 GMT"])
async def test_unusable_retry_after_falls_back_to_backoff(make_core, sleep, value):
    """Zero, negative, unparseable or past Retry-After: the first backoff window is used."""
    handler = replies(error_reply(429, **{"Retry-After": value}), httpx.Response(200, json={}))
    async with make_core(handler) as core:
        await core.get_json("/issues")
    (delay,) = sleep.delays
    assert 0 <= delay <= 0.5


async def test_backoff_is_jittered_within_growing_windows_and_capped(make_core, sleep):
    """Without Retry-After, wait n is uniform in [0, min(cap, 0.5 * 2**n)]."""
    handler = replies(error_reply(503))
    async with make_core(handler, max_attempts=8, max_backoff=2.0) as core:
        with pytest.raises(TransientError):
            await core.get_json("/issues")
    assert len(sleep.delays) == 7
    for attempt, delay in enumerate(sleep.delays):
        assert 0 <= delay <= min(2.0, 0.5 * 2**attempt)
    assert len(set(sleep.delays)) > 1  # jittered, not a fixed schedule


async def test_retries_used_up_raise_transient_error(make_core):
    """After max_attempts 5xx replies: TransientError with status, attempts and the message."""
    handler = replies(error_reply(502, "upstream down"))
    async with make_core(handler, max_attempts=3) as core:
        with pytest.raises(TransientError) as caught:
            await core.post_json("/issues/_search", json={}, write=False)
        assert core.requests_sent == 3
    error = caught.value
    assert error.status == 502
    assert error.service == "tracker" and error.method == "POST"
    assert error.url == f"{BASE}/issues/_search"
    assert "after 3 attempts" in str(error) and "upstream down" in str(error)


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failures_name_service_and_org(make_core, status):
    """401/403 raise AuthError at once, naming the service and the org id."""
    handler = replies(error_reply(status, "bad token"))
    async with make_core(handler) as core:
        with pytest.raises(AuthError) as caught:
            await core.get_json("/myself")
        assert core.requests_sent == 1
    assert str(caught.value) == f"tracker rejected the token for org {ORG} ({status}): bad token"


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (404, NotFoundError),
        (409, ConflictError),
        (422, ValidationError),
        (400, ValidationError),
        (413, ValidationError),
        (418, ValidationError),
    ],
)
async def test_client_errors_map_to_record_errors_without_retry(make_core, status, error_class):
    """Other 4xx replies map to the record errors, carry the server message, and are final."""
    handler = replies(error_reply(status, "Issue does not exist."))
    async with make_core(handler) as core:
        with pytest.raises(error_class) as caught:
            await core.post_json("/issues/_import", json={"summary": "x"})
        assert core.requests_sent == 1
    assert caught.value.status == status
    assert caught.value.server_message == "Issue does not exist."
    assert caught.value.response is not None


@pytest.mark.parametrize(
    "failure",
    [
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.ReadTimeout("timed out"),
        httpx.ReadError("connection reset by peer"),
        httpx.WriteTimeout("timed out while sending"),
    ],
)
async def test_write_failing_after_send_is_ambiguous_and_sent_once(make_core, sleep, failure):
    """A POST that may have reached the server raises AmbiguousWriteError after ONE request."""
    handler = replies(failure, httpx.Response(201, json={"key": "TEST-1"}))
    async with make_core(handler) as core:
        with pytest.raises(AmbiguousWriteError) as caught:
            await core.post_json("/issues/_import", json={"summary": "x"})
        assert core.requests_sent == 1
    assert len(handler.calls) == 1
    assert sleep.delays == []
    assert caught.value.method == "POST" and caught.value.url.endswith("/issues/_import")


@pytest.mark.parametrize(
    "failure",
    [httpx.RemoteProtocolError("Server disconnected"), httpx.ReadTimeout("timed out")],
)
async def test_reads_retry_after_send_failures(make_core, failure):
    """GETs and POST searches (write=False) retry a dropped connection or a read timeout."""
    handler = replies(failure, httpx.Response(200, json=[]), failure, httpx.Response(200, json=7))
    async with make_core(handler) as core:
        assert await core.get_json("/issues/TEST-1/comments") == []
        assert await core.post_json("/issues/_count", json={}, write=False) == 7
        assert core.requests_sent == 4


async def test_connect_failure_of_a_write_is_retried(make_core):
    """Nothing reached the server on a connect error, so even an import is sent again."""
    handler = replies(httpx.ConnectError("refused"), httpx.Response(201, json={"key": "TEST-1"}))
    async with make_core(handler) as core:
        assert await core.post_json("/issues/_import", json={}) == {"key": "TEST-1"}
    assert len(handler.calls) == 2


async def test_connect_failures_used_up_raise_transient_error(make_core):
    """A server that never accepts a connection ends in TransientError, not an httpx error."""
    handler = replies(httpx.ConnectError("refused"))
    async with make_core(handler, max_attempts=2) as core:
        with pytest.raises(TransientError, match="ConnectError"):
            await core.get_json("/myself")


async def test_token_never_appears_in_errors_reprs_or_logs(make_core):
    """Even a server echoing the token back cannot put it into our messages or logs, nor
    can the request an error carries (its headers show `[secure]`)."""
    echo = error_reply(403, f"token {TOKEN} is not an admin")
    handler = replies(error_reply(503, f"bad OAuth {TOKEN}"), echo)
    core = make_core(handler, max_attempts=2)
    with capture_logs() as logs, pytest.raises(AuthError) as caught:
        await core.get_json("/myself")
    raised = [caught.value]
    handler_failing = replies(httpx.ConnectError(f"refused {TOKEN}"))
    async with make_core(handler_failing, max_attempts=1) as failing:
        with pytest.raises(TransientError) as transient:
            await failing.get_json("/myself")
    raised.append(transient.value)
    texts = [str(e) for e in raised] + [repr(e) for e in raised]
    texts += [e.server_message for e in raised] + [repr(core), repr(TrackerClient(core))]
    request = raised[0].response.request  # the error carries the request: its headers too
    texts += [repr(raised[0].response), repr(request), repr(request.headers), str(request.url)]
    assert request.headers["Authorization"] == f"OAuth {TOKEN}"
    texts += [repr(log) for log in logs]
    assert logs, "the retry was logged"
    assert all(TOKEN not in text for text in texts)
    assert "[token]" in raised[0].server_message
    await core.aclose()


async def test_read_and_write_budgets_are_separate(make_core):
    """Spent reads delay further reads but not writes: two independent budgets."""
    handler = replies(httpx.Response(200, json={}))
    async with make_core(handler, read_rate=3, write_rate=3) as core:
        for _ in range(3):
            await core.get_json("/myself")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(core.get_json("/myself"), timeout=0.1)
        await asyncio.wait_for(core.post_json("/issues/_import", json={}), timeout=0.1)
        # a POST search is a read, so it waits with the reads
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(core.post_json("/x/_search", write=False), timeout=0.1)


async def test_a_repeatable_write_spends_the_write_budget_and_is_sent_again(make_core):
    """`repeatable=True` (a PATCH, a page's new text) is retried after a lost reply like a
    read, but it changes the target, so it waits with the writes: a `write_rps` cap holds."""
    lost = httpx.RemoteProtocolError("Server disconnected")
    handler = replies(lost, httpx.Response(200, json={"key": "NEW-1"}))
    async with make_core(handler, read_rate=3, write_rate=3) as core:
        reply = await core.request("PATCH", "/issues/NEW-1", json={}, repeatable=True)
        assert reply.json() == {"key": "NEW-1"} and len(handler.calls) == 2
        await core.post_json("/pages/1", json={}, repeatable=True)  # the write budget's third
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(core.post_json("/pages/1", repeatable=True), timeout=0.1)
        await asyncio.wait_for(core.get_json("/myself"), timeout=0.1)  # reads are untouched
    handler = replies(lost)
    async with make_core(handler) as core:
        with pytest.raises(AmbiguousWriteError):  # the default for a write: never blindly again
            await core.request("PATCH", "/issues/NEW-1", json={})
    assert len(handler.calls) == 1


class _BrokenStream(httpx.AsyncByteStream):
    """A body that yields ``chunks`` and then breaks off like a reset connection."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self):
        for chunk in self.chunks:
            yield chunk
        raise httpx.ReadError("connection reset")


async def test_download_streams_chunks_into_the_sink(make_core):
    """The body arrives in several writes, never as one buffer, and its size is returned."""
    chunks = [bytes([n]) * 1000 for n in range(5)]

    class Writes(io.BytesIO):
        calls = 0

        def write(self, data):
            Writes.calls += 1
            return super().write(data)

    handler = replies(httpx.Response(200, content=_chunked(chunks)))
    sink = Writes()
    async with make_core(handler) as core:
        assert await core.download("/issues/T-1/attachments/1/a.bin", sink) == 5000
    assert sink.getvalue() == b"".join(chunks)
    assert Writes.calls == 5


async def _chunked(chunks: list[bytes]):
    for chunk in chunks:
        yield chunk


async def test_download_restarts_only_before_the_first_byte(make_core):
    """A break before any byte is retried; a break after some bytes is a BodyMismatch: the
    sink holds part of a file, so only the caller can start over with a fresh one."""
    early = httpx.Response(200, stream=_BrokenStream([]))
    full = httpx.Response(200, content=b"abc")
    async with make_core(replies(early, full)) as core:
        sink = io.BytesIO()
        assert await core.download("/f", sink) == 3
        assert sink.getvalue() == b"abc"
    late = httpx.Response(200, stream=_BrokenStream([b"ab"]))
    handler = replies(late, full)
    async with make_core(handler) as core:
        with pytest.raises(BodyMismatch, match="broke off after 2 of unknown bytes"):
            await core.download("/f", io.BytesIO())
    assert len(handler.calls) == 1


async def test_stream_retries_the_opening_and_closes_after_use(make_core, sleep):
    """stream() retries a 503 on opening, hands over an unread body, and closes it after."""
    handler = replies(error_reply(503), httpx.Response(200, content=_chunked([b"ab", b"cd"])))
    async with make_core(handler) as core:
        async with core.stream("GET", "/issues/T-1/attachments/1/f") as response:
            assert not response.is_closed
            assert [chunk async for chunk in response.aiter_bytes()] == [b"ab", b"cd"]
        assert response.is_closed
    assert len(sleep.delays) == 1 and len(handler.calls) == 2


async def test_stream_error_reply_carries_the_server_message(make_core):
    """An error on a streamed request is read before raising, so its message is kept."""
    handler = replies(error_reply(404, "No such attachment"))
    async with make_core(handler) as core:
        with pytest.raises(NotFoundError, match="No such attachment"):
            async with core.stream("GET", "/issues/T-1/attachments/9/f"):
                pass


async def test_at_most_max_connections_requests_are_in_flight() -> None:
    """Callers beyond `max_connections` wait in HttpCore, not in the transport's pool."""
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return httpx.Response(200, json={})

    core = HttpCore.of(
        service="tracker",
        base_url=BASE,
        token=TOKEN,
        org_id=ORG,
        max_connections=6,
        read_rate=10_000,
        transport=httpx.MockTransport(handler),
    )
    async with core:
        await asyncio.gather(*(core.get_json("/myself") for _ in range(30)))
    assert peak == 6
    assert core.requests_sent == 30


async def test_the_services_clock_is_read_from_its_replies(make_core) -> None:
    """The `Date` of a reply is the service's "now" (not the local clock's): a watermark is
    capped by it. Before any reply it is unknown."""
    from haul.connectors.http import ServiceClient

    stamped = httpx.Response(200, headers={"Date": "Mon, 01 Jan 2024 12:00:00 GMT"}, json={})
    client = ServiceClient(make_core(lambda request: stamped))
    assert client.server_now() is None
    async with client:
        await client.core.get_json("/myself")
        now = client.server_now()

    assert now is not None and now >= datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert now.date() == datetime(2024, 1, 1).date()
