"""A store knows its target: the first claim records each service's org, another is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from haul.state.store import StagingStore
from haul.state.targets import Target

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

TRACKER = Target("http://127.0.0.1:8080/v3", "org_id", "42")
WIKI = Target("http://127.0.0.1:8081/v1", "org_id", "42")


def test_the_first_claim_records_the_target_and_the_same_one_is_accepted_again(
    db_path: Path,
) -> None:
    """A store with no target (new, or written before targets were recorded) adopts the one
    it is claimed for; the same target spelled another way is the same target."""
    with StagingStore.open(db_path) as store:
        assert store.targets.claim({"tracker": TRACKER}) == {}
    with StagingStore.open(db_path) as store:
        respelled = Target("HTTP://127.0.0.1:8080/v3/", "org_id", "42")
        assert store.targets.claim({"tracker": respelled}) == {}
        assert store.targets.recorded() == {"tracker": TRACKER}


def test_another_org_is_refused_and_nothing_is_recorded(store: StagingStore) -> None:
    """A claim naming another org for a known service returns (recorded, wanted) for it and
    records nothing, not even a service the store did not know yet."""
    store.targets.claim({"tracker": TRACKER})
    other = Target(TRACKER.url, "org_id", "43")

    refused = store.targets.claim({"tracker": other, "wiki": WIKI})

    assert refused == {"tracker": (TRACKER, other)}
    assert store.targets.recorded() == {"tracker": TRACKER}


def test_another_url_or_org_kind_is_another_target(store: StagingStore) -> None:
    """The host, the path and the kind of org header all tell targets apart."""
    store.targets.claim({"tracker": TRACKER})
    for other in (
        Target("http://127.0.0.2:8080/v3", "org_id", "42"),
        Target("http://127.0.0.1:8080/v2", "org_id", "42"),
        Target(TRACKER.url, "cloud_org_id", "42"),
    ):
        assert store.targets.claim({"tracker": other}) == {"tracker": (TRACKER, other)}


def test_a_service_added_later_is_recorded_beside_the_first(store: StagingStore) -> None:
    """A config that adds the wiki to a store that loaded the tracker records the wiki too."""
    store.targets.claim({"tracker": TRACKER})
    assert store.targets.claim({"tracker": TRACKER, "wiki": WIKI}) == {}
    assert store.targets.recorded() == {"tracker": TRACKER, "wiki": WIKI}


def test_a_claim_that_only_compares_records_nothing(store: StagingStore) -> None:
    """A dry run's claim refuses another org like any other, and records no first target."""
    assert store.targets.claim({"tracker": TRACKER}, record=False) == {}
    assert store.targets.recorded() == {}
