"""Entity permissions mapped on plain dicts: how a holder that maps to no one is named."""

from __future__ import annotations

import pytest

from haul.pipelines.tracker.entities.access import EntityHolders, wanted

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_group_mapped_to_a_group_the_target_lacks_is_named_by_that_target_group() -> None:
    """The groups file maps finance to accounts, which the target lacks: the entity fails
    closed naming accounts (what to create) and finance (where it comes from)."""
    holders = EntityHolders(
        login_of=lambda ref: None,
        uids={},
        groups={"engineering": "7003"},
        group_file={"finance": "accounts"},
    )
    entity = {"fields": {"teamAccess": True}}
    permissions = {"acl": {"READ": {"groups": [{"id": "14", "display": "finance"}]}}}
    access = wanted(entity, permissions, holders)
    assert access.unmapped == ("group accounts (from source group finance)",)
    plain = wanted(entity, {"acl": {"READ": {"groups": [{"id": "15", "display": "sales"}]}}},
                   holders)  # fmt: skip
    assert plain.unmapped == ("group sales",)


def test_the_group_of_every_person_maps_to_id_1_whatever_its_name() -> None:
    """A Russian target names the group of every person "Все сотрудники": the English
    source's "All employees" (id 1 in every org) still maps to it, by id."""
    holders = EntityHolders(login_of=lambda ref: None, uids={},
                            groups={"Все сотрудники": "1", "engineering": "7003"})  # fmt: skip
    entity = {"fields": {"teamAccess": False}}
    permissions = {"acl": {"READ": {"groups": [{"id": "1", "display": "All employees"}]}}}
    access = wanted(entity, permissions, holders)
    assert (access.acl["READ"]["groups"], access.unmapped) == (["1"], ())
