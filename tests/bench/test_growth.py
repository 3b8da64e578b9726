"""bench/growth.py's tenths: how the time per 1 000 issues of a stage's first and last tenth is
read from when each issue's work ended (the bench itself runs a 100 000-issue migration)."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def growth(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))  # a bench imports its neighbours bare
    return importlib.import_module("growth")


def test_a_steady_stage_grows_by_nothing(growth: ModuleType) -> None:
    found = growth.tenths([0.5 * i for i in range(1000)])  # an issue every half second
    assert (found.issues, found.first_per_1000, found.last_per_1000) == (1000, 500.0, 500.0)
    assert found.growth == 1.0


def test_the_tenths_are_of_the_first_and_last_issues_whatever_their_order(
    growth: ModuleType,
) -> None:
    """A stage that slows down: a second per issue for the first half, then three; the
    start-up before the first issue counts in neither tenth."""
    finished = [100.0 + i for i in range(50)] + [150.0 + 3 * i for i in range(50)]
    found = growth.tenths(list(reversed(finished)))
    assert found.first_per_1000 == 1000.0  # 5 issues in 5 s
    assert found.last_per_1000 == 3000.0  # 5 issues in 15 s
    assert found.growth == 3.0


def test_too_few_issues_for_a_tenth_is_said(growth: ModuleType) -> None:
    with pytest.raises(ValueError, match="19 issues"):
        growth.tenths([float(i) for i in range(19)])


def test_store_instants_read_as_seconds(growth: ModuleType) -> None:
    later = growth.parse_instant("2026-12-04T00:40:06.732+00:00")
    assert later - growth.parse_instant("2026-12-04T00:40:05.670+00:00") == pytest.approx(1.062)
