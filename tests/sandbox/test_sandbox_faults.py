"""Each fault kind as a client sees it, the runtime controls, and request counting."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from haul.sandbox.faults import FaultPlan, parse_faults
from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.cli_fixtures import wait_for
from tests.helpers.sandbox_clients import client_for

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


def test_slow_after_applies_the_request_and_holds_its_reply(fresh: RunningSandbox) -> None:
    """slow_after:RATE:MS applies the request, then answers MS later: a client that gives up
    first sees a timeout, yet the import DID happen."""
    fresh.set_faults("slow_after:1:2000@/v3/issues/_import")
    with client_for(fresh, "target") as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post("/issues/_import", json={**ISSUE, "key": "TEST-9"}, timeout=0.3)
        fresh.set_faults("")
        assert client.get("/issues/TEST-9").json()["summary"] == "s"


def test_a_hold_keeps_requests_unanswered_and_unapplied_until_released(
    fresh: RunningSandbox,
) -> None:
    """hold:NAME@GLOB: a matching request gets no reply and is not applied (other paths are
    answered) until the test releases the hold; then it is applied and answered, and the
    requests after it pass at once."""
    fresh.set_faults("hold:imports@*/_import")
    with client_for(fresh, "target") as client, ThreadPoolExecutor(1) as pool:
        held = pool.submit(client.post, "/issues/_import", json={**ISSUE, "key": "TEST-10"})
        wait_for(lambda: fresh.held("imports") == 1, timeout=30, what="the import to be held")
        with client_for(fresh, "target") as beside:
            assert beside.get("/issues/TEST-10").status_code == 404
        assert not held.done()

        fresh.release("imports")

        assert held.result(timeout=30).status_code == 201
        assert client.post("/issues/_import", json={**ISSUE, "key": "TEST-11"}).status_code == 201
        assert fresh.held("imports") == 1


def test_a_hold_of_writes_lets_the_reads_of_its_path_through(fresh: RunningSandbox) -> None:
    """hold:NAME:writes@GLOB holds an edit of the issue, not a read of it (a test can stop a
    run between what it read and what it writes)."""
    fresh.set_faults("hold:edits:writes@/v3/issues/TEST-1")
    with client_for(fresh, "source") as client, ThreadPoolExecutor(1) as pool:
        edit = pool.submit(client.patch, "/issues/TEST-1", json={"summary": "edited"})
        wait_for(lambda: fresh.held("edits") == 1, timeout=30, what="the edit to be held")
        assert client.get("/issues/TEST-1").json()["summary"] != "edited"
        fresh.release("edits")
        assert edit.result(timeout=30).json()["summary"] == "edited"
    with pytest.raises(ValueError, match="reads"):
        parse_faults("hold:edits:both")


def test_replacing_the_spec_releases_every_hold(fresh: RunningSandbox) -> None:
    """A held request goes on when the spec is replaced; a hold is released over HTTP
    too (admin token), and one the spec does not name is a 404 there, a ValueError here."""
    base = fresh.info["tracker"].removesuffix("/v3")
    admin = {"Authorization": f"OAuth {fresh.info['tokens']['admin']}"}
    fresh.set_faults("hold:reads@/v3/myself")
    with client_for(fresh, "source") as client, ThreadPoolExecutor(2) as pool:
        first = pool.submit(client.get, "/myself")
        wait_for(lambda: fresh.held("reads") == 1, timeout=30, what="the read to be held")
        fresh.set_faults("hold:again@/v3/myself")
        assert first.result(timeout=30).status_code == 200

        second = pool.submit(client.get, "/myself")
        wait_for(lambda: fresh.held("again") == 1, timeout=30, what="the read to be held")
        assert httpx.get(f"{base}/_sandbox/holds/again", headers=admin).json() == {"held": 1}
        released = httpx.post(f"{base}/_sandbox/holds/again/release", headers=admin)
        assert released.json() == {"held": 1}
        assert second.result(timeout=30).status_code == 200
    assert httpx.post(f"{base}/_sandbox/holds/other/release", headers=admin).status_code == 404
    with pytest.raises(ValueError, match="no hold:other"):
        fresh.release("other")


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
    "spec",
    [
        "latency",
        "boom:1",
        "429:2",
        "5xx:-0.1",
        "drop_after:x",
        "slow_after:1",
        "latency:5+x",
        "ratelimit:0",
        "ratelimit:5:sideways",
        "ratelimit:5:reads:writes",
        "hold:a b",
        "v3_only:issues",
    ],
)
def test_malformed_specs(fresh: RunningSandbox, spec: str) -> None:
    """A malformed spec is a ValueError and leaves the current faults in place."""
    fresh.set_faults("5xx:0")
    with pytest.raises(ValueError, match="bad fault"):
        fresh.set_faults(spec)
    assert parse_faults("5xx:0.5@*/x, latency:3+1")[1].jitter_ms == 1.0


def test_a_ratelimit_counts_each_service_and_each_org_apart() -> None:
    """ratelimit:RPS keeps a bucket per service (host) and per org: spending one leaves
    the others whole."""
    plan = FaultPlan("ratelimit:5")  # a bucket of one request, refilled in 0.2 s
    assert plan.decide("/v3/myself", "org-1", host="tracker").action is None
    assert plan.decide("/v3/myself", "org-1", host="tracker").action == "429"
    assert plan.decide("/v1/pages", "org-1", host="wiki").action is None
    assert plan.decide("/v3/myself", "org-2", host="tracker").action is None


def test_a_ratelimit_may_count_reads_or_writes_only() -> None:
    """:writes counts what changes the service; a POST search is a read."""
    plan = FaultPlan("ratelimit:5:writes")
    for _ in range(5):
        assert plan.decide("/v3/myself", "o", method="GET").action is None
        assert plan.decide("/v3/issues/_search", "o", method="POST").action is None
    assert plan.decide("/v3/issues/_import", "o", method="POST").action is None
    assert plan.decide("/v3/issues/TEST-1", "o", method="PATCH").action == "429"
    reads = FaultPlan("ratelimit:5:reads,ratelimit:5:writes")
    assert reads.decide("/v3/issues/_count", "o", method="POST").action is None
    assert reads.decide("/v3/issues/_import", "o", method="POST").action is None
    assert reads.decide("/v3/myself", "o", method="GET").action == "429"


def test_a_ratelimit_answers_429_with_retry_after_and_ratelimit_headers(
    fresh: RunningSandbox,
) -> None:
    """Past the limit: 429, Retry-After, RateLimit-Limit/Remaining/Reset and the error
    envelope; the replies it lets through state its policy too; the other org and the other
    services are not limited; bare drops RateLimit-*."""
    fresh.set_faults("ratelimit:2")
    with client_for(fresh, "source") as client:
        replies = [client.get("/myself") for _ in range(3)]
        refused = next(reply for reply in replies if reply.status_code == 429)
        assert replies[0].status_code == 200
        assert replies[0].headers["RateLimit-Policy"] == refused.headers["RateLimit-Policy"]
        assert refused.headers["RateLimit-Policy"] == "2;w=1"
        assert refused.json()["statusCode"] == 429
        assert refused.headers["Retry-After"] == "1"
        assert refused.headers["RateLimit-Limit"] == "2"
        assert refused.headers["RateLimit-Remaining"] == "0"
        assert refused.headers["RateLimit-Reset"] == "1"
        with client_for(fresh, "target") as other_org:
            assert other_org.get("/myself").status_code == 200
        wiki = httpx.get(
            f"{fresh.info['wiki']}/pages", headers=client.headers, params={"slug": "x"}
        )
        assert wiki.status_code != 429
        fresh.set_faults("ratelimit:2:bare")
        replies = [client.get("/myself") for _ in range(3)]
        refused = next(reply for reply in replies if reply.status_code == 429)
        assert refused.headers["Retry-After"] == "1"
        assert "RateLimit-Remaining" not in refused.headers
        assert all("RateLimit-Policy" not in reply.headers for reply in replies)


def test_dribble_sends_the_whole_reply_a_byte_at_a_time(fresh: RunningSandbox) -> None:
    """dribble:RATE:MS sends the same reply, one byte every MS milliseconds."""
    with client_for(fresh, "source") as client:
        whole = client.get("/myself").json()
        fresh.set_faults("dribble:1.0:2@*/myself")
        with client.stream("GET", "/myself") as reply:
            pieces = list(reply.iter_raw())
    assert len(pieces) > 5  # bytes read together when the reader lags, never the whole at once
    assert httpx.Response(200, content=b"".join(pieces)).json() == whole


def test_no_key_takes_the_key_of_a_lists_first_item(fresh: RunningSandbox) -> None:
    """no_key:RATE: the first object of a JSON list reply comes without its key."""
    with client_for(fresh, "source") as client:
        listed = client.post("/issues/_search", json={"queue": "TEST"}).json()
        fresh.set_faults("no_key:1.0@*/_search")
        keyless = client.post("/issues/_search", json={"queue": "TEST"}).json()
    assert "key" not in keyless[0] and keyless[0]["id"] == listed[0]["id"]
    assert keyless[1:] == listed[1:]
