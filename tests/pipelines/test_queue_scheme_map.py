"""A queue's permission scheme mapped on plain dicts: users and groups by their target names,
roles as they are, and a holder that maps to no one left out (narrower, never wider)."""

from __future__ import annotations

import pytest

from haul.pipelines.tracker.organisation.configuration import Holders, mapped_scheme, scheme_body

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

HOLDERS = Holders(
    login_of=lambda ref: {"11": "alice", "12": "bob"}.get(str(ref.get("id"))),
    logins={"901": "alice", "902": "bob"},
    groups={"engineering": "7003", "auditors": "7009"},
    group_file={"security": "auditors"},
)
SCHEME = {
    "read": {
        "users": [{"id": "11", "display": "Alice"}, {"id": "13", "display": "Gone Person"}],
        "groups": [{"id": "5", "display": "security"}, {"id": "6", "display": "finance"}],
    },
    "write": {"groups": [{"id": "6", "display": "finance"}], "roles": [{"id": "author"}]},
    "grant": {"users": [{"id": "12", "display": "Bob"}]},
}


def test_holders_map_by_login_and_group_name_and_the_unmapped_are_left_out() -> None:
    names, unmapped = mapped_scheme(SCHEME, HOLDERS)
    assert names == {
        "create": [],
        "write": ["role:author"],
        "read": ["group:auditors", "user:alice"],
        "grant": ["user:bob"],
    }
    assert unmapped == ["group finance", "user Gone Person"]


def test_the_patch_replaces_every_code_so_nothing_the_target_had_stays_open() -> None:
    """Every code is sent, even an empty one: the new queue's default holders (everyone may
    read) do not survive beside the source's."""
    body = scheme_body(mapped_scheme(SCHEME, HOLDERS)[0], HOLDERS)
    assert body["read"] == {"users": ["alice"], "groups": ["7009"], "roles": []}
    assert body["create"] == {"users": [], "groups": [], "roles": []}
    assert body["write"] == {"users": [], "groups": [], "roles": ["author"]}


def test_the_group_of_every_person_maps_by_its_id_whatever_each_language_calls_it() -> None:
    """Id 1 in every org: an English source's "All employees" is a Russian target's "Все
    сотрудники", sent as id 1; the groups file can still map it elsewhere."""
    russian = Holders(
        login_of=lambda ref: None, logins={}, groups={"Все сотрудники": "1", "engineering": "7003"}
    )
    scheme = {"read": {"groups": [{"id": "1", "display": "All employees"}]}}
    names, unmapped = mapped_scheme(scheme, russian)
    assert (names["read"], unmapped) == (["group:Все сотрудники"], [])
    assert scheme_body(names, russian)["read"]["groups"] == ["1"]
    elsewhere = Holders(login_of=russian.login_of, logins={}, groups=russian.groups,
                        group_file={"All employees": "engineering"})  # fmt: skip
    assert mapped_scheme(scheme, elsewhere)[0]["read"] == ["group:engineering"]
