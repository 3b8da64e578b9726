"""Entity permissions end to end on the sandbox, over sockets (`[scope] entities = "all"`):
after `haul run` the plain user reads in the target exactly the projects, portfolios and goals
it read in the source and the admin reads them all; `haul verify` compares access (entries and
who reads, inheritance resolved) and flags an entity opened wider by hand, and the sub-goal
that inherits from it; a holder that maps to no one leaves its entity team-only to its mapped
owner and the migrating admin, named by check, plan, the failed row and the report; a later
run carries a change of access at the source, narrowing first; and while a load runs, slowed
down, the plain user never reads an entity the source refused it.

Beside what the tiny org seeds (a team-only project shared with engineering and frank; a goal
only the security group reads), the source gets three team-only entities before the extract:
one the plain user wrote but may not read (its author's role revoked everywhere, hr reads it),
one it reads only as its lead (OWNER), and a sub-goal of the security goal read only by those
who read the goal (inherited).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, load, run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import (
    TOKEN_ENV,
    environ,
    mapping_files,
    source_queues,
    writes,
    written_since,
)

KINDS = ("portfolio", "project", "goal")
ROLES = ["AUTHOR", "OWNER", "CLIENT", "FOLLOWER", "MEMBER"]
MINUTES = "Board minutes"  # alice wrote it; only hr reads it
SHELF = "Alice's shelf"  # alice reads it as its lead only
RED_TEAM = "Red team exercise"  # under the security goal, read through it
SECURITY_GOAL = "Ship a stable platform"
ROADMAP = "Testing roadmap"  # seeded: team-only, engineering and frank read it


def tracker(info: dict[str, Any], org: str, token: str = "admin") -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens'][token]}", "X-Org-ID": info["orgs"][org]}
    return httpx.Client(base_url=info["tracker"], headers=headers, timeout=30)


def write(directory: Path, info: dict[str, Any], **mapping: str) -> Config:
    """haul.toml moving the tracker and every entity type, with mapping files if given."""
    mapping = mapping_files(directory, mapping)
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=source_queues(info),
        mapping_extra={"default_user": "robot", **mapping},
        scope_extra={"entities": "all"},
    )
    return load_config(write_sandbox_config(directory, info, options))


def entities(info: dict[str, Any], org: str, token: str = "admin") -> dict[str, tuple[str, str]]:
    """Every entity `token` finds in `org`: id -> (type, summary)."""
    found = {}
    with tracker(info, org, token) as client:
        for kind in KINDS:
            reply = client.post(f"/entities/{kind}/_search", params={"perPage": 1000}, json={})
            assert reply.status_code == 200, reply.text
            for value in reply.json()["values"]:
                found[str(value["id"])] = (kind, value["fields"]["summary"])
    return found


def named(info: dict[str, Any], org: str, summary: str) -> tuple[str, str]:
    """(type, id) of the entity called `summary` in `org`."""
    return next((kind, i) for i, (kind, s) in entities(info, org).items() if s == summary)


def group_id(client: httpx.Client, name: str) -> str:
    return next(str(g["id"]) for g in client.get("/groups").json() if g["name"] == name)


def shape_source(info: dict[str, Any]) -> None:
    """The three team-only entities of the module docstring, made in the source."""
    with tracker(info, "source") as client:
        _, security = named(info, "source", SECURITY_GOAL)
        made = {}
        for kind, summary, fields, author in (
            ("project", MINUTES, {"description": "Who said what."}, "alice"),
            ("portfolio", SHELF, {"lead": "alice"}, "bob"),
            ("goal", RED_TEAM, {"parent": security}, "trent"),
        ):
            body = {"fields": {"summary": summary, "teamAccess": True, **fields},
                    "createdAt": "2023-03-01T10:00:00.000+0000", "createdBy": author}  # fmt: skip
            reply = client.post(f"/entities/{kind}/_import", json=body)
            assert reply.status_code == 201, reply.text
            made[summary] = (kind, str(reply.json()["id"]))
        kind, minutes = made[MINUTES]
        edit = {
            "revoke": {level: {"roles": ROLES} for level in ("READ", "WRITE", "GRANT")},
            "grant": {"READ": {"groups": [group_id(client, "hr")]}},
        }
        reply = client.patch(f"/entities/{kind}/{minutes}/permissions", json=edit)
        assert reply.status_code == 200, reply.text


def moved(config: Config) -> dict[str, str]:
    """Source entity id -> its target id, from the ledger's done rows."""
    with StagingStore.open(config.staging_path) as store:
        return {
            row.source_id: str(row.target_id)
            for kind in KINDS
            for row in store.ledger.iter_rows(entity=kind)
            if row.status == "done"
        }


def statuses(info: dict[str, Any], org: str, ids: dict[str, str]) -> dict[str, int]:
    """What the plain user gets for each entity (id -> type) and its comments."""
    found = {}
    with tracker(info, org, "user") as client:
        for entity_id, kind in ids.items():
            codes = {client.get(f"/entities/{kind}/{entity_id}").status_code,
                     client.get(f"/entities/{kind}/{entity_id}/comments").status_code}  # fmt: skip
            assert len(codes) == 1, (entity_id, codes)
            found[entity_id] = codes.pop()
    return found


@dataclass
class Migrated:
    info: dict[str, Any]
    config: Config
    summary: Any


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migrated]:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        shape_source(info)
        config = write(tmp_path_factory.mktemp("entity-access"), info)
        summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        yield Migrated(info, config, summary)


def test_the_plain_user_reads_in_the_target_exactly_the_entities_it_read(
    migrated: Migrated,
) -> None:
    info = migrated.info
    assert migrated.summary.complete, migrated.summary
    counts = {row.entity: row for row in migrated.summary.counts}
    assert counts["entity_access"].loaded == counts["entity_access"].to_load == 14

    to = moved(migrated.config)
    everything = entities(info, "source")
    assert set(to) == set(everything)
    alice = set(entities(info, "source", "user"))
    hidden = {everything[i][1] for i in set(everything) - alice}
    assert hidden == {SECURITY_GOAL, MINUTES, RED_TEAM}
    assert {SHELF, ROADMAP} <= {everything[i][1] for i in alice}

    assert set(entities(info, "target", "user")) == {to[i] for i in alice}  # none more or fewer
    assert set(entities(info, "target", "admin")) == set(to.values())
    source = statuses(info, "source", {i: kind for i, (kind, _) in everything.items()})
    target = statuses(info, "target", {to[i]: kind for i, (kind, _) in everything.items()})
    assert {to[i]: code for i, code in source.items()} == target
    assert {source[i] for i in set(everything) - alice} == {403}


def test_verify_compares_access_and_flags_an_entity_opened_by_hand(migrated: Migrated) -> None:
    info, config = migrated.info, migrated.config
    verified = asyncio.run(verify(config, all_services(), environ=environ(info)))
    assert verified.ok, verified.differences[:5]
    access = next(v for v in verified.entities if v.entity == "entity_access")
    assert access.checked == access.found == access.loaded == 14

    to = moved(config)
    security = next(i for i, (_, s) in entities(info, "source").items() if s == SECURITY_GOAL)
    minutes = next(i for i, (_, s) in entities(info, "source").items() if s == MINUTES)
    with tracker(info, "target") as client:  # someone opens two entities by hand
        grant = {"grant": {"READ": {"groups": [group_id(client, "All employees")]}}}
        reply = client.patch(f"/entities/goal/{to[security]}/permissions", json=grant)
        assert reply.status_code == 200, reply.text
        opened = {"fields": {"teamAccess": False}}
        reply = client.patch(f"/entities/project/{to[minutes]}", json=opened)
        assert reply.status_code == 200, reply.text
    assert SECURITY_GOAL in {s for _, s in entities(info, "target", "user").values()}

    widened = asyncio.run(verify(config, all_services(), environ=environ(info)))
    flagged = {(d.source_id.removesuffix("/access"), d.field) for d in widened.differences}
    assert {d.entity for d in widened.differences} == {"entity_access"}
    red_team = next(i for i, (_, s) in entities(info, "source").items() if s == RED_TEAM)
    assert flagged == {
        (security, "acl"),
        (security, "readers"),
        (red_team, "readers"),  # its own entries are as they were: it inherits the goal's
        (minutes, "teamAccess"),
        (minutes, "readers"),
    }


def test_a_holder_mapped_to_no_one_leaves_its_entity_team_only_and_named(tmp_path: Path) -> None:
    """engineering and hr map to groups the target lacks: the seeded roadmap (engineering reads
    it) ends team-only to its lead, who holds every level there as at the source, and the
    migrating admin; the minutes (hr reads them) to no one but the admin, since the source gave
    their owner (alice, their author: they have no lead) nothing. check, plan, the failed rows
    and the report name entity and group; everything else moves with its access; once the
    mapping is fixed, `haul load --retry-failed` gives both the source's access."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        shape_source(info)
        groups = "source group,target group\nengineering,eng\nhr,people\n"
        config = write(tmp_path, info, groups_file=groups)
        closed = {
            "engineering": named(info, "source", ROADMAP),
            "hr": named(info, "source", MINUTES),
        }
        asyncio.run(extract(config, all_services(), environ=environ(info)))

        checked = asyncio.run(run_check(config, all_services(), environ(info)))
        assert not [f for f in checked if f.level == "error"], checked
        plan = asyncio.run(make_plan(config, all_services(), environ=environ(info)))
        conflicts = {s: why for e, s, why in plan.conflicts if e == "entity_access"}
        assert set(conflicts) == {f"{i}/access" for _, i in closed.values()}
        summary = asyncio.run(load(config, all_services(), environ=environ(info)))
        assert not summary.complete
        failed = {row.entity: row.failed for row in summary.counts if row.failed}
        assert failed == {"entity_access": 2}  # restricted, not left out: their records moved
        report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
        reasons = [f["reason"] for f in report["failures_by_reason"]
                   if f["entity"] == "entity_access"]  # fmt: skip
        with StagingStore.open(config.staging_path) as store:
            for group, (kind, entity_id) in closed.items():
                holder, entity = f"group {group}", f"{kind} {entity_id}"
                assert any(holder in w.what and entity in w.what for w in checked), checked
                assert holder in conflicts[f"{entity_id}/access"]
                row = store.ledger.get("entity_access", f"{entity_id}/access")
                assert row is not None and row.status == "failed"
                assert entity in str(row.error) and holder in str(row.error)
                assert any(entity in r and holder in r for r in reasons), reasons

        to = moved(config)
        lead = people(info, "source", *closed["engineering"])["lead"]
        roadmap = people(info, "target", closed["engineering"][0], to[closed["engineering"][1]])
        assert roadmap["teamAccess"] is True and roadmap["description"]  # restricted, and whole
        assert roadmap["lead"] == lead
        assert roadmap["acl"] == {level: {"users": [lead], "groups": [], "roles": []}
                                  for level in ("READ", "WRITE", "GRANT")}  # fmt: skip
        minutes = people(info, "target", closed["hr"][0], to[closed["hr"][1]])
        assert minutes["teamAccess"] is True and minutes["author"] == "Alice Anderson"
        assert minutes["acl"] == {level: {"users": [], "groups": [], "roles": []}
                                  for level in ("READ", "WRITE", "GRANT")}  # fmt: skip
        alice = set(entities(info, "source", "user"))
        narrowed = {to[i] for i in alice} - set(entities(info, "target", "user"))
        assert narrowed == ({to[closed["engineering"][1]]} if lead != "Alice Anderson" else set())

        with tracker(info, "target") as client:  # the fix: engineering by its id, hr by name
            fix = f"engineering,dir:{group_id(client, 'engineering')}\n"
        (tmp_path / "groups_file.csv").write_text(fix, encoding="utf-8")
        fixed = asyncio.run(load(config, all_services(), environ=environ(info), retry_failed=True))
        assert fixed.complete, fixed
        assert set(entities(info, "target", "user")) == {to[i] for i in alice}
        assert asyncio.run(verify(config, all_services(), environ=environ(info))).ok


def people(info: dict[str, Any], org: str, kind: str, entity_id: str) -> dict[str, Any]:
    """An entity's team-only flag, description, lead and author (display names) and its ACL
    (users by display name, groups by name)."""
    with tracker(info, org) as client:
        params = {"fields": "teamAccess,description,lead,author"}
        fields = client.get(f"/entities/{kind}/{entity_id}", params=params).json()["fields"]
        acl = client.get(f"/entities/{kind}/{entity_id}/permissions").json()["acl"]
    return {
        "teamAccess": fields.get("teamAccess"),
        "description": fields.get("description"),
        **{name: (fields.get(name) or {}).get("display") for name in ("lead", "author")},
        "acl": {level: by_name(held) for level, held in acl.items()},
    }


def by_name(held: dict[str, Any]) -> dict[str, list[str]]:
    """One level's holders: users and groups by display name, roles as they are."""
    return {
        "users": [user["display"] for user in held["users"]],
        "groups": [group["display"] for group in held["groups"]],
        "roles": held["roles"],
    }


def test_a_later_run_carries_a_change_of_access_at_the_source_narrowing_first(
    tmp_path: Path,
) -> None:
    """After a first run, the source shuts an open project to all but hr and rewrites its
    description: the next run makes it team-only, sets its ACL, and only then writes the new
    description (edits only; the plain user, polling while the permission calls are slowed,
    never reads the new description); it then reads what it reads at the source, and verify
    passes."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        config = write(tmp_path, info)
        assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
        kind, launch = named(info, "source", "Launch Development")
        with tracker(info, "source") as client:
            shut = {"fields": {"teamAccess": True, "description": "Who goes first."}}
            assert client.patch(f"/entities/{kind}/{launch}", json=shut).status_code == 200
            edit = {
                "revoke": {level: {"roles": ROLES} for level in ("READ", "WRITE", "GRANT")},
                "grant": {"READ": {"groups": [group_id(client, "hr")]}},
            }
            reply = client.patch(f"/entities/{kind}/{launch}/permissions", json=edit)
            assert reply.status_code == 200, reply.text
        before = writes(sandbox.stats())
        target = moved(config)[launch]
        sandbox.set_faults("latency:30@/v3/entities/*/permissions")
        seen: list[tuple[int, str]] = []
        done = threading.Event()
        watcher = threading.Thread(target=watch, args=(info, kind, target, seen, done))
        watcher.start()
        try:
            assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
        finally:
            done.set()
            watcher.join()
        sandbox.set_faults("")
        assert (200, "Who goes first.") not in seen
        assert seen[0][0] == 200 and seen[-1][0] == 403, seen  # open before, shut after

        written = written_since(before, writes(sandbox.stats()))
        assert set(written) == {  # edits of what is there: narrow, the ACL, the content
            "PATCH /v3/entities/{entity_type}/{entity_id}",
            "PATCH /v3/entities/{entity_type}/{entity_id}/permissions",
        }
        assert written["PATCH /v3/entities/{entity_type}/{entity_id}/permissions"] == 1
        assert people(info, "target", kind, target) == people(info, "source", kind, launch)
        alice = entities(info, "source", "user")
        assert sorted(entities(info, "target", "user").values()) == sorted(alice.values())
        assert asyncio.run(verify(config, all_services(), environ=environ(info))).ok


def watch(
    info: dict[str, Any], kind: str, entity_id: str, seen: list[tuple[int, str]], done: Any
) -> None:
    """Until `done`: the plain user's status for one target entity, with its description."""
    with tracker(info, "target", "user") as user:
        while not done.is_set():
            reply = user.get(f"/entities/{kind}/{entity_id}", params={"fields": "description"})
            fields = reply.json().get("fields") or {} if reply.status_code == 200 else {}
            seen.append((reply.status_code, str(fields.get("description"))))


def test_no_instant_of_the_load_shows_the_plain_user_an_entity_the_source_refused_it(
    tmp_path: Path,
) -> None:
    """The load runs slowly (every import and permission read or change waits); meanwhile the
    plain user asks for each entity it could not read at the source, again and again, by id
    and in searches: never a 200, never listed."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        shape_source(info)
        config = write(tmp_path, info)
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        everything = entities(info, "source")
        alice = entities(info, "source", "user")
        hidden = {everything[i] for i in set(everything) - set(alice)}
        assert len(hidden) == 3
        sandbox.set_faults(
            "latency:30@/v3/entities/*/permissions,latency:30@/v3/entities/*/_import"
        )
        seen: dict[tuple[str, str], set[int]] = {}
        done = threading.Event()
        poller = threading.Thread(target=poll, args=(info, hidden, seen, done))
        poller.start()
        try:
            summary = asyncio.run(load(config, all_services(), environ=environ(info)))
        finally:
            done.set()
            poller.join()
        sandbox.set_faults("")
        assert summary.complete, summary
        assert set(seen) == hidden  # each was polled once it existed
        assert all(codes == {403} for codes in seen.values()), seen
        assert sorted(entities(info, "target", "user").values()) == sorted(alice.values())


def poll(
    info: dict[str, Any], hidden: set[tuple[str, str]], seen: dict[Any, set[int]], done: Any
) -> None:
    """Until `done`, and once more after: find the hidden entities the target has so far (as
    the admin), ask for each as the plain user, and search as it (a hidden entity it finds
    counts as a 200)."""
    with tracker(info, "target") as admin, tracker(info, "target", "user") as user:
        while True:
            last = done.is_set()
            for kind in KINDS:
                for value in search(admin, kind):
                    key = (kind, value["fields"]["summary"])
                    if key in hidden:
                        got = user.get(f"/entities/{kind}/{value['id']}").status_code
                        seen.setdefault(key, set()).add(got)
                for value in search(user, kind):
                    if (key := (kind, value["fields"]["summary"])) in hidden:
                        seen.setdefault(key, set()).add(200)
            if last:
                return


def search(client: httpx.Client, kind: str) -> list[dict[str, Any]]:
    reply = client.post(f"/entities/{kind}/_search", params={"perPage": 1000}, json={})
    assert reply.status_code == 200, reply.text
    return list(reply.json()["values"])
