"""Fixtures for the CLI tests; the helpers they share are in tests/helpers/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def sandbox() -> Iterator[Any]:
    """A tiny seeded source org and an empty target org, served on loopback in this process."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as running:
        yield running
