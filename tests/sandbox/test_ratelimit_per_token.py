"""The sandbox's `ratelimit` kept per token (`per=token`) as well as per organisation (the
default): what separate tokens buy. Over real sockets; a limit of one request per two
seconds, so a burst of a few requests is refused past the first, whatever the machine."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.faults import FaultPlan, parse_faults
from haul.sandbox.server import RunningSandbox, start_sandbox

TOKENS = ("admin", "admin_2")
BURST = 3  # requests per token, sent back to back


@pytest.fixture(scope="module")
def sandbox() -> Iterator[RunningSandbox]:
    with start_sandbox(size="tiny", seed=5) as running:
        yield running


def answered_per_token(sandbox: RunningSandbox) -> dict[str, int]:
    """Replies other than 429 to BURST reads of each token, the tokens taking turns."""
    info = sandbox.info
    answered = dict.fromkeys(TOKENS, 0)
    with httpx.Client(base_url=info["tracker"], timeout=10) as client:
        for _ in range(BURST):
            for token in TOKENS:
                headers = {
                    "Authorization": f"OAuth {info['tokens'][token]}",
                    "X-Org-ID": info["orgs"]["source"],
                }
                reply = client.get("/myself", headers=headers)
                assert reply.status_code in (200, 429), reply.text
                answered[token] += reply.status_code == 200
    return answered


def test_two_tokens_get_twice_the_throughput_under_a_per_token_limit(
    sandbox: RunningSandbox,
) -> None:
    """per=token: each token has a bucket of its own, so two tokens of one org get two
    requests through where one token gets one."""
    sandbox.set_faults("ratelimit:0.5:per=token")
    assert answered_per_token(sandbox) == {"admin": 1, "admin_2": 1}


def test_two_tokens_share_one_per_org_limit(sandbox: RunningSandbox) -> None:
    """per=org (the default, and said outright): the org's one bucket, whatever the tokens."""
    for spec in ("ratelimit:0.5", "ratelimit:0.5:per=org"):
        sandbox.set_faults(spec)
        assert sum(answered_per_token(sandbox).values()) == 1, spec


def test_a_per_token_limit_is_the_same_token_across_orgs() -> None:
    """A token's bucket is the token's, whichever org it names; another token is not in it."""
    plan = FaultPlan("ratelimit:5:per=token")  # a bucket of one request
    assert plan.decide("/v3/myself", "org-1", host="tracker", token="OAuth a").action is None
    assert plan.decide("/v3/myself", "org-2", host="tracker", token="OAuth a").action == "429"
    assert plan.decide("/v3/myself", "org-1", host="tracker", token="OAuth b").action is None
    assert plan.decide("/v1/pages", "org-1", host="wiki", token="OAuth a").action is None


@pytest.mark.parametrize("spec", ["ratelimit:5:per=user", "ratelimit:5:per=org:per=token"])
def test_a_malformed_per_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="per=org"):
        parse_faults(spec)
