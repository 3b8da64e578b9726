"""Issues carry the organisation's structure: seeded in the source, checked by `_import`, and
rendered on every read as the service renders them; plus the third, freshly created org and
the gaps a public exporter found (empty filter, list order, by-id dictionary reads, the full
field list, statusStartTime in workflow changes, trailing slashes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from yandex_tracker_client import TrackerClient

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.sandbox.tracker.catalog import CUSTOM_STATUSES
from haul.sandbox.tracker.seed.generate import build_world
from tests.helpers.sandbox_clients import client_for

CREATED = "2024-03-01T10:00:00.000+0000"


@pytest.fixture(scope="module")
def small() -> Iterator[RunningSandbox]:
    with start_sandbox(seed=6, size="small") as running:
        yield running


@pytest.fixture(scope="module")
def source(small: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(small, "source") as client:
        yield client


@pytest.fixture(scope="module")
def target(small: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(small, "target") as client:
        yield client


@pytest.fixture(scope="module")
def empty(small: RunningSandbox) -> Iterator[httpx.Client]:
    with client_for(small, "empty") as client:
        yield client


def _all_issues(client: httpx.Client) -> list[dict]:
    found: list[dict] = []
    page = 1
    while True:
        reply = client.post("/issues/_search", params={"perPage": 500, "page": page}, json={})
        found += reply.json()
        if page >= int(reply.headers["X-Total-Pages"]):
            return found
        page += 1


class TestSeededSource:
    def test_a_realistic_share_of_issues_carries_each_field(self, source: httpx.Client) -> None:
        issues = _all_issues(source)
        share = Counter(name for issue in issues for name in issue)
        for name in (
            "components",
            "fixVersions",
            "affectedVersions",
            "sprint",
            "deadline",
            "start",
            "end",
            "originalEstimation",
            "estimation",
            "storyPoints",
            "votedBy",
            "favoritedBy",
            "access",
            *("customerName", "releaseNotes", "ticketCount", "businessValue"),
            *("reviewDate", "deployedAt", "reviewer", "severity"),
        ):
            assert 0.03 < share[name] / len(issues) < 0.6, name
        local = [name for name in share if "--" in name]
        assert len(local) == 2 * len(source.get("/queues").json())

    def test_refs_render_as_the_service_renders_them(self, source: httpx.Client) -> None:
        issues = _all_issues(source)
        one = next(i for i in issues if "components" in i and "sprint" in i and "reviewer" in i)
        component = one["components"][0]
        assert set(component) == {"self", "id", "display"}
        assert (
            source.get(f"/components/{component['id']}").json()["queue"]["key"]
            == one["queue"]["key"]
        )
        assert set(one["sprint"][0]) == {"self", "id", "display"}
        assert set(one["reviewer"]) >= {"self", "id", "display"}
        estimated = next(i for i in issues if "originalEstimation" in i)
        assert estimated["originalEstimation"].startswith("P")
        assert source.get(f"/issues/{one['key']}").json()["components"] == one["components"]
        voted = next(i for i in issues if "votedBy" in i)
        assert voted["votes"] == len(voted["votedBy"])

    def test_values_follow_the_seed_whatever_the_order_of_reads(self) -> None:
        """Drawn on first access from each issue's own RNG: reading the issues in reverse
        order gives every issue the same values."""
        first, second = (
            build_world(5, "tiny", admin_token="a", user_token="b").org_by_role("source")
            for _ in range(2)
        )
        forward = {i.key: first.values(i) for i in first.issues.values()}
        backward = {i.key: second.values(i) for i in reversed(second.issues.values())}
        assert forward == backward and any(refs for _, refs in forward.values())


class TestTargetAndEmptyOrgs:
    def test_the_target_has_the_custom_fields_and_part_of_the_components(
        self, source: httpx.Client, target: httpx.Client
    ) -> None:
        def custom(client: httpx.Client) -> set[str]:
            return {f["key"] for f in client.get("/fields").json() if f["type"] == "global"}

        assert custom(source) == custom(target) and len(custom(source)) == 8
        names = {
            side: {
                (c["queue"]["key"], c["name"]): c["id"] for c in client.get("/components").json()
            }
            for side, client in (("source", source), ("target", target))
        }
        shared = {name for name in names["target"] if name[0] != "NEW"}  # NEW: target only
        assert shared and shared < set(names["source"])
        assert all(names["source"][n] != names["target"][n] for n in shared)
        assert target.get("/boards").json() == []
        versions = {(v["queue"]["key"], v["name"]) for v in target.get("/versions").json()}
        versions = {version for version in versions if version[0] != "NEW"}
        assert versions and versions < {
            (v["queue"]["key"], v["name"]) for v in source.get("/versions").json()
        }

    def test_the_empty_org_is_freshly_created(
        self, small: RunningSandbox, source: httpx.Client, empty: httpx.Client
    ) -> None:
        assert small.info["orgs"]["empty"] not in (
            small.info["orgs"]["source"],
            small.info["orgs"]["target"],
        )
        assert empty.get("/queues").json() == []
        assert len(empty.get("/users").json()["users"]) == len(source.get("/users").json()["users"])
        statuses = {s["key"] for s in empty.get("/statuses").json()}
        assert "open" in statuses and CUSTOM_STATUSES[0][0] not in statuses
        assert CUSTOM_STATUSES[0][0] in {s["key"] for s in source.get("/statuses").json()}
        fields = empty.get("/fields").json()
        assert len(fields) > 40 and all(f["type"] == "standard" for f in fields)
        assert empty.get("/components").json() == [] and empty.get("/boards").json() == []


def _import(client: httpx.Client, **fields: Any) -> httpx.Response:
    body = {"queue": "TEST", "summary": "structured", "createdAt": CREATED, "createdBy": "bob"}
    return client.post("/issues/_import", json=body | fields)


class TestImport:
    def test_structure_values_are_kept_and_read_back(self, target: httpx.Client) -> None:
        component = next(c for c in target.get("/queues/TEST/components").json())
        version = target.get("/queues/TEST/versions").json()[0]
        local = target.get("/queues/TEST/localFields").json()[0]
        reply = _import(
            target,
            components=[component["id"]],
            fixVersions=[version["id"]],
            votedBy=["carol"],
            favoritedBy=["dave"],
            access=["eve"],
            originalEstimation=5_400_000,
            spent=3_600_000,
            storyPoints=3,
            deadline="2024-04-01",
            customerName="Acme",
            ticketCount=4,
            businessValue=2.5,
            reviewDate="2024-03-05",
            deployedAt="2024-03-02T08:00:00.000+0000",
            reviewer="frank",
            severity="S2",
            **{local["id"]: "prod"},
        )
        assert reply.status_code == 201, reply.json()
        issue = target.get(f"/issues/{reply.json()['key']}").json()
        assert [c["id"] for c in issue["components"]] == [str(component["id"])]
        assert issue["fixVersions"][0]["display"] == version["name"]
        assert issue["originalEstimation"] == "PT1H30M" and issue["spent"] == "PT1H"
        assert issue["storyPoints"] == 3.0 and issue["ticketCount"] == 4
        assert issue["reviewer"]["display"] == "Frank Fischer" and issue[local["id"]] == "prod"
        assert issue["votes"] == 1 and issue["access"][0]["display"] == "Eve Evans"
        hit = target.post("/issues/_search", json={"keys": [issue["key"]]}).json()[0]
        assert hit["components"] == issue["components"] and hit["severity"] == "S2"

    @pytest.mark.parametrize(
        ("fields", "bad"),
        [
            ({"components": [1]}, "components"),  # a source component id: unknown in the target
            ({"fixVersions": ["999999"]}, "fixVersions"),
            ({"sprint": [1]}, "sprint"),  # the target has no sprints
            ({"noSuchField": "x"}, "noSuchField"),
            ({"severity": "S9"}, "severity"),
            ({"ticketCount": "four"}, "ticketCount"),
            ({"reviewer": "nobody"}, "reviewer"),
            ({"originalEstimation": "PT1H"}, "originalEstimation"),
            ({"votedBy": ["nobody"]}, "votedBy"),
        ],
    )
    def test_a_bad_value_is_a_422_naming_the_field(
        self, target: httpx.Client, fields: dict, bad: str
    ) -> None:
        reply = _import(target, **fields)
        assert reply.status_code == 422
        assert bad in reply.json()["errors"] and reply.json()["statusCode"] == 422

    def test_a_component_of_another_queue_is_refused(self, target: httpx.Client) -> None:
        other = next(c for c in target.get("/components").json() if c["queue"]["key"] != "TEST")
        reply = _import(target, components=[other["id"]])
        assert reply.status_code == 422 and "components" in reply.json()["errors"]

    def test_an_edit_replaces_or_clears_structure_values(self, source: httpx.Client) -> None:
        """PATCH changes only what it sends: a list replaces, null clears, others stay."""
        issues = _all_issues(source)
        issue = next(i for i in issues if "components" in i and "fixVersions" in i)
        queue = issue["queue"]["key"]
        other = [c for c in source.get(f"/queues/{queue}/components").json()][-1]
        body = {
            "components": [other["id"]],
            "fixVersions": None,
            "storyPoints": 8,
            "severity": "S1",
        }
        edited = source.patch(f"/issues/{issue['key']}", json=body)
        assert edited.status_code == 200
        read = source.get(f"/issues/{issue['key']}").json()
        assert [c["id"] for c in read["components"]] == [str(other["id"])]
        assert "fixVersions" not in read and read["storyPoints"] == 8.0
        assert read["severity"] == "S1" and read["version"] == issue["version"] + 1
        kept = {
            k for k in issue if k not in body and k not in ("version", "updatedAt", "updatedBy")
        }
        assert all(read[k] == issue[k] for k in kept if k not in ("spent",))
        bad = source.patch(f"/issues/{issue['key']}", json={"components": [999_999]})
        assert bad.status_code == 422 and "components" in bad.json()["errors"]

    def test_the_official_sdk_imports_with_components(self, small: RunningSandbox) -> None:
        info = small.info
        sdk = TrackerClient(
            token=info["tokens"]["admin"],
            org_id=info["orgs"]["target"],
            base_url=info["tracker"].rsplit("/v3", 1)[0],
            retries=1,
        )
        component = next(iter(sdk.queues["DEV"].components))
        issue = sdk.issues.import_object(
            queue="DEV",
            summary="via sdk",
            createdAt=CREATED,
            createdBy="bob",
            components=[component.id],
            estimation=7_200_000,
        )
        assert issue.estimation == "PT2H" and issue.components[0].id == str(component.id)


class TestExporterGaps:
    @pytest.mark.parametrize("version", ["v2", "v3"])
    def test_an_empty_filter_beside_a_query_and_a_list_order(
        self, small: RunningSandbox, version: str
    ) -> None:
        with client_for(small, "source") as client:
            url = client.base_url.copy_with(path=f"/{version}/issues/_search")
            body = {"filter": {}, "query": "Queue: TEST", "order": ["-updatedAt", "+key"]}
            reply = client.post(url, json=body, params={"perPage": 50})
        assert reply.status_code == 200
        times = [i["updatedAt"] for i in reply.json()]
        assert times and times == sorted(times, reverse=True)

    @pytest.mark.parametrize("path", ["statuses", "issuetypes", "priorities", "resolutions"])
    def test_dictionary_values_are_read_one_by_one(self, source: httpx.Client, path: str) -> None:
        for entry in source.get(f"/{path}").json():
            assert source.get(f"/{path}/{entry['id']}").json()["key"] == entry["key"]
        assert source.get(f"/{path}/999999").status_code == 404

    def test_every_listed_field_is_read_one_by_one(self, source: httpx.Client) -> None:
        fields = source.get("/fields").json()
        assert len(fields) > 11
        for field in fields:
            assert source.get(f"/fields/{field['id']}").json()["id"] == field["id"]

    def test_workflow_changes_carry_the_status_start_time(self, source: httpx.Client) -> None:
        issue = source.post("/issues/_search", json={"filter": {"status": "closed"}}).json()[0]
        changes = source.get(f"/issues/{issue['key']}/changelog").json()
        workflow = [c for c in changes if c["type"] == "IssueWorkflow"]
        assert workflow
        for change in workflow:
            moved = {f["field"]["id"]: f for f in change["fields"]}
            assert moved["statusStartTime"]["to"] == change["updatedAt"]
        assert workflow[-1]["updatedAt"] == issue["statusStartTime"]

    def test_a_transition_logs_its_status_start_time(self, target: httpx.Client) -> None:
        key = _import(target).json()["key"]
        target.post(f"/issues/{key}/transitions/inProgress/_execute")
        changes = target.get(f"/issues/{key}/changelog").json()
        moved = {f["field"]["id"]: f for f in changes[-1]["fields"]}
        assert changes[-1]["type"] == "IssueWorkflow"
        assert moved["statusStartTime"]["from"] == CREATED
        assert (
            moved["statusStartTime"]["to"] == target.get(f"/issues/{key}").json()["statusStartTime"]
        )

    def test_a_transition_of_a_seeded_issue_follows_its_generated_history(
        self, small: RunningSandbox
    ) -> None:
        """The generated history still walks to the old status; the move is logged once."""
        with client_for(small, "source") as client:
            hits = client.post("/issues/_search", json={"filter": {"status": "needInfo"}})
            issue = hits.json()[-1]
            client.post(f"/issues/{issue['key']}/transitions/inProgress/_execute")
            changes = client.get(f"/issues/{issue['key']}/changelog").json()
        workflow = [c for c in changes if c["type"] == "IssueWorkflow"]
        statuses = [
            next(f["to"]["key"] for f in c["fields"] if f["field"]["id"] == "status")
            for c in workflow
        ]
        assert statuses[-2:] == ["needInfo", "inProgress"]
        moved = {f["field"]["id"]: f for f in workflow[-1]["fields"]}
        assert moved["statusStartTime"]["from"] == issue["statusStartTime"]

    @pytest.mark.parametrize("path", ["/v3/queues/", "/v2/queues/", "/v3/fields/", "/v2/boards/"])
    def test_a_trailing_slash_is_served_not_redirected(
        self, source: httpx.Client, path: str
    ) -> None:
        reply = source.get(source.base_url.copy_with(path=path))
        assert reply.status_code == 200 and isinstance(reply.json(), list)
