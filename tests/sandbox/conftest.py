"""Fixtures: a tiny sandbox over real sockets and httpx clients bound to its organisations."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox


def client_for(sandbox: RunningSandbox, org: str, token: str = "admin") -> httpx.Client:
    """A client of the sandbox's tracker acting in ``org`` ("source"/"target") with a token."""
    info = sandbox.info
    headers = {
        "Authorization": f"OAuth {info['tokens'][token]}",
        "X-Org-ID": info["orgs"][org],
    }
    return httpx.Client(base_url=info["tracker"], headers=headers, timeout=30)


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
