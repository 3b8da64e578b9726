"""A command's budgets start where the last run against the same service left them."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from haul.connectors.budget import PACE
from haul.connectors.tracker import TrackerClient
from haul.pipelines.commands.budgets import kept_budgets
from haul.state.store import StagingStore
from tests.helpers.mock_core import BASE, ORG, TOKEN

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def stating(limit: str) -> httpx.MockTransport:
    """A service whose every reply states its limit."""
    return httpx.MockTransport(
        lambda request: httpx.Response(200, json={}, headers={"RateLimit-Policy": limit})
    )


def client(transport: httpx.MockTransport, org: str = ORG) -> TrackerClient:
    return TrackerClient.connect(base_url=BASE, token=TOKEN, org_id=org, transport=transport)


async def test_a_run_starts_where_the_last_left_off_and_keeps_no_token(tmp_path: Path) -> None:
    """The first run learns the service's 40 a second; the next starts there before its first
    request (not at the cold start's 100), another org of the service at the cold start; the
    store holds no token."""
    path = tmp_path / "haul.db"
    with StagingStore.open(path) as store:
        async with client(stating("40;w=1")) as first:
            with kept_budgets(store, [first]):
                await first.myself()
    with StagingStore.open(path) as store:
        again, other = client(stating("40;w=1")), client(stating("40;w=1"), org="7")
        async with again, other:
            with kept_budgets(store, [again, other]):
                assert again.core.rate_history()["read"][-1][1] == pytest.approx(PACE * 40.0)
                assert other.core.rate_history()["read"][-1][1] == 100.0
    assert TOKEN.encode() not in path.read_bytes()
