"""Saved filters, dashboards, remote links and autoactions move with a migration.

One `haul run` of the sandbox's tiny org (TEST -> NEW, `[scope] filters` and `dashboards` =
"all") is shared by the module. Before it, the source gets a filter naming a queue no org has
and one of its autoactions is switched off; after the extract, one staged remote link is made
to point into an application the target lacks (what a source with an integration the target
never connected looks like). The official SDK (raw requests where it has no collection) then
reads the same filters, dashboards with their widgets, remote links and autoactions in both
orgs, queries rewritten; verify passes, then flags a filter's query changed by hand.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yandex_tracker_client as sdk  # a dev dependency, not our own module

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.findings import Finding
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import environ, source_queues, write_config

SCOPE = {"filters": "all", "dashboards": "all"}
GHOST = {"name": "Ghost work", "query": "Queue: GHOST AND Key: TEST-1"}
NOWHERE = {"id": "ru.yandex.nowhere", "name": "Nowhere", "type": "nowhere"}


@dataclass
class Migrated:
    info: dict[str, Any]
    config: Config
    summary: Any
    findings: list[Finding]
    tampered: str  # the source id of the remote link into an application the target lacks
    requests: dict[str, int]  # the run's requests by route

    def raw(self, org: str, method: str, path: str, **kwargs: Any) -> Any:
        headers = {
            "Authorization": f"OAuth {self.info['tokens']['admin']}",
            "X-Org-ID": self.info["orgs"][org],
        }
        reply = httpx.request(method, self.info["tracker"] + path, headers=headers, **kwargs)
        assert reply.status_code < 300, reply.text
        return reply.json()

    def sdk(self, org: str) -> Any:
        host = self.info["tracker"].rsplit("/v3", 1)[0]
        token, org_id = self.info["tokens"]["admin"], self.info["orgs"][org]
        return sdk.TrackerClient(token=token, org_id=org_id, base_url=host, retries=1)


def _tamper_one_remote_link(config: Config) -> str:
    with StagingStore.open(config.staging_path) as store:
        record = next(store.iter_records("remote_link"))
        raw = {**record.raw, "object": {**record.raw["object"], "application": NOWHERE}}
        row = {"source_id": record.source_id, "parent": record.parent, "raw": raw}
        with store.transaction():
            store.upsert_records("remote_link", [row])
        return record.source_id


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migrated]:
    from haul.sandbox import server as sandbox_server

    directory = tmp_path_factory.mktemp("planning-layer")
    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        config = load_config(write_config(directory, info, queues=source_queues(info), scope=SCOPE))
        done = Migrated(info, config, None, [], "", {})
        done.raw("source", "POST", "/filters", json=GHOST)
        first = done.raw("source", "GET", "/queues/TEST/autoactions")[0]
        done.raw("source", "PATCH", f"/queues/TEST/autoactions/{first['id']}",
                 json={"active": False, "version": first["version"]})  # fmt: skip
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        done.tampered = _tamper_one_remote_link(config)
        done.findings = asyncio.run(run_check(config, all_services(), environ=environ(info)))
        before = sandbox.stats()["by_route"]
        done.summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        after = sandbox.stats()["by_route"]
        done.requests = {route: n - before.get(route, 0) for route, n in after.items()}
        yield done


def _filters(client: Any) -> set[tuple[str, str]]:
    return {(f.name, f.query) for f in client.filters.get_all()}


def _remote_links(migrated: Migrated, org: str, key: str) -> dict[str, tuple[str, str, str]]:
    links = migrated.raw(org, "GET", f"/issues/{key}/remotelinks")
    return {
        f"{key}/{r['id']}": (r["object"]["application"]["id"], r["object"]["key"], r["type"]["id"])
        for r in links
    }


def _dashboards(migrated: Migrated, org: str) -> set[Any]:
    found = set()
    for board in migrated.raw(org, "GET", "/dashboards"):
        widgets = migrated.raw(org, "GET", f"/dashboards/{board['id']}/widgets")
        found.add((board["name"], board["layout"], board["owner"]["display"], tuple(
            (w["description"], w["query"], tuple(s["key"] for s in w["fromStatuses"]),
             tuple(s["key"] for s in w["toStatuses"]), w.get("mode"))
            for w in widgets
        )))  # fmt: skip
    return found


def _autoactions(client: Any, queue: str) -> set[tuple[Any, ...]]:
    return {
        (a.name, a.query, a.active, a.intervalMillis, json.dumps(a.actions, sort_keys=True))
        for a in client.queues[queue].collection.autoactions.get_all()
    }


def test_filters_dashboards_remote_links_and_autoactions_read_the_same_in_both_orgs(
    migrated: Migrated,
) -> None:
    """Through the official SDK and raw requests: every saved filter (name and query, TEST
    rewritten to NEW), dashboard with its cycle-time widget, remote link (but the one into an
    application the target lacks) and autoaction (active state too) is in the target."""
    source, target = migrated.sdk("source"), migrated.sdk("target")
    assert _filters(target) == {
        (name, query.replace("TEST", "NEW")) for name, query in _filters(source)
    }
    assert ("Ghost work", "Queue: GHOST AND Key: NEW-1") in _filters(target)
    assert _dashboards(migrated, "target") == {
        (name, layout, owner, tuple((w[0], w[1].replace("TEST", "NEW"), *w[2:]) for w in widgets))
        for name, layout, owner, widgets in _dashboards(migrated, "source")
    }
    moved = 0
    for queue in source_queues(migrated.info):
        for issue in source.issues.find(query=f"Queue: {queue}"):
            wanted = _remote_links(migrated, "source", issue.key)
            wanted.pop(migrated.tampered, None)
            found = _remote_links(migrated, "target", issue.key.replace("TEST-", "NEW-"))
            assert sorted(found.values()) == sorted(wanted.values()), issue.key
            moved += len(found)
    assert moved >= 5  # the seeded org has remote links on about one issue in six
    assert _autoactions(target, "NEW") == {
        (name, query.replace("TEST", "NEW"), *rest)
        for name, query, *rest in _autoactions(source, "TEST")
    }
    assert False in {a[2] for a in _autoactions(target, "NEW")}  # the switched-off one stays off


def test_a_remote_link_into_an_application_the_target_lacks_fails_named_and_check_said_so(
    migrated: Migrated,
) -> None:
    """`haul check` names the missing application before the load; the load fails that one
    link with the application in its error and loads every other record."""
    missing = [f for f in migrated.findings if "ru.yandex.nowhere" in f.what]
    assert [f.level for f in missing] == ["error"], migrated.findings
    assert migrated.summary.failed == 1
    with StagingStore.open(migrated.config.staging_path) as store:
        row = store.ledger.get("remote_link", migrated.tampered)
        assert row is not None and row.status == "failed"
        assert "no application ru.yandex.nowhere" in (row.error or "")


def test_autoactions_are_created_after_every_issue_link_and_saved_object(
    migrated: Migrated,
) -> None:
    """Importing issues fires no autoaction: each was made once everything else was in."""
    with StagingStore.open(migrated.config.staging_path) as store:
        done = list(store.ledger.iter_rows(status="done"))
    autoactions = [row.updated_at for row in done if row.entity == "autoaction"]
    others = [row.updated_at for row in done if row.entity in ("issue", "link", "filter")]
    assert autoactions and others
    assert min(autoactions) >= max(others)


def test_verify_passes_then_names_a_filter_whose_query_was_changed_by_hand(
    migrated: Migrated,
) -> None:
    """Every carried record compares equal; a saved filter edited in the target is named."""
    clean = asyncio.run(verify(migrated.config, all_services(), environ=environ(migrated.info)))
    assert clean.differences == []
    compared = {v.entity for v in clean.entities if v.compared and v.checked}
    assert {"remote_link", "filter", "dashboard", "dashboard_widget", "autoaction"} <= compared
    edited = next(
        f for f in migrated.raw("target", "GET", "/filters") if f["name"] != GHOST["name"]
    )
    migrated.raw("target", "PATCH", f"/filters/{edited['id']}", json={"query": "Queue: NEW"})
    result = asyncio.run(verify(migrated.config, all_services(), environ=environ(migrated.info)))
    assert {d.entity for d in result.differences} == {"filter"}


def test_a_later_run_carries_a_filter_and_an_autoaction_changed_at_the_source(
    migrated: Migrated,
) -> None:
    """A filter's query and an autoaction's name and state edited at the source reach the
    target on the next run (each a refresh of its loaded row), and leave no problem."""
    source_filter = next(f for f in migrated.raw("source", "GET", "/filters") if f["query"])
    query = "Queue: TEST AND Status: open"
    migrated.raw("source", "PATCH", f"/filters/{source_filter['id']}", json={"query": query})
    action = migrated.raw("source", "GET", "/queues/TEST/autoactions")[-1]
    renamed = {"name": f"{action['name']} (weekly)", "active": not action["active"]}
    migrated.raw("source", "PATCH", f"/queues/TEST/autoactions/{action['id']}",
                 params={"version": action["version"]}, json=renamed)  # fmt: skip

    again = asyncio.run(run_all(migrated.config, all_services(), environ=environ(migrated.info)))

    assert again.problems == 0 and again.failed == 1  # the remote link into nowhere, still
    filters = {f["name"]: f["query"] for f in migrated.raw("target", "GET", "/filters")}
    assert filters[source_filter["name"]] == "Queue: NEW AND Status: open"
    actions = {
        a["name"]: a["active"] for a in migrated.raw("target", "GET", "/queues/NEW/autoactions")
    }
    assert actions[renamed["name"]] is renamed["active"] and action["name"] not in actions


@pytest.mark.slow  # the small org (1 000 issues): the tiny org's modules are the default run's
def test_the_small_org_with_every_scope_key_reads_the_same_in_both_orgs(tmp_path: Path) -> None:
    """On the small org with `entities`, `filters` and `dashboards` = "all": `haul run` loads
    everything, the official SDK finds the same projects, portfolios and goals (fields,
    parents, comments, checklists, files, links), saved filters and remote links in both
    orgs, and verify finds no difference."""
    from haul.sandbox import server as sandbox_server
    from tests.helpers.entity_snapshot import unlike_the_source

    scope = {"entities": "all", "filters": "all", "dashboards": "all"}
    with sandbox_server.start_sandbox(size="small", seed=5) as sandbox:
        info = sandbox.info
        config = load_config(write_config(tmp_path, info, queues=source_queues(info), scope=scope))
        summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        assert summary.complete and summary.failed == 0, summary
        done = Migrated(info, config, summary, [], "", {})
        source, target = done.sdk("source"), done.sdk("target")
        assert unlike_the_source(source, target) == {}
        wanted = {(name, query.replace("TEST", "NEW")) for name, query in _filters(source)}
        assert _filters(target) == wanted and wanted
        links = 0
        for issue in source.issues.find(query=f"Queue: {', '.join(source_queues(info))}"):
            mine = _remote_links(done, "source", issue.key)
            theirs = _remote_links(done, "target", issue.key.replace("TEST-", "NEW-"))
            assert sorted(theirs.values()) == sorted(mine.values()), issue.key
            links += len(theirs)
        assert links > 100
        result = asyncio.run(verify(config, all_services(), environ=environ(info)))
        assert result.differences == []
        # every entity loaded is compared (a replaced file's old copy, none in a first
        # migration, has nothing to read back)
        assert {v.entity for v in result.entities if not v.compared and v.loaded} == set()
