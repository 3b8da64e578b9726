"""Each fault kind as a client sees it, the runtime controls, and request counting."""

from __future__ import annotations

import time

import httpx
import pytest
from conftest import client_for

from haul.sandbox.faults import parse_faults
from haul.sandbox.server import RunningSandbox, start_sandbox

ISSUE = {"queue": "TEST", "summary": "s", "createdAt": "2023-01-01", "createdBy": "alice"}
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError)


def elapsed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def test_latency_applies_to_matching_paths(fresh: RunningSandbox) -> None:
    """latency:MS@GLOB delays only the paths the glob matches."""
    fresh.set_faults("latency:300@*/_count")
    with client_for(fresh, "source") as client:
        assert elapsed(lambda: client.post("/issues/_count")) >= 0.3
        assert elapsed(lambda: client.get("/myself")) < 0.25


def test_latency_shorthand_and_jitter() -> None:
    """start_sandbox(latency_ms=) is a leading latency item; jitter only adds."""
    with start_sandbox(latency_ms=150, faults="latency:0+50@/v3/myself") as running:
        control = {"Authorization": f"OAuth {running.info['tokens']['admin']}"}
        base = running.info["tracker"].removesuffix("/v3")
        spec = httpx.get(f"{base}/_sandbox/faults", headers=control).json()["spec"]
        assert spec == "latency:150,latency:0+50@/v3/myself"
        with client_for(running, "source") as client:
            assert 0.15 <= elapsed(lambda: client.get("/myself")) < 1.0


def test_429_carries_retry_after(fresh: RunningSandbox) -> None:
    """429:RATE:SECONDS answers 429 with Retry-After and the error envelope."""
    fresh.set_faults("429:1:7@*/_search")
    with client_for(fresh, "source") as client:
        reply = client.post("/issues/_search", json={})
        assert reply.status_code == 429 and reply.headers["Retry-After"] == "7"
        assert reply.json()["statusCode"] == 429
        assert client.get("/myself").status_code == 200
        fresh.set_faults("429:1")
        assert client.get("/myself").headers["Retry-After"] == "1"


def test_5xx(fresh: RunningSandbox) -> None:
    """5xx:1 fails every request with 503; rate 0 never does."""
    with client_for(fresh, "source") as client:
        fresh.set_faults("5xx:1")
        reply = client.get("/statuses")
        assert reply.status_code == 503 and reply.json()["errorMessages"]
        fresh.set_faults("5xx:0")
        assert client.get("/statuses").status_code == 200


def test_drop_before_loses_the_request(fresh: RunningSandbox) -> None:
    """The connection dies without a reply and the import did NOT happen."""
    fresh.set_faults("drop_before:1@*/_import")
    with client_for(fresh, "target") as client:
        with pytest.raises(DROPPED):
            client.post("/issues/_import", json={**ISSUE, "key": "TEST-7"})
        fresh.set_faults("")
        assert client.get("/issues/TEST-7").status_code == 404


def test_drop_after_applies_the_request(fresh: RunningSandbox) -> None:
    """The connection dies without a reply, yet the import DID happen."""
    fresh.set_faults("drop_after:1@/v3/issues/_import")
    with client_for(fresh, "target") as client:
        with pytest.raises(DROPPED):
            client.post("/issues/_import", json={**ISSUE, "key": "TEST-8"})
        fresh.set_faults("")
        assert client.get("/issues/TEST-8").json()["summary"] == "s"
        assert client.post("/issues/_import", json={**ISSUE, "key": "TEST-8"}).status_code == 409


def test_faults_are_repeatable_per_seed() -> None:
    """The dice are seeded: the same seed fails the same requests."""

    def pattern(seed: int) -> list[int]:
        running = start_sandbox(seed=seed, faults="5xx:0.5")
        with running, client_for(running, "source") as client:
            return [client.get("/myself").status_code for _ in range(30)]

    first = pattern(5)
    assert first == pattern(5) and set(first) == {200, 503}
    assert pattern(6) != first


def test_control_endpoints(fresh: RunningSandbox) -> None:
    """/_sandbox/faults and /stats: admin token only, never faulted, never counted."""
    base = fresh.info["tracker"].removesuffix("/v3")
    admin = {"Authorization": f"OAuth {fresh.info['tokens']['admin']}"}
    person = {"Authorization": f"OAuth {fresh.info['tokens']['user']}"}
    put = httpx.put(f"{base}/_sandbox/faults", json={"spec": "5xx:1"}, headers=admin)
    assert put.status_code == 200
    assert httpx.get(f"{base}/_sandbox/faults", headers=admin).json() == {"spec": "5xx:1"}
    bad = httpx.put(f"{base}/_sandbox/faults", json={"spec": "boom:1"}, headers=admin)
    assert bad.status_code == 400 and "boom" in bad.json()["errorMessages"][0]
    assert httpx.get(f"{base}/_sandbox/faults", headers=admin).json() == {"spec": "5xx:1"}
    assert httpx.get(f"{base}/_sandbox/faults", headers=person).status_code == 403
    assert httpx.get(f"{base}/_sandbox/stats").status_code == 401
    assert httpx.get(f"{base}/_sandbox/stats", headers=admin).json()["requests"] == 0


def test_stats_count_requests_by_route(fresh: RunningSandbox) -> None:
    """Every API request counts once under METHOD and its route template."""
    with client_for(fresh, "source") as client:
        client.post("/issues/_search", json={})
        client.post("/issues/_search", json={})
        client.get("/issues/TEST-1/comments")
        client.get("/issues/TEST-2/comments")
        client.get("/no/such/route")
    assert fresh.stats() == {
        "requests": 5,
        "by_route": {
            "POST /v3/issues/_search": 2,
            "GET /v3/issues/{key}/comments": 2,
            "GET /v3/no/such/route": 1,
        },
    }


@pytest.mark.parametrize(
    "spec", ["latency", "boom:1", "429:2", "5xx:-0.1", "drop_after:x", "latency:5+x"]
)
def test_malformed_specs(fresh: RunningSandbox, spec: str) -> None:
    """A malformed spec is a ValueError and leaves the current faults in place."""
    fresh.set_faults("5xx:0")
    with pytest.raises(ValueError, match="bad fault"):
        fresh.set_faults(spec)
    assert parse_faults("5xx:0.5@*/x, latency:3+1")[1].jitter_ms == 1.0
