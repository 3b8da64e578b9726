"""Which target login a back-fill's author names: an address matches whole, or by its part
before @ on the organisation's own domains only."""

from __future__ import annotations

import pytest

from haul.pipelines.tracker.backfill.addresses import TargetPeople

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

USERS = [
    {"login": "heidi", "email": "heidi@example.org"},
    {"login": "bob", "email": "Bob.Builder@example.org"},
    {"login": "ops@example.org"},  # a login that is an address
    {"login": "grace"},
]


def test_an_address_on_another_domain_is_not_the_organisations_person() -> None:
    """heidi@outsider.example is someone else: not heidi, whose part before @ it shares."""
    people = TargetPeople.of(USERS)
    assert people.login_for("heidi@outsider.example") is None
    assert people.login_for("grace@example.org") is None  # grace's address is not known


def test_an_address_matches_whole_by_email_or_login() -> None:
    people = TargetPeople.of(USERS)
    assert people.login_for("heidi@example.org") == "heidi"
    assert people.login_for(" bob.builder@EXAMPLE.org ") == "bob"  # addresses ignore case
    assert people.login_for("ops@example.org") == "ops@example.org"
    assert people.login_for("grace") == "grace"  # a plain login as it is
    assert people.login_for("mallory") is None


def test_the_part_before_the_at_counts_on_the_organisations_domains_only() -> None:
    people = TargetPeople.of(USERS, ["corp.example.org"])
    assert people.login_for("grace@Corp.Example.org") == "grace"
    assert people.login_for("grace@outsider.example") is None
