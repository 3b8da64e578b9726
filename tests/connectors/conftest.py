"""Fixtures for the connector tests: a recording sleep, a core over a mock transport, and
a real sandbox (tiny org) for the tests that go over sockets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from haul.connectors.http import HttpCore
from tests.helpers.mock_core import BASE, ORG, TOKEN


class RecordingSleep:
    """An injected sleep that returns at once and remembers every delay it was asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def make_core(sleep: RecordingSleep) -> Callable[..., HttpCore]:
    """Build an HttpCore whose requests go to ``handler`` (an httpx.MockTransport handler)."""

    def build(handler: Callable[[httpx.Request], Any], **options: Any) -> HttpCore:
        settings: dict[str, Any] = {
            "service": "tracker",
            "base_url": BASE,
            "token": TOKEN,
            "org_id": ORG,
            "transport": httpx.MockTransport(handler),
            "sleep": sleep,
        }
        settings.update(options)
        return HttpCore.of(**settings)

    return build


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    """A running tiny sandbox, one per test module."""
    from haul.sandbox.server import start_sandbox

    with start_sandbox(size="tiny", seed=1, faults="") as running:
        yield running
