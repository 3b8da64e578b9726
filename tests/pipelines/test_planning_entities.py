"""Projects, portfolios and goals move with a migration, with what hangs off them.

One `haul run` of the sandbox's tiny org (TEST -> NEW, `[scope] entities = "all"`) is shared
by the module. The official SDK (`client.project`, `.portfolio`, `.goal`) then reads every
entity in both orgs: its fields (status, lead and people by name, dates, description, tags,
team-only flag), its parents, comments (under a provenance line: an entity comment has no
import), checklist, files and links (issues' keys mapped, other entities by summary). The plain
user reads the same entities in both orgs, never the security group's team-only goal; verify
passes, then flags a summary and a comment edited by hand in the target.
"""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yandex_tracker_client as sdk  # a dev dependency, not our own module

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import VerifyResult, verify
from haul.pipelines.config import Config, Export, load_config
from haul.pipelines.export.command import ExportRequest, run_export
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.entity_snapshot import (
    KINDS,
    change_at_source,
    entities,
    found,
    readable,
    sdk_client,
    unlike_the_source,
)
from tests.helpers.haul_fixtures import environ, source_queues, write_config, writes, written_since

HIDDEN_GOAL = "Ship a stable platform"  # team-only to the security group, led by eve


@dataclass
class Migrated:
    info: dict[str, Any]
    config: Config
    summary: Any
    verified: VerifyResult
    sandbox: Any  # the running sandbox (its request counts)

    def sdk(self, org: str, token: str = "admin") -> Any:
        return sdk_client(self.info, org, token)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migrated]:
    from haul.sandbox import server as sandbox_server

    directory = tmp_path_factory.mktemp("planning-entities")
    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        path = write_config(directory, info, queues=source_queues(info), scope={"entities": "all"})
        config = load_config(path)
        summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        verified = asyncio.run(verify(config, all_services(), environ=environ(info)))
        yield Migrated(info, config, summary, verified, sandbox)


def test_every_entity_reads_the_same_in_both_orgs(migrated: Migrated) -> None:
    """Through the official SDK: the same projects, portfolios and goals, each with its creation
    time and author, status, people, dates, description, tags, team-only flag, parents,
    checklist, files and links (an issue's key mapped TEST -> NEW); comments keep their text
    under a provenance line."""
    assert migrated.summary.complete, migrated.summary
    source, target = migrated.sdk("source"), migrated.sdk("target")
    assert unlike_the_source(source, target) == {}
    after = entities(target)
    # what the seeded org holds, so that the comparison above compares something
    assert after[("goal", "Self-service billing")]["parent"] == "Halve onboarding time"
    assert after[("project", "Launch Development")]["parent"] == "Customer experience"
    assert after[("project", "Launch Development")]["secondary"] == ["Platform"]
    moved_links = {link for seen in after.values() for link in seen["links"]}
    assert {kind for _, kind, _ in moved_links} == {"issue", "project", "goal"}
    assert any(other.startswith("NEW-") for _, _, other in moved_links)
    assert not any(other.startswith("TEST-") for _, _, other in moved_links)
    for part in ("comments", "checklist", "files"):
        assert any(seen[part] for seen in after.values()), part
    assert {seen["teamAccess"] for seen in after.values()} == {True, False}


def test_what_no_endpoint_carries_is_counted_once_per_record_loaded(migrated: Migrated) -> None:
    """The run names what it could not carry: each comment's, file's and link's date and
    author, once per record loaded (a link between two entities shows on both, loads once)."""
    loaded = {row.entity: row.loaded for row in migrated.summary.counts}
    dropped = {
        what.split(":")[0]: count for what, count in migrated.summary.details["not_carried"].items()
    }
    for entity in ("entity_comment", "entity_attachment", "entity_link"):
        assert dropped[entity] == loaded[entity] > 0, entity


def test_the_plain_user_reads_the_same_entities_in_both_orgs(migrated: Migrated) -> None:
    """The plain user's token reads in the target exactly the entities it read at the source:
    the team-only project shared with its group, not the security group's team-only goal."""
    source, target = migrated.sdk("source", "user"), migrated.sdk("target", "user")
    hers = readable(target)
    assert hers == readable(source)
    assert ("project", "Testing roadmap") in hers  # team-only, shared with engineering
    assert ("goal", HIDDEN_GOAL) not in hers
    assert ("goal", HIDDEN_GOAL) in readable(migrated.sdk("target"))  # the admin reads it
    hidden = next(
        e for e in found(migrated.sdk("target"), "goal") if e["fields"]["summary"] == HIDDEN_GOAL
    )
    with pytest.raises((sdk.exceptions.Forbidden, sdk.exceptions.NotFound)):
        target.goal.get(hidden["id"])


def test_verify_passes_then_flags_what_was_edited_by_hand(
    migrated: Migrated,
) -> None:
    """verify compares every loaded entity and sub-record (0 differences), then flags an
    entity's summary, a comment's text and a checklist item changed in the target through the
    API."""
    verified = migrated.verified
    assert verified.ok, verified.differences[:5]
    checked = {v.entity: v for v in verified.entities}
    for entity in (*KINDS, "entity_access", "entity_comment", "entity_checklist",
                   "entity_attachment", "entity_link"):  # fmt: skip
        verdict = checked[entity]
        assert verdict.checked == verdict.found == verdict.loaded > 0, verdict

    target = migrated.sdk("target")
    project = next(
        target.project.get(e["id"], fields="summary,checklistItems")
        for e in found(target, "project")
        if e["fields"].get("checklistItems") and list(target.project.get(e["id"]).comments.get_all())
    )  # fmt: skip
    comment = next(iter(project.comments.get_all()))
    summary, text = project.fields["summary"], comment.text
    item = project.fields["checklistItems"][0]
    project.update(fields={"summary": "Renamed by hand"})
    comment.update(text="Edited by hand")
    project.checklist_items.update([{"id": item["id"], "checked": not item["checked"]}])
    try:
        edited = asyncio.run(
            verify(migrated.config, all_services(), environ=environ(migrated.info))
        )
    finally:
        project.update(fields={"summary": summary}, ignore_version_change=True)
        comment.update(text=text)
        project.checklist_items.update([{"id": item["id"], "checked": item["checked"]}])
    flagged = {(d.entity, d.field, d.target) for d in edited.differences}
    assert ("project", "summary", "Renamed by hand") in flagged
    assert ("entity_comment", "text", "Edited by hand") in flagged
    assert {(d.entity, d.field) for d in edited.differences if d.entity == "entity_checklist"} == {
        ("entity_checklist", "items")
    }
    assert {d.entity for d in edited.differences} <= {
        "project", "entity_access", "entity_comment", "entity_checklist"
    }  # fmt: skip


ENTITY_TABLES = {
    "portfolios": "portfolio",
    "projects": "project",
    "goals": "goal",
    "entity_comments": "entity_comment",
    "entity_checklist_items": "entity_checklist",
    "entity_attachments": "entity_attachment",
    "entity_links": "entity_link",
}


def test_the_export_has_a_row_per_staged_entity_and_sub_record(
    migrated: Migrated, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`haul export` writes the entities and what hangs off them: a row per staged record (a
    checklist: per item), people by login, each sub-record with its entity's id and type."""
    out = tmp_path_factory.mktemp("entity-export")
    every = Export(restricted="include")  # every staged record, team-only ones too
    request = ExportRequest(out=out, format="csv", entities=tuple(ENTITY_TABLES), settings=every)
    result = run_export(migrated.config, request, services=services())
    tables = {
        file.table: list(csv.DictReader(io.StringIO((result.folder / file.file).read_text())))
        for file in result.files
    }
    with StagingStore.open_readonly(migrated.config.staging_path) as store:
        staged = {kind: list(store.iter_records(kind)) for kind in ENTITY_TABLES.values()}
    assert sorted(tables) == sorted(ENTITY_TABLES)
    for table, entity in ENTITY_TABLES.items():
        if entity == "entity_checklist":
            wanted = [(r.parent, str(i["id"])) for r in staged[entity] for i in r.raw["items"]]
        else:
            wanted = [(r.parent, str(r.raw["id"])) for r in staged[entity]]
        parent = "parent_id" if entity in ("portfolio", "project", "goal") else "entity_id"
        found = [(row[parent] or None, row["id"]) for row in tables[table]]
        assert sorted(found, key=str) == sorted(wanted, key=str), table
        assert wanted, table  # the seeded org has some of each

    kinds = {row["id"]: kind for kind in ("portfolio", "project", "goal")
             for row in tables[kind + "s"]}  # fmt: skip
    for table in (
        "entity_comments",
        "entity_checklist_items",
        "entity_attachments",
        "entity_links",
    ):
        assert {kinds[row["entity_id"]] == row["entity_type"] for row in tables[table]} == {True}
    project = next(row for row in tables["projects"] if row["summary"] == "Launch Development")
    assert kinds[project["parent_id"]] == "portfolio"
    assert project["lead_login"] and project["created_by_login"]
    assert "@" not in project["team_users"] and project["team_users"].startswith("[")
    issue_links = [row for row in tables["entity_links"] if row["other_type"] == "issue"]
    assert issue_links and all(
        row["other_key"].startswith(("TEST-", "DEV-", "OPS-")) for row in issue_links
    )
    sizes = {row["name"]: int(row["size"]) for row in tables["entity_attachments"]}
    assert all(size > 0 for size in sizes.values()) and all(
        row["sha256"] for row in tables["entity_attachments"]
    )


def test_a_comment_added_at_the_source_is_the_next_runs_one_write(migrated: Migrated) -> None:
    """A comment added to a project moves the project's `updatedAt`: the next run stages it
    again, and writes the comment alone (the project, as the target holds it, is unchanged)."""
    source = migrated.sdk("source")
    (project,) = [
        e for e in found(source, "project") if e["fields"]["summary"] == "Launch Development"
    ]
    source.project.get(project["id"]).comments.create(text="Said after the migration")
    before = writes(migrated.sandbox.stats())
    assert asyncio.run(
        run_all(migrated.config, all_services(), environ=environ(migrated.info))
    ).complete
    written = written_since(before, writes(migrated.sandbox.stats()))
    assert written == {"POST /v3/entities/{entity_type}/{entity_id}/comments": 1}
    assert unlike_the_source(source, migrated.sdk("target")) == {}


def test_a_later_run_carries_the_changes_made_at_the_source(migrated: Migrated) -> None:
    """At the source, a project's status, description and tags change, one of its comments is
    edited and one added, an item of its checklist is checked and one added; another project's
    checklist is emptied; a goal is renamed and made team-only. The next run carries each change once; verify passes. (Last in the
    module: it changes both orgs.)"""
    source, target = migrated.sdk("source"), migrated.sdk("target")
    change_at_source(source)
    summary = asyncio.run(run_all(migrated.config, all_services(), environ=environ(migrated.info)))
    assert summary.complete, summary
    assert unlike_the_source(source, target) == {}
    hers = readable(migrated.sdk("target", "user"))
    assert hers == readable(migrated.sdk("source", "user"))
    assert ("goal", "Halve onboarding time again") not in hers
    verified = asyncio.run(verify(migrated.config, all_services(), environ=environ(migrated.info)))
    assert verified.ok, verified.differences[:5]
