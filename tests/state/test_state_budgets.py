"""A store keeps what each service's budgets found, for the next run against it to start from."""

from __future__ import annotations

from pathlib import Path

import pytest

from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

URL = "http://127.0.0.1:8080/v3"


def test_what_a_run_found_is_recalled_by_the_next(db_path: Path) -> None:
    """Kept in one run, recalled in the next: per direction, for the service's URL however it
    is spelled, and its org."""
    with StagingStore.open(db_path) as store:
        store.budgets.remember(URL, "42", {"read": {"rate": 39.6, "stated": 40.0}})
    with StagingStore.open(db_path) as store:
        recalled = store.budgets.recalled("HTTP://127.0.0.1:8080/v3/", "42")
    assert recalled == {"read": {"rate": 39.6, "stated": 40.0}}


def test_a_later_run_replaces_a_direction_and_other_orgs_keep_their_own(
    store: StagingStore,
) -> None:
    """The last run's figures replace the ones before for the directions it used; a
    direction it did not use keeps the older ones; another org, or service, has its own."""
    store.budgets.remember(URL, "42", {"read": {"rate": 20.0}, "write": {"rate": 5.0}})
    store.budgets.remember(URL, "42", {"read": {"rate": 38.0, "limit": 40.0}})
    assert store.budgets.recalled(URL, "42") == {
        "read": {"rate": 38.0, "limit": 40.0},
        "write": {"rate": 5.0},
    }
    assert store.budgets.recalled(URL, "43") == {}
    assert store.budgets.recalled("http://127.0.0.1:8081/v1", "42") == {}
