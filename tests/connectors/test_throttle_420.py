"""420 is a throttle: sister APIs of the same vendor answer it where the tracker answers 429,
and haul treats it as a 429 everywhere (retried, its Retry-After and RateLimit-* honoured,
waited out under the rate-limit patience, counted as rate-limit wait, a limit to the budget)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from haul.connectors.budget import DECREASE, AdaptiveBudget
from haul.connectors.errors import RateLimitedError
from haul.connectors.http import HttpCore
from haul.pipelines.logs import trouble_line
from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import client_for


def calm_down(retry_after: str | None = None, **headers: str) -> httpx.Response:
    """A sister API's throttle reply: 420 with its wait headers."""
    if retry_after:
        headers["Retry-After"] = retry_after
    return httpx.Response(420, headers=headers, json={"errorMessages": ["Enhance your calm"]})


def answering(*responses: httpx.Response) -> Any:
    """A handler answering with `responses` in turn, then the last again; it counts calls."""
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        reply = responses[min(len(calls), len(responses)) - 1]
        return httpx.Response(reply.status_code, headers=reply.headers, content=reply.content)

    handler.calls = calls  # type: ignore[attr-defined]
    return handler


@pytest.mark.fast
async def test_a_420_is_retried_after_its_retry_after(make_core, sleep) -> None:
    """420 with Retry-After: 7 waits exactly 7 s (rate-limit wait), then the retry succeeds."""
    handler = answering(calm_down("7"), httpx.Response(200, json=[1]))
    async with make_core(handler) as core:
        assert await core.get_json("/issues") == [1]
        assert core.rate_limit_wait == 7.0
    assert len(handler.calls) == 2
    assert sleep.delays == [7.0]


@pytest.mark.fast
async def test_a_write_answered_420_is_sent_again(make_core, sleep) -> None:
    """A throttle refuses before applying: a write answered 420 is safe to send again."""
    handler = answering(calm_down("2"), httpx.Response(201, json={"id": "1"}))
    async with make_core(handler) as core:
        assert await core.post_json("/issues/_import", json={}) == {"id": "1"}
    assert len(handler.calls) == 2 and sleep.delays == [2.0]


@pytest.mark.fast
async def test_420s_past_the_rate_limit_patience_stop_with_exit_4(make_core, sleep) -> None:
    """Retry-After longer than the patience: no wait, RateLimitedError (exit 4) with a time,
    as for a 429 (not a record's validation error)."""
    handler = answering(calm_down("3600"))
    async with make_core(handler, rate_limit_patience=900) as core:
        with pytest.raises(RateLimitedError) as caught:
            await core.get_json("/myself")
    assert sleep.delays == [] and len(handler.calls) == 1
    assert caught.value.exit_code == 4 and "asks to wait 3600 s" in str(caught.value)


@pytest.mark.fast
async def test_420s_are_waited_out_for_the_rate_limit_patience(make_core, sleep) -> None:
    """420s without Retry-After back off under the rate-limit patience (not the outage's)."""
    handler = answering(calm_down())
    async with make_core(handler, rate_limit_patience=60, outage_patience=5) as core:
        with pytest.raises(RateLimitedError, match="rate_limit_patience"):
            await core.get_json("/myself")
    assert 5 < sum(sleep.delays) <= 60


@pytest.mark.fast
def test_a_420_saying_its_budget_is_spent_cuts_the_rate() -> None:
    """The budget reads a 420 as a 429: with RateLimit-Remaining: 0 it is a limit met, and
    the rate is cut."""
    now = [100.0]
    budget = AdaptiveBudget("tracker", "read", ceiling=30.0, clock=lambda: now[0])
    budget.rate = 30.0
    budget.on_reply(420, {"RateLimit-Remaining": "0", "RateLimit-Reset": "3"})
    assert budget.rate == pytest.approx(30.0 * DECREASE)
    assert budget.history[-1][1] == pytest.approx(30.0 * DECREASE)


@pytest.mark.fast
def test_a_420_retry_is_said_as_a_slow_down() -> None:
    """The console's trouble line for a 420 retry says the service asks to slow down."""
    kind, line = trouble_line({"event": "http_retry", "service": "wiki", "reason": 420})
    assert "slow down (420)" in line
    assert kind == trouble_line({"event": "http_retry", "service": "wiki", "reason": 429})[0]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[RunningSandbox]:
    with start_sandbox(size="tiny", seed=5) as running:
        yield running


def test_the_sandbox_answers_420_when_told(sandbox: RunningSandbox) -> None:
    """420:RATE:SECONDS and ratelimit:RPS:420 answer 420 with the 429's headers and envelope."""
    with client_for(sandbox, "source") as client:
        sandbox.set_faults("420:1:7@*/_search")
        try:
            reply = client.post("/issues/_search", json={})
            assert reply.status_code == 420 and reply.headers["Retry-After"] == "7"
            assert reply.json()["statusCode"] == 420
            sandbox.set_faults("ratelimit:2:420")
            replies = [client.get("/myself") for _ in range(3)]
        finally:
            sandbox.set_faults("")
    refused = next(reply for reply in replies if reply.status_code != 200)
    assert refused.status_code == 420 and refused.headers["Retry-After"] == "1"
    assert refused.headers["RateLimit-Remaining"] == "0"


async def test_reads_through_a_420_limit_all_arrive(sandbox: RunningSandbox) -> None:
    """Over real sockets, a service limiting with 420: every read arrives, after waits the
    core counts as rate-limit waits, and the budget cuts its rate on the stated limit."""
    info = sandbox.info
    sandbox.set_faults("ratelimit:5:reads:420")
    try:
        async with HttpCore.of(
            service="tracker",
            base_url=info["tracker"],
            token=info["tokens"]["admin"],
            org_id=info["orgs"]["source"],
            read_rate="auto",
        ) as core:
            for _ in range(8):
                assert (await core.get_json("/myself"))["login"]
            refused_wait, retries = core.rate_limit_wait, core.retries
            rates = [rate for _, rate in core.rate_history()["read"]]
    finally:
        sandbox.set_faults("")
    assert retries >= 1 and refused_wait >= 1.0
    assert min(rates) < rates[0]
