"""Fixtures: a tiny sandbox over real sockets and httpx clients bound to its organisations."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import client_for


@pytest.fixture(scope="module")
def sandbox() -> Iterator[RunningSandbox]:
    """One tiny sandbox per test module; tests that write use keys of their own."""
    with start_sandbox(seed=1, size="tiny") as running:
        yield running


@pytest.fixture
def fresh() -> Iterator[RunningSandbox]:
    """A sandbox of its own, for tests that count requests or change faults."""
    with start_sandbox(seed=1, size="tiny") as running:
        yield running


@pytest.fixture(scope="module")
def source(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(sandbox, "source") as client:
        yield client


@pytest.fixture(scope="module")
def target(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(sandbox, "target") as client:
        yield client


@pytest.fixture(scope="module")
def user(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    """The non-admin token in the source organisation."""
    with client_for(sandbox, "source", token="user") as client:
        yield client
