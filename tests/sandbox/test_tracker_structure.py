"""The tracker sandbox holds and serves an organisation's structure, driven by the official SDK.

Components, queue versions, boards with columns and sprints, global and local fields with
categories, dictionary values and queues: read and created through `yandex_tracker_client`'s
collections, unmodified, and checked against the recorded live replies where they exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from yandex_tracker_client import TrackerClient
from yandex_tracker_client.exceptions import Conflict, PreconditionFailed

from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import client_for
from tests.helpers.sandbox_shapes import assert_like_recording


def sdk_client(sandbox: RunningSandbox, org: str) -> Any:
    info = sandbox.info
    host = info["tracker"].rsplit("/v3", 1)[0]
    return TrackerClient(
        token=info["tokens"]["admin"], org_id=info["orgs"][org], base_url=host, retries=1
    )


@pytest.fixture(scope="module")
def small() -> Iterator[RunningSandbox]:
    with start_sandbox(seed=4, size="tiny") as running:
        yield running


@pytest.fixture(scope="module")
def sdk(small: RunningSandbox) -> Any:
    return sdk_client(small, "source")


@pytest.fixture(scope="module")
def raw(small: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(small, "source") as client:
        yield client


class TestComponentsAndVersions:
    def test_components_are_listed_per_queue_and_by_id(self, sdk: Any, raw: httpx.Client) -> None:
        """Every queue has components; one reads back by id with its queue."""
        listed = list(sdk.components.get_all())
        test_queue = [c for c in listed if c.queue.key == "TEST"]
        assert test_queue and len(listed) > len(test_queue)
        assert {c.id for c in sdk.queues["TEST"].components} == {c.id for c in test_queue}
        one = sdk.components[test_queue[0].id]
        assert one.name == test_queue[0].name and one.version == 1
        reply = raw.get("/components")
        assert_like_recording("components/list", reply.status_code, reply.json())

    def test_a_component_is_created_and_edited_under_its_version(self, sdk: Any) -> None:
        """Create answers 201 with version 1; an edit bumps it; a stale If-Match is a 412."""
        created = sdk.components.create(name="Billing", queue="TEST", description="money")
        assert created.version == 1 and created.queue.key == "TEST"
        stale = sdk.components[created.id]
        created.update(description="all the money")
        assert sdk.components[created.id].version == 2
        with pytest.raises(PreconditionFailed):
            stale.update(description="stale")
        with pytest.raises(Conflict):
            sdk.components.create(name="Billing", queue="TEST")

    def test_a_stale_version_query_is_a_409(self, raw: httpx.Client) -> None:
        created = raw.post("/components/", json={"name": "Search", "queue": "DEV"})
        assert_like_recording("components/create", created.status_code, created.json())
        path = f"/components/{created.json()['id']}"
        edited = raw.patch(path, params={"version": 1}, json={"description": "find"})
        assert_like_recording("components/update", edited.status_code, edited.json())
        stale = raw.patch(path, params={"version": 1}, json={"description": "again"})
        assert stale.status_code == 409 and stale.json()["statusCode"] == 409

    def test_a_queue_expands_its_components_and_versions(self, raw: httpx.Client) -> None:
        plain = raw.get("/queues/TEST").json()
        assert "components" not in plain and "versions" not in plain
        expanded = raw.get("/queues/TEST", params={"expand": "all"}).json()
        listed = raw.get("/queues/TEST/components").json()
        assert {c["id"] for c in expanded["components"]} == {str(c["id"]) for c in listed}
        assert raw.get("/queues/TEST", params={"expand": "versions"}).json()["versions"]

    def test_versions_per_queue_create_and_edit(self, sdk: Any, raw: httpx.Client) -> None:
        versions = list(sdk.queues["DEV"].versions)
        assert versions and all(v.queue.key == "DEV" for v in versions)
        assert sdk.versions[versions[0].id].name == versions[0].name
        created = raw.post(
            "/versions/",
            json={
                "queue": "DEV",
                "name": "9.0",
                "startDate": "2025-01-01",
                "dueDate": "2025-06-30",
            },
        )
        assert_like_recording("queues/versions_create", created.status_code, created.json())
        made = sdk.versions[created.json()["id"]]
        made.update(released=True)
        reply = raw.get(f"/versions/{made.id}")
        assert_like_recording("queues/versions_update", reply.status_code, reply.json())
        assert reply.json()["released"] is True and reply.json()["version"] == 2


class TestBoardsAndSprints:
    def test_boards_with_columns_and_sprints(self, sdk: Any, raw: httpx.Client) -> None:
        boards = list(sdk.boards.get_all())
        assert boards
        board = sdk.boards[boards[0].id]
        columns = list(board.columns.get_all())
        assert [c.name for c in columns] == ["Open", "In progress", "Done"]
        assert columns[1].statuses[0].key == "inProgress"
        sprints = list(board.sprints.get_all())
        assert len(sprints) > 20 and {s.board.id for s in sprints} == {str(board.id)}
        assert sdk.sprints[sprints[0].id].name == sprints[0].name
        assert_like_recording("boards/list", 200, raw.get("/boards").json())
        assert_like_recording("sprints/get", 200, raw.get(f"/sprints/{sprints[0].id}").json())

    def test_boards_paginate_by_id_cursor(self, raw: httpx.Client) -> None:
        first = raw.get("/boards/_paginate", params={"perPage": 1})
        assert len(first.json()) == 1 and 'rel="next"' in first.headers["Link"]
        after = raw.get("/boards/_paginate", params={"perPage": 10, "id": first.json()[0]["id"]})
        assert first.json()[0]["id"] not in {b["id"] for b in after.json()}

    def test_a_board_is_created_at_live_boards_and_gets_columns(self, raw: httpx.Client) -> None:
        """Columns are written under the board's version: a stale If-Match is a 412."""
        created = raw.post(
            "/liveBoards/", json={"name": "Ops wall", "defaultQueue": {"key": "OPS"}}
        )
        assert_like_recording("boards/create", created.status_code, created.json())
        board = created.json()
        column = {"name": "Doing", "statuses": ["inProgress"]}
        path = f"/boards/{board['id']}/columns/"
        made = raw.post(path, json=column, headers={"If-Match": f'"{board["version"]}"'})
        assert made.status_code == 201 and made.json()["statuses"][0]["key"] == "inProgress"
        stale = raw.post(path, json=column, headers={"If-Match": f'"{board["version"]}"'})
        assert stale.status_code == 412
        assert raw.get(f"/boards/{board['id']}").json()["version"] == board["version"] + 1
        assert raw.post("/boards/", json={"name": "Other"}).status_code == 201

    def test_boards_columns_components_and_versions_are_deleted(self, raw: httpx.Client) -> None:
        """A delete answers 200; the object is gone (404), a board's sprints with it."""
        board = raw.post("/boards/", json={"name": "Short-lived"}).json()
        column = raw.post(
            f"/boards/{board['id']}/columns", json={"name": "C", "statuses": ["open"]}
        ).json()
        column_path = f"/boards/{board['id']}/columns/{column['id']}"
        assert raw.delete(column_path).status_code == 200
        assert raw.get(column_path).status_code == 404
        sprint = {"name": "S", "board": board["id"], "startDate": "2025-01-06"}
        sprint_id = raw.post("/sprints", json={**sprint, "endDate": "2025-01-17"}).json()["id"]
        assert raw.delete(f"/boards/{board['id']}").status_code == 200
        assert raw.get(f"/sprints/{sprint_id}").status_code == 404
        for path, body in (("components", {"name": "Gone"}), ("versions", {"name": "0.0"})):
            made = raw.post(f"/{path}", json={**body, "queue": "TEST"}).json()
            assert raw.delete(f"/{path}/{made['id']}").status_code == 200
            assert raw.get(f"/{path}/{made['id']}").status_code == 404

    def test_a_sprint_is_created_on_a_board(self, sdk: Any, raw: httpx.Client) -> None:
        board = next(iter(sdk.boards.get_all()))
        made = sdk.sprints.create(
            name="Hardening", board={"id": board.id}, startDate="2025-02-03", endDate="2025-02-14"
        )
        assert made.board.id == str(board.id) and made.startDate == "2025-02-03"
        reply = raw.get(f"/sprints/{made.id}")
        assert_like_recording("sprints/create", 201, reply.json())
        bad = raw.post("/sprints", json={"name": "x", "board": {"id": 999_999}})
        assert bad.status_code == 422 and set(bad.json()["errors"]) >= {"board", "startDate"}


class TestFields:
    def test_fields_list_the_system_fields_and_the_custom_ones(
        self, sdk: Any, raw: httpx.Client
    ) -> None:
        fields = {f.id: f for f in sdk.fields.get_all()}
        system = [f for f in raw.get("/fields").json() if f["type"] == "standard"]
        assert len(system) > 40
        assert {"components", "sprint", "storyPoints", "originalEstimation"} <= set(fields)
        assert fields["severity"].options is True
        assert_like_recording("fields/list", 200, raw.get("/fields").json())
        assert_like_recording("fields/get", 200, raw.get("/fields/summary").json())

    def test_a_global_field_is_created_in_a_new_category(self, sdk: Any, raw: httpx.Client) -> None:
        category = raw.post(
            "/fields/categories", json={"name": {"en": "Sales", "ru": "Продажи"}, "order": 700}
        )
        assert_like_recording("fields/categories_create", category.status_code, category.json())
        created = sdk.fields.create(
            id="dealSize",
            name={"en": "Deal size", "ru": "Сделка"},
            category=category.json()["id"],
            type="ru.yandex.startrek.core.fields.FloatFieldType",
            description="in roubles",
        )
        assert created.id == "dealSize"
        assert_like_recording("fields/create", 200, raw.get("/fields/dealSize").json())
        again = raw.post("/fields", json={**_field("dealSize"), "category": category.json()["id"]})
        assert again.status_code == 409
        edited = raw.patch("/fields/dealSize", params={"version": 1}, json={"description": "€"})
        assert_like_recording("fields/update", edited.status_code, edited.json())
        names = {c.id for c in sdk.field_categories.get_all()}
        assert category.json()["id"] in names

    def test_local_fields_per_queue(self, sdk: Any, raw: httpx.Client) -> None:
        local = list(sdk.queues["TEST"].local_fields)
        assert {f.key for f in local} == {"environment", "budget"}
        assert all(f.id.endswith("--" + f.key) for f in local)
        category = raw.get("/fields/categories").json()[0]["id"]
        created = raw.post("/queues/DEV/localFields", json={**_field("rack"), "category": category})
        assert created.status_code == 201 and created.json()["id"].endswith("--rack")
        assert raw.get("/queues/DEV/localFields/rack").json()["queue"]["key"] == "DEV"
        edited = raw.patch("/queues/DEV/localFields/rack", json={"description": "where"})
        assert edited.json()["description"] == "where"


def _field(key: str) -> dict:
    return {
        "id": key,
        "name": {"en": key, "ru": key},
        "type": "ru.yandex.startrek.core.fields.StringFieldType",
        "optionsProvider": {"type": "FixedListOptionsProvider", "values": ["a", "b"]},
    }


class TestDictionariesAndQueues:
    @pytest.mark.parametrize(
        ("path", "body"),
        [
            (
                "statuses",
                {"key": "onHold", "name": {"en": "On hold", "ru": "Ждёт"}, "type": "paused"},
            ),
            ("issuetypes", {"key": "spike", "name": {"en": "Spike", "ru": "Спайк"}}),
            ("priorities", {"key": "someday", "name": {"en": "Someday", "ru": "Когда-нибудь"}}),
            ("resolutions", {"key": "obsolete", "name": {"en": "Obsolete", "ru": "Устарело"}}),
        ],
    )
    def test_created_read_by_id_and_edited_under_a_version(
        self, raw: httpx.Client, path: str, body: dict
    ) -> None:
        created = raw.post(f"/{path}/", json=body)
        assert_like_recording(f"{path}/create", created.status_code, created.json())
        entry_id = created.json()["id"]
        assert raw.get(f"/{path}/{entry_id}").json()["key"] == body["key"]
        assert raw.get(f"/{path}/{body['key']}").status_code == 200
        assert raw.post(f"/{path}/", json=body).status_code == 409
        edited = raw.patch(f"/{path}/{entry_id}", params={"version": 1}, json={"order": 5})
        assert_like_recording(f"{path}/update", edited.status_code, edited.json())
        assert raw.patch(f"/{path}/{entry_id}", params={"version": 1}, json={}).status_code == 409

    def test_the_sdk_reads_and_edits_a_status(self, sdk: Any) -> None:
        status = sdk.statuses.create(
            key="blocked", name={"en": "Blocked", "ru": "Блок"}, type="paused"
        )
        status.update(description="waits on others")
        assert sdk.statuses[status.id].description == "waits on others"
        assert sdk.issue_types[next(iter(sdk.issue_types.get_all())).id].key

    def test_a_queue_is_created(self, raw: httpx.Client) -> None:
        body = {
            "key": "LAB",
            "name": "Lab",
            "lead": "alice",
            "defaultType": "task",
            "defaultPriority": "normal",
            "issueTypesConfig": [
                {"issueType": "task", "workflow": "classic", "resolutions": ["fixed", "wontFix"]}
            ],
        }
        created = raw.post("/queues/", json=body)
        assert_like_recording("queues/create", created.status_code, created.json())
        assert raw.get("/queues/LAB").json()["defaultType"]["key"] == "task"
        assert raw.post("/queues/", json=body).status_code == 409
        bad = raw.post("/queues/", json={**body, "key": "LAB2", "defaultType": "nope"})
        assert bad.status_code == 422 and "defaultType" in bad.json()["errors"]
        config = [{"issueType": "task", "workflow": "oicn", "resolutions": []}]
        unknown = raw.post("/queues/", json={**body, "key": "LAB3", "issueTypesConfig": config})
        assert unknown.status_code == 422 and "workflow 'oicn'" in unknown.text


def test_system_fields_have_the_types_the_service_exports(raw: httpx.Client) -> None:
    """A moment is a `datetime`, a day a `date`, the description a `text`, as the vendor's
    own export of its system fields gives them (the importer's sample `global_fields.yaml`)."""
    reply = raw.get("/fields")
    assert_like_recording("fields/list", reply.status_code, reply.json())
    types = {field["id"]: field["schema"]["type"] for field in reply.json()}
    moments = ("createdAt", "updatedAt", "resolvedAt", "statusStartTime", "lastCommentUpdatedAt")
    assert {name: types[name] for name in moments} == dict.fromkeys(moments, "datetime")
    assert (types["deadline"], types["description"], types["summary"]) == ("date", "text", "string")
