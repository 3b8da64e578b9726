"""The organisation as configured moves into the sandbox's empty organisation: every queue's
triggers and macros, every board's sprints, every version with its flags.

One `haul run` of the tiny org into the empty org (no queue mapping) is shared by the module;
the official SDK then reads the same triggers, macros, sprints and versions in both orgs.
Importing the issues fires no trigger (the sandbox counts firings); verify passes, then names
the queue of a trigger changed in the target by hand; a later run carries a macro changed and
a trigger deleted at the source. The sandbox takes macros in the v3 form alone
(`v3_only:macros`), as a service that follows its v3 reference: a macro written in the v2 form
would be refused, not carried. The empty org is a Russian one: the group of every person is
"Все сотрудники" there, id 1 as everywhere.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yandex_tracker_client as sdk  # a dev dependency, not our own module

from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services as all_services
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import environ, source_queues, write_config
from tests.helpers.sandbox_clients import tracker_call


@dataclass
class Moved:
    info: dict[str, Any]
    config: Config
    summary: Any
    path: Path
    planned: Any  # `haul plan`'s completed process, before the load

    def raw(self, org: str, method: str, path: str, **kwargs: Any) -> Any:
        return tracker_call(self.info, org, method, path, **kwargs)

    def sdk(self, org: str) -> Any:
        host = self.info["tracker"].rsplit("/v3", 1)[0]
        token, org_id = self.info["tokens"]["admin"], self.info["orgs"][org]
        return sdk.TrackerClient(token=token, org_id=org_id, base_url=host, retries=1)


def into_empty_org(directory: Path, info: dict[str, Any], **scope: Any) -> Path:
    """A config moving every source queue, unmapped, into the sandbox's empty org."""
    path = write_config(directory, info, queues=source_queues(info), mapping={}, scope=scope)
    text = path.read_text(encoding="utf-8")
    target = f'org_id = "{info["orgs"]["target"]}"'
    assert target in text
    path.write_text(text.replace(target, f'org_id = "{info["orgs"]["empty"]}"'), "utf-8")
    return path


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Moved]:
    from haul.sandbox import server as sandbox_server

    directory = tmp_path_factory.mktemp("configured-org")
    with sandbox_server.start_sandbox(
        size="tiny", seed=5, faults="v3_only:macros", languages={"empty": "ru"}
    ) as sandbox:
        info = sandbox.info
        path = into_empty_org(directory, info)
        config = load_config(path)
        moved = Moved(info, config, None, path, None)
        board = moved.raw("source", "GET", "/boards")[0]
        moved.raw("source", "POST", "/sprints", json={
            "name": "Next sprint", "board": {"id": board["id"]}, "status": "draft",
            "startDate": "2031-01-06", "endDate": "2031-01-19",
        })  # fmt: skip  # a future sprint: no issue is in it yet
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        planned = run_haul("plan", "--config", path, env=haul_env(environ(info)))
        moved.summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        moved.planned = planned
        yield moved


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def triggers(client: Any, queue: str) -> list[tuple[Any, ...]]:
    """Each trigger's settings; a transition's status by key (its reference's id is the
    org's own)."""
    return sorted(
        (t["name"], _json(t["conditions"]), _json([_by_key(a) for a in t["actions"]]), t["active"])
        for t in client.queues[queue].triggers
    )


def _by_key(action: dict[str, Any]) -> dict[str, Any]:
    status = action.get("status")  # the SDK reads a reference as an object of its own
    return action if status is None or isinstance(status, str) else {**action, "status": status.key}


def macros(client: Any, queue: str) -> list[tuple[Any, ...]]:
    return sorted(
        (m["name"], m["body"], _json(m["fieldChanges"])) for m in client.queues[queue].macros
    )


def test_every_queues_triggers_and_macros_read_the_same_in_both_orgs(moved: Moved) -> None:
    assert moved.summary.failed == 0, moved.summary
    source, target = moved.sdk("source"), moved.sdk("empty")
    for queue in source_queues(moved.info):
        assert triggers(target, queue) == triggers(source, queue) != []
        assert macros(target, queue) == macros(source, queue) != []


def test_macros_arrive_with_their_field_changes_where_only_the_v3_form_is_taken(
    moved: Moved,
) -> None:
    """The target takes `issueUpdate` alone (the v2 `fieldChanges` is refused there), and
    every migrated macro reads back with the source's field changes."""
    queue = source_queues(moved.info)[0]
    target = moved.sdk("empty")
    with pytest.raises(sdk.exceptions.UnprocessableEntity):
        target.queues[queue].collection.macros.create(
            name="v2 form", fieldChanges=[{"field": "tags", "add": ["x"]}]
        )
    carried = {m["name"]: m["fieldChanges"] for m in target.queues[queue].macros}
    assert carried["Need info"][0] == {"field": "tags", "add": ["needinfo"]}
    assert all(carried.values()) and len(carried) == 2


def test_the_group_of_every_person_keeps_its_access_in_a_russian_org(moved: Moved) -> None:
    """The source's "All employees" reads and creates in every queue; in the Russian target
    the same group (id 1, "Все сотрудники") does, mapped by its id rather than its name."""
    for queue in source_queues(moved.info):
        reply = moved.raw("empty", "GET", f"/queues/{queue}/permissions/groups/1")
        assert reply["group"]["display"] == "Все сотрудники"
        assert {"READ", "CREATE"} <= set(reply["permissions"]), queue


def sprints(client: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Each board's sprints (by board name): name, status and dates (the archived flag the
    API cannot set is left out: counted under not_carried instead)."""
    return {
        board.name: sorted(
            (s["name"], s["status"], s["startDate"], s["endDate"]) for s in board.sprints
        )
        for board in client.boards
    }


def versions(client: Any, queue: str) -> list[tuple[Any, ...]]:
    return sorted(
        (v.name, v.released, v.archived, getattr(v, "startDate", None), getattr(v, "dueDate", None))
        for v in client.queues[queue].versions
    )


def test_every_boards_sprints_and_every_version_read_the_same_in_both_orgs(
    moved: Moved,
) -> None:
    source, target = moved.sdk("source"), moved.sdk("empty")
    theirs, mine = sprints(target), sprints(source)
    assert theirs == {name: mine[name] for name in theirs}
    assert set(theirs) == {b.name for b in source.boards if b.filter["queue"] in
                           source_queues(moved.info)}  # fmt: skip
    statuses = {status for board in theirs.values() for _, status, *_ in board}
    assert {"released", "in_progress"} <= statuses
    for queue in source_queues(moved.info):
        assert versions(target, queue) == versions(source, queue)
        assert any(released for _, released, *_ in versions(target, queue)), queue
    assert {"released", "in_progress", "draft"} <= statuses  # past, active and future
    archived = sum(s.archived for b in source.boards for s in b.sprints)
    assert archived > 0
    assert (
        moved.summary.details["not_carried"][
            "sprint archived: the API archives no sprint (made unarchived)"
        ]
        == archived
    )


def test_plan_into_the_empty_org_lists_what_the_load_will_create(moved: Moved) -> None:
    """Before the load, `haul plan` plans the queues as made and what lives in them (local
    fields, components, versions, triggers, macros) as made too, without looking them up in
    queues the target does not have yet."""
    assert moved.planned.returncode == 0, moved.planned.stderr
    rows = {
        cells[0]: cells[1]
        for line in moved.planned.stdout.splitlines()
        if len(cells := [c.strip() for c in line.strip("│ ").split("│")]) > 2
    }
    queues = len(source_queues(moved.info))
    assert rows["queue"] == str(queues)
    for entity in ("local_field", "component", "version", "board", "sprint", "trigger", "macro"):
        assert int(rows[entity]) > 0, entity
    assert rows["trigger"] == str(3 * queues) and rows["macro"] == str(2 * queues)


def test_importing_the_issues_fired_no_trigger(moved: Moved) -> None:
    """Each queue has an active trigger listening for new issues, yet none fired."""
    target = moved.sdk("empty")
    for queue in source_queues(moved.info):
        listening = [
            t for t in target.queues[queue].triggers
            if t["active"] and {"type": "Event.create"} in t["conditions"]
        ]  # fmt: skip
        assert listening, queue
        assert moved.raw("empty", "GET", f"/_sandbox/queues/{queue}/triggers/firings")["total"] == 0
        assert target.issues.find(query=f"Queue: {queue}"), queue


def test_verify_passes_then_names_the_queue_of_a_trigger_changed_by_hand(moved: Moved) -> None:
    """`haul verify` exits 0; after one trigger is switched in the target by hand, 3, naming
    the trigger under its queue and the setting that differs."""
    env = haul_env(environ(moved.info))
    passed = run_haul("verify", "--config", moved.path, env=env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    rows = [line for line in passed.stdout.splitlines() if "trigger" in line or "macro" in line]
    assert len(rows) == 2 and not any("not compared" in row for row in rows), rows
    queue = source_queues(moved.info)[-1]
    changed = moved.sdk("empty").queues[queue].collection.triggers.get_all()[0]
    changed.update(active=not changed.active)
    try:
        differs = run_haul("verify", "--config", moved.path, env=env)
        assert differs.returncode == 3, differs.stdout + differs.stderr
        lines = [line for line in differs.stdout.splitlines() if line.startswith("differs:")]
        assert len(lines) == 1 and lines[0].startswith(f"differs: trigger {queue}/"), lines
        assert " active: " in lines[0]
    finally:
        changed.update(active=not changed.active)


def test_a_later_run_carries_changed_and_deleted_triggers_and_macros(moved: Moved) -> None:
    """At the source a macro's body is edited, a trigger switched on and another deleted, a
    version released; the next run (deletions mirrored) carries all four, and verify passes
    again."""
    queue = source_queues(moved.info)[0]
    source = moved.sdk("source").queues[queue].collection
    macro = source.macros.get_all()[0]
    macro.update(body="Please add the steps to reproduce, and the version.")
    switched, dropped = source.triggers.get_all()[2], source.triggers.get_all()[1]
    switched.update(active=True)
    dropped.delete()
    version = next(v for v in moved.sdk("source").queues[queue].versions if not v.released)
    version.update(released=True)
    path = moved.path
    path.write_text(path.read_text("utf-8") + '\n[sync]\ndeletions = "mirror"\n', "utf-8")
    config = load_config(path)
    summary = asyncio.run(run_all(config, all_services(), environ=environ(moved.info)))
    assert summary.failed == 0, summary
    target = moved.sdk("empty")
    assert triggers(target, queue) == triggers(moved.sdk("source"), queue)
    assert macros(target, queue) == macros(moved.sdk("source"), queue)
    assert dropped.name not in {t["name"] for t in target.queues[queue].triggers}
    assert versions(target, queue) == versions(moved.sdk("source"), queue)
    result = asyncio.run(verify(config, all_services(), environ=environ(moved.info)))
    assert result.differences == []


@pytest.mark.slow
def test_the_small_org_into_the_empty_org_reads_the_same_configured(tmp_path: Path) -> None:
    """The small org (five queues): `haul plan` plans the queues and what lives in them as
    made, the load fails nothing and fires no trigger, every queue's triggers and macros,
    every board's sprints and every version read the same in both orgs, and verify passes."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="small", seed=5) as sandbox:
        info = sandbox.info
        path = into_empty_org(tmp_path, info)
        config = load_config(path)
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        env = haul_env(environ(info))
        planned = run_haul("plan", "--config", path, env=env)
        assert planned.returncode == 0, planned.stderr
        summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        moved = Moved(info, config, summary, path, planned)
        assert summary.failed == 0, summary
        source, target = moved.sdk("source"), moved.sdk("empty")
        for queue in source_queues(info):
            assert triggers(target, queue) == triggers(source, queue) != []
            assert macros(target, queue) == macros(source, queue) != []
            assert versions(target, queue) == versions(source, queue) != []
            firings = moved.raw("empty", "GET", f"/_sandbox/queues/{queue}/triggers/firings")
            assert firings["total"] == 0, queue
        theirs, mine = sprints(target), sprints(source)
        assert theirs == {name: mine[name] for name in theirs}
        assert set(theirs) == {b.name for b in source.boards if b.filter["queue"] in
                               source_queues(info)}  # fmt: skip
        assert run_haul("verify", "--config", path, env=env).returncode == 0
