"""Fixtures for the export tests; the helpers they share are in tests/helpers/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.export_fixtures import Staged, stage_sandbox


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staged]:
    """A tiny seeded sandbox org, staged by one `haul extract`, shared by a test module."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        yield stage_sandbox(sandbox, tmp_path_factory.mktemp("export"))
