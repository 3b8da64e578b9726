"""The tracker sandbox serves the organisation's planning layer.

Projects, portfolios and goals with their comments, checklists, attachments, links,
permissions and history; saved filters; dashboards with cycle-time widgets; remote links and
applications; queue autoactions.  Driven through `yandex_tracker_client`'s collections,
unmodified, where it has them (it speaks /v2), and raw httpx for error cases and the routes it
lacks; shapes checked against the recorded live replies where they exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from yandex_tracker_client import TrackerClient
from yandex_tracker_client.collections import AutoActions
from yandex_tracker_client.exceptions import (
    BadRequest,
    Forbidden,
    NotFound,
    PreconditionFailed,
    UnprocessableEntity,
)

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.sandbox.tracker.planning.planning import planning_of
from haul.sandbox.tracker.seed.generate import build_world
from tests.helpers.sandbox_clients import client_for
from tests.helpers.sandbox_shapes import assert_like_recording

CREATED = {"createdAt": "2023-03-01T10:00:00.000+0000", "createdBy": "alice"}


def sdk_client(sandbox: RunningSandbox, org: str, token: str = "admin") -> Any:
    info = sandbox.info
    host = info["tracker"].rsplit("/v3", 1)[0]
    return TrackerClient(
        token=info["tokens"][token], org_id=info["orgs"][org], base_url=host, retries=1
    )


@pytest.fixture(scope="module")
def running() -> Iterator[RunningSandbox]:
    with start_sandbox(seed=5, size="tiny") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def sdk(running: RunningSandbox) -> Any:
    return sdk_client(running, "source")


@pytest.fixture(scope="module")
def raw(running: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(running, "source") as client:
        yield client


@pytest.fixture(scope="module")
def alice(running: RunningSandbox) -> Iterator[httpx.Client]:
    """The user token, acting as alice (a member of the engineering group)."""
    with client_for(running, "source", token="user") as client:
        yield client


def values(found: dict) -> list[Any]:
    return list(found["values"])


class TestSeededPlanningLayer:
    def test_projects_link_to_issues_and_sit_in_portfolios(self, sdk: Any, raw: httpx.Client):
        """Every queue has a project under a portfolio, linked to issues of that queue."""
        projects = values(sdk.project.find(fields="parentEntity,entityStatus", per_page=50))
        portfolios = {p.id for p in values(sdk.portfolio.find())}
        assert len(projects) == len(sdk.queues.get_all()) and len(portfolios) == 2
        for project in projects:
            assert project.fields["parentEntity"]["primary"].id in portfolios
            links = raw.get(f"/entities/project/{project.id}/links").json()
            keys = [
                link["linkFieldValues"]["key"] for link in links if link["entityType"] == "issue"
            ]
            assert keys and all(raw.get(f"/issues/{key}").status_code == 200 for key in keys)

    def test_goals_nest_and_projects_work_towards_them(self, sdk: Any, raw: httpx.Client):
        goals = values(sdk.goal.find(fields="parentEntity"))
        by_id = {g.id: g for g in goals}
        nested = [g for g in goals if g.fields["parentEntity"]["primary"]]
        assert nested and all(g.fields["parentEntity"]["primary"].id in by_id for g in nested)
        deep = [
            g
            for g in nested
            if by_id[g.fields["parentEntity"]["primary"].id].fields["parentEntity"]["primary"]
        ]
        assert deep, "one goal lies two levels deep"
        top = next(g for g in goals if not g.fields["parentEntity"]["primary"])
        links = raw.get(f"/entities/goal/{top.id}/links").json()
        assert {link["type"] for link in links} == {"has supporting projects"}

    def test_filters_dashboard_autoactions_and_remote_links(self, sdk: Any, raw: httpx.Client):
        """Filters name queues, the dashboard's cycle-time widget runs the first filter's
        query, the first queue has autoactions with runs, and some issues remote links."""
        filters = list(sdk.filters.get_all())
        queues = {q.key for q in sdk.queues.get_all()}
        assert {f.query.split()[1] for f in filters if f.query.startswith("Queue:")} == queues
        dashboards = raw.get("/dashboards").json()
        widgets = raw.get(f"/dashboards/{dashboards[0]['id']}/widgets").json()
        assert widgets[0]["type"] == "cycleTime" and widgets[0]["query"] == filters[0].query
        assert [s["key"] for s in widgets[0]["fromStatuses"]] == ["inProgress"]
        actions = list(AutoActions(sdk._connection, queue="TEST").get_all())
        assert len(actions) == 2 and all(a.query.startswith("Queue: TEST") for a in actions)
        runs = raw.get(f"/queues/TEST/autoactions/{actions[0].id}/logs").json()
        assert len(runs) == 3 and all(run["searchHits"] >= run["successes"] for run in runs)
        keys = [i["key"] for i in raw.post("/issues/_search", params={"perPage": 100}).json()]
        remote = [raw.get(f"/issues/{key}/remotelinks").json() for key in keys]
        assert 0 < sum(1 for links in remote if links) < len(keys)
        shaped = next(links for links in remote if links)
        assert_like_recording("remotelinks/create", 201, shaped[0])

    def test_target_and_empty_orgs_start_without_one(self, running: RunningSandbox):
        for org in ("target", "empty"):
            with client_for(running, org) as client:
                for kind in ("project", "portfolio", "goal"):
                    assert client.post(f"/entities/{kind}/_search").json()["hits"] == 0
                assert client.get("/filters").json() == []
                assert client.get("/dashboards").json() == []

    def test_seeding_is_deterministic_and_lazy(self):
        """Same seed, same layer; nothing is drawn until the layer is first asked for."""
        one, two = (build_world(7, "tiny", admin_token="a", user_token="u") for _ in range(2))
        first, second = (w.org_by_role("source") for w in (one, two))
        assert vars(first)["planning"]._seeder is not None  # not drawn yet
        ids = [sorted(planning_of(o).entities) for o in (first, second)]
        assert ids[0] == ids[1] and ids[0]
        summaries = [[e.summary for e in planning_of(o).entities.values()] for o in (first, second)]
        assert summaries[0] == summaries[1]

    def test_an_issue_links_to_an_object_once(self):
        """A seeded issue's remote links are what creating them could make: no two point to one
        object (a second create is a 409). The demo's org (seed 1, small) drew such a pair before."""
        org = build_world(1, "small", admin_token="a", user_token="u").org_by_role("source")
        planning = planning_of(org)
        drawn = [planning.remote_links(org, key) for key in sorted(org.issues)]
        assert sum(map(len, drawn)) > 100
        for links in drawn:
            objects = [(link.application, link.key) for link in links]
            assert len(set(objects)) == len(objects), links


class TestEntities:
    def test_create_read_edit_delete_with_the_sdk(self, sdk: Any):
        """Create is 201 with version 1; an edit bumps it; a stale If-Match is a 412."""
        created = sdk.project.create(fields={"summary": "Billing revamp", "lead": "bob"})
        assert created.version == 1 and created.entityType == "project"
        stale = sdk.project[created.id]
        created.update(fields={"entityStatus": "in_progress", "tags": ["money"]})
        again = sdk.project.get(created.id, fields="entityStatus,tags,lead")
        assert again.version == 2 and again.fields["entityStatus"] == "in_progress"
        assert again.fields["lead"].display == "Bob Brown"
        with pytest.raises(PreconditionFailed):
            stale.update(fields={"summary": "stale"})
        assert sdk.project[str(created.shortId)].id == created.id  # shortId addresses it too
        created.delete()
        with pytest.raises(NotFound):
            sdk.project[created.id]

    def test_parents_goal_under_goal_and_project_under_portfolio(self, sdk: Any):
        goal = sdk.goal.create(fields={"summary": "Top"})
        child = sdk.goal.create(fields={"summary": "Child", "parent": goal.id})
        portfolio = sdk.portfolio.create(fields={"summary": "Bets"})
        project = sdk.project.create(
            fields={"summary": "Bet one", "parentEntity": {"primary": portfolio.id}}
        )
        read = sdk.project.get(project.id, fields="parentEntity")
        assert read.fields["parentEntity"]["primary"].id == portfolio.id
        with pytest.raises(UnprocessableEntity):  # a goal is no project's parent
            sdk.project.create(fields={"summary": "x", "parent": goal.id})
        with pytest.raises(UnprocessableEntity):  # nor an entity its own ancestor
            sdk.goal[goal.id].update(fields={"parent": child.id})

    def test_search_pages_and_filters(self, sdk: Any, raw: httpx.Client):
        for n in range(3):
            sdk.portfolio.create(fields={"summary": f"Paged {n}", "entityStatus": "at_risk"})
        first = raw.post(
            "/entities/portfolio/_search",
            params={"perPage": 2, "page": 1},
            json={"input": "Paged", "filter": {"entityStatus": "at_risk"}},
        ).json()
        second = raw.post(
            "/entities/portfolio/_search",
            params={"perPage": 2, "page": 2},
            json={"input": "Paged", "filter": {"entityStatus": "at_risk"}},
        ).json()
        assert (first["hits"], first["pages"]) == (3, 2) and len(second["values"]) == 1
        assert raw.post("/entities/goal/_search", json={"rootOnly": True}).status_code == 200

    def test_comments_plain_and_relative(self, sdk: Any, raw: httpx.Client):
        goal = sdk.goal.create(fields={"summary": "Talkative"})
        for n in range(5):
            goal.comments.create(text=f"note {n}")
        listed = list(goal.comments.get_all())
        assert [c.text for c in listed] == [f"note {n}" for n in range(5)]
        listed[0].update(text="edited")
        path = f"/entities/goal/{goal.id}/comments/_relative"
        page = raw.get(path, params={"perPage": 2}).json()
        assert [c["text"] for c in page["comments"]] == ["edited", "note 1"]
        assert page["hasNext"] and not page["hasPrev"]
        after = raw.get(path, params={"perPage": 2, "from": page["comments"][-1]["id"]}).json()
        assert [c["text"] for c in after["comments"]] == ["note 2", "note 3"]
        assert_like_recording("comments/get", 200, page["comments"][0])

    def test_checklist_items(self, sdk: Any):
        project = sdk.project.create(fields={"summary": "Checked"})
        for text in ("one", "two", "three"):
            project.checklist_items.create(text=text)
        items = sdk.project.get(project.id, fields="checklistItems").fields["checklistItems"]
        assert [i["text"] for i in items] == ["one", "two", "three"]
        project.checklist_items.update([{"id": items[0]["id"], "checked": True}])
        project.checklist_items.move_item(items[2]["id"], before=items[0]["id"])
        project.checklist_items.delete_item(items[1]["id"])
        after = sdk.project.get(project.id, fields="checklistItems").fields["checklistItems"]
        assert [(i["text"], i["checked"]) for i in after] == [("three", False), ("one", True)]
        assert_like_recording("checklists/list", 200, after)
        project.checklist_items.delete()
        assert sdk.project.get(project.id, fields="checklistItems").fields["checklistItems"] == []

    def test_attachments_upload_then_attach(self, sdk: Any, raw: httpx.Client, tmp_path: Path):
        project = sdk.project.create(fields={"summary": "With a file"})
        path = tmp_path / "plan.txt"
        path.write_bytes(b"the plan")
        temporary = sdk.attachments.create(str(path))
        assert temporary.name == "plan.txt" and temporary.size == 8
        project.attachments.attach(temporary.id)
        listed = list(project.attachments.get_all())
        assert [a.name for a in listed] == ["plan.txt"]
        one = raw.get(f"/entities/project/{project.id}/attachments/{temporary.id}")
        assert_like_recording("attachments/get", one.status_code, one.json())
        upload = raw.post("/attachments/", params={"filename": "x.csv"}, files={"f": b"a,b"})
        assert_like_recording("attachments/upload_temp", upload.status_code, upload.json())
        assert raw.get(listed[0].content).content == b"the plan"
        again = raw.post(f"/entities/project/{project.id}/attachments/{temporary.id}")
        assert again.status_code == 404  # a temporary file attaches once
        project.attachments.delete(temporary.id)
        assert list(project.attachments.get_all()) == []

    def test_links_between_entities_and_to_issues(self, sdk: Any, raw: httpx.Client):
        one = sdk.project.create(fields={"summary": "Upstream"})
        two = sdk.project.create(fields={"summary": "Downstream"})
        two.links.create(relationship="depends on", entity=one.id)
        seen = raw.get(f"/entities/project/{one.id}/links").json()
        assert [(link["type"], link["linkFieldValues"]["id"]) for link in seen] == [
            ("is dependent by", two.id)
        ]
        reply = raw.post(
            f"/entities/project/{one.id}/links", json={"relationship": "relates", "issue": "TEST-1"}
        )
        assert reply.status_code == 201 and reply.json()["linkFieldValues"]["key"] == "TEST-1"
        again = raw.post(
            f"/entities/project/{two.id}/links", json={"relationship": "relates", "entity": one.id}
        )
        assert again.status_code == 422
        two.links.delete(right=one.id)
        assert raw.get(f"/entities/project/{two.id}/links").json() == []

    def test_history_records_every_change(self, sdk: Any, raw: httpx.Client):
        goal = sdk.goal.create(fields={"summary": "Storied"})
        goal.update(fields={"entityStatus": "at_risk"})
        goal.comments.create(text="why")
        history = goal.get_event_history(per_page=10)
        assert [e.get("display") for e in history["events"]] == [
            "Entity created",
            "Entity updated",
            "Comment added",
        ]
        newest = raw.get(
            f"/entities/goal/{goal.id}/events/_relative",
            params={"newEventsOnTop": "true", "perPage": 1},
        ).json()
        assert newest["events"][0]["display"] == "Comment added" and newest["hasNext"]

    def test_import_keeps_the_original_dates(self, running: RunningSandbox):
        """Into the target, as the migration loads: createdAt and createdBy kept; admin only."""
        target = sdk_client(running, "target")
        imported = target.goal.import_object(fields={"summary": "Imported goal"}, **CREATED)
        assert imported.createdAt == CREATED["createdAt"]
        assert imported.createdBy.display == "Alice Anderson"
        with client_for(running, "target") as client:
            future = {"fields": {"summary": "x"}, "createdAt": "2999-01-01T00:00:00.000+0000"}
            reply = client.post("/entities/goal/_import", json={**future, "createdBy": "alice"})
            assert reply.status_code == 422 and "createdAt" in reply.json()["errors"]
        with pytest.raises(Forbidden):
            sdk_client(running, "target", "user").goal.import_object(
                fields={"summary": "x"}, **CREATED
            )


class TestEntityErrors:
    def test_permissions(self, sdk: Any, raw: httpx.Client):
        """A PATCH naming permissionSources is a 400; grant and revoke are the only verbs."""
        project = sdk.project.create(fields={"summary": "Guarded"})
        path = f"/entities/project/{project.id}"
        refused = raw.patch(f"{path}/permissions", json={"permissionSources": []})
        assert refused.status_code == 400 and refused.json()["statusCode"] == 400
        granted = raw.patch(f"{path}/permissions", json={"grant": {"WRITE": {"users": ["carol"]}}})
        assert granted.status_code == 200
        assert [u["display"] for u in granted.json()["acl"]["WRITE"]["users"]] == ["Carol Clark"]
        wrong = raw.patch(f"{path}/extendedPermissions", json={"acl": {"set": {}}})
        assert wrong.status_code == 400
        unknown = raw.patch(f"{path}/permissions", json={"grant": {"READ": {"users": ["nobody"]}}})
        assert unknown.status_code == 422
        sdk.project[project.id].update_extended_permissions(
            {"acl": {"revoke": {"WRITE": {"users": ["carol"]}}}}
        )
        assert sdk.project[project.id].extended_permissions["acl"]["WRITE"]["users"] == []
        with pytest.raises(BadRequest):
            sdk.project[project.id].update_extended_permissions({"acl": {"grant": {}}, "x": 1})

    def test_not_found_and_version_query(self, raw: httpx.Client):
        assert raw.get("/entities/project/ffffffffffffffffffffffff").status_code == 404
        assert raw.get("/entities/widget/1").status_code == 404
        assert raw.post("/entities/goal", json={"fields": {}}).status_code == 422
        created = raw.post("/entities/goal", json={"fields": {"summary": "Locked"}}).json()
        path = f"/entities/goal/{created['id']}"
        assert (
            raw.patch(path, params={"version": 1}, json={"fields": {"summary": "A"}}).status_code
            == 200
        )
        stale = raw.patch(path, params={"version": 1}, json={"fields": {"summary": "B"}})
        assert stale.status_code == 409
        assert raw.get(f"{path}/comments/999").status_code == 404

    def test_a_refused_patch_changes_nothing(self, raw: httpx.Client) -> None:
        created = raw.post("/entities/goal", json={"fields": {"summary": "Whole"}}).json()
        path = f"/entities/goal/{created['id']}"
        body = {
            "fields": {"summary": "Half"},
            "links": [{"relationship": "relates", "entity": "x"}],
        }
        assert raw.patch(path, json=body).status_code == 404
        bad_status = {"fields": {"summary": "Half", "entityStatus": "launched"}}
        assert raw.patch(path, json=bad_status).status_code == 422  # a project's, not a goal's
        after = raw.get(path).json()
        assert (after["fields"]["summary"], after["version"]) == ("Whole", 1)


class TestEntityAccess:
    """Team-only entities (teamAccess) open to the holders of a level only; the admin token
    passes everywhere; the user token acts as alice (in the engineering group)."""

    def test_a_seeded_team_only_goal_is_hidden_from_others(
        self, raw: httpx.Client, alice: httpx.Client
    ) -> None:
        everything = raw.post("/entities/goal/_search", params={"fields": "teamAccess"}).json()
        hidden = [g for g in everything["values"] if g["fields"]["teamAccess"]]
        assert len(hidden) == 1
        seen = alice.post("/entities/goal/_search").json()
        assert seen["hits"] == everything["hits"] - 1
        assert alice.get(f"/entities/goal/{hidden[0]['id']}").status_code == 403
        assert alice.get(f"/entities/goal/{hidden[0]['id']}/comments").status_code == 403

    def test_a_group_grant_opens_reading_not_writing(
        self, raw: httpx.Client, alice: httpx.Client
    ) -> None:
        made = raw.post(
            "/entities/project", json={"fields": {"summary": "Quiet", "teamAccess": True}}
        )
        path = f"/entities/project/{made.json()['id']}"
        assert alice.get(path).status_code == 403
        seeded = raw.post("/entities/project/_search", params={"fields": "teamAccess"}).json()
        shared = next(p for p in seeded["values"] if p["fields"]["teamAccess"])
        acl = raw.get(f"/entities/project/{shared['id']}/permissions").json()["acl"]  # group ids
        group_id = next(g["id"] for g in acl["READ"]["groups"] if g["display"] == "engineering")
        raw.patch(f"{path}/permissions", json={"grant": {"READ": {"groups": [group_id]}}})
        assert alice.get(path).status_code == 200
        edit = alice.patch(path, json={"fields": {"description": "mine now"}})
        assert edit.status_code == 403
        raw.patch(f"{path}/permissions", json={"grant": {"WRITE": {"users": ["alice"]}}})
        assert alice.patch(path, json={"fields": {"description": "ok"}}).status_code == 200
        opened = alice.patch(path, json={"fields": {"teamAccess": False}})
        assert opened.status_code == 403  # who may see it at all is a GRANT matter
        denied = alice.patch(f"{path}/permissions", json={"grant": {"READ": {"users": ["bob"]}}})
        assert denied.status_code == 403

    def test_access_is_inherited_from_parents(self, raw: httpx.Client, alice: httpx.Client) -> None:
        parent = raw.post(
            "/entities/portfolio", json={"fields": {"summary": "Parent", "teamAccess": True}}
        ).json()
        child = raw.post(
            "/entities/project",
            json={"fields": {"summary": "Child", "teamAccess": True, "parent": parent["id"]}},
        ).json()
        child_path = f"/entities/project/{child['id']}"
        assert alice.get(child_path).status_code == 403
        raw.patch(
            f"/entities/portfolio/{parent['id']}/permissions",
            json={"grant": {"READ": {"users": ["alice"]}}},
        )
        assert alice.get(child_path).status_code == 200
        sources = raw.get(f"{child_path}/permissions").json()["permissionSources"]
        assert [source["id"] for source in sources] == [parent["id"]]


class TestFiltersDashboardsRemoteLinksAutoactions:
    def test_filters_with_the_sdk(self, sdk: Any, raw: httpx.Client):
        created = sdk.filters.create(name="Mine", query="Queue: DEV AND Status: open")
        assert sdk.filters[created.id].query == "Queue: DEV AND Status: open"
        created.update(filter={"queue": "OPS"})
        assert sdk.filters[created.id].filter == {"queue": "OPS"}
        bad = raw.post("/filters/", json={"name": "Bad", "query": "Nonsense: ((("})
        assert bad.status_code == 400
        assert raw.post("/filters/", json={"query": "Queue: DEV"}).status_code == 422
        created.delete()
        with pytest.raises(NotFound):
            sdk.filters[created.id]

    def test_dashboard_with_a_cycle_time_widget(self, raw: httpx.Client):
        made = raw.post("/dashboards/", json={"name": "Flow", "layout": "one-column"})
        assert made.status_code == 201 and made.json()["owner"]["display"] == "Robot"
        widget = raw.post(
            f"/dashboards/{made.json()['id']}/widgets/cycleTime",
            json={
                "description": "Cycle",
                "query": "Queue: TEST",
                "fromStatuses": [{"key": "open"}],
                "toStatuses": ["closed"],
                "mode": "common-lines",
            },
        )
        assert widget.status_code == 201
        listed = raw.get(f"/dashboards/{made.json()['id']}/widgets").json()
        assert [w["id"] for w in listed] == [widget.json()["id"]]
        unknown = raw.post(
            f"/dashboards/{made.json()['id']}/widgets/cycleTime",
            json={"description": "x", "toStatuses": ["nowhere"]},
        )
        assert unknown.status_code == 422
        assert raw.get("/dashboards/99999999").status_code == 404

    def test_remote_links(self, raw: httpx.Client):
        apps = raw.get("/applications").json()
        assert "ru.yandex.github" in {app["id"] for app in apps}
        made = raw.post(
            "/issues/DEV-1/remotelinks",
            json={
                "key": "acme/api/pull/7",
                "origin": "ru.yandex.github",
                "relationship": "relates",
            },
        )
        assert_like_recording("remotelinks/create", made.status_code, made.json())
        twice = raw.post(
            "/issues/DEV-1/remotelinks",
            json={"key": "acme/api/pull/7", "origin": "ru.yandex.github"},
        )
        assert twice.status_code == 409
        listed = raw.get("/issues/DEV-1/remotelinks").json()
        assert made.json()["id"] in {link["id"] for link in listed}
        assert raw.delete(f"/issues/DEV-1/remotelinks/{made.json()['id']}").status_code == 200
        unknown = raw.post("/issues/DEV-1/remotelinks", json={"key": "x", "origin": "nope"})
        assert unknown.status_code == 422
        assert raw.get("/issues/NOPE-1/remotelinks").status_code == 404

    def test_remote_links_list_like_the_recording(self, running: RunningSandbox):
        """An issue without remote links lists none, as recorded."""
        with client_for(running, "target") as target:
            issue = target.post(
                "/issues/_import", json={"queue": "TEST", "summary": "Bare", **CREATED}
            ).json()
            reply = target.get(f"/issues/{issue['key']}/remotelinks")
            assert_like_recording("remotelinks/list", reply.status_code, reply.json())

    def test_autoactions_with_the_sdk(self, sdk: Any, raw: httpx.Client):
        queue = AutoActions(sdk._connection, queue="DEV")
        made = queue.create(
            name="Tag old bugs",
            query="Queue: DEV AND Type: bug",
            actions=[{"type": "Update", "update": [{"field": "tags", "add": ["old"]}]}],
            intervalMillis=86_400_000,
        )
        assert made.queue.key == "DEV" and made.intervalMillis == 86_400_000
        assert [a.id for a in queue.get_all()] == [made.id]
        assert raw.get(f"/queues/DEV/autoactions/{made.id}/logs").json() == []
        missing = raw.post("/queues/DEV/autoactions", json={"name": "x", "actions": []})
        assert missing.status_code == 422
        assert raw.get(f"/queues/TEST/autoactions/{made.id}").status_code == 404
        stale = queue.get(made.id)
        made.update(active=False)
        assert queue.get(made.id).active is False and queue.get(made.id).version == 2
        with pytest.raises(PreconditionFailed):
            stale.update(name="stale")
        made.delete()
        assert list(queue.get_all()) == []

    def test_autoaction_run_detail_names_issues(self, raw: httpx.Client, alice: httpx.Client):
        """A run (planted: the sandbox never fires one) lists its summary among the logs and
        names each issue it touched with its outcome."""
        action = raw.get("/queues/TEST/autoactions").json()[1]
        logs = f"/queues/TEST/autoactions/{action['id']}/logs"
        first, second = (
            i["key"] for i in raw.post("/issues/_search", json={"queue": "TEST"}).json()[:2]
        )
        base = str(raw.base_url).rsplit("/v3", 1)[0]
        plant = f"{base}/_sandbox{logs.removesuffix('/logs')}/runs"
        body = {"issues": {first: "success", second: "failure"}}
        assert alice.post(plant, json=body).status_code == 403
        assert raw.post(plant, json={"issues": {"DEV-1": "success"}}).status_code == 422
        run = raw.post(plant, json=body).json()
        assert (run["successes"], run["failures"], run["searchHits"]) == (1, 1, 2)
        assert run in raw.get(logs).json()
        detail = raw.get(f"{logs}/{run['id']}").json()
        outcomes = {item["issueReference"]["key"]: item["status"]["value"] for item in detail}
        assert outcomes == {first: "success", second: "failure"}
        assert raw.get(f"{logs}/nope").status_code == 404

    def test_v2_serves_the_same(self, running: RunningSandbox):
        info = running.info
        headers = {
            "Authorization": f"OAuth {info['tokens']['admin']}",
            "X-Org-ID": info["orgs"]["source"],
        }
        base = info["tracker"].rsplit("/v3", 1)[0]
        with httpx.Client(base_url=base, headers=headers) as client:
            v2 = client.post("/v2/entities/project/_search").json()["hits"]
            v3 = client.post("/v3/entities/project/_search").json()["hits"]
        assert v2 == v3 > 0
