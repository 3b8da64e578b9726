"""What real clients send and read, served as the service does: the system fields they ask
`/fields` for (`qaEngineer`, `project`, the checklist), field schema types as reported
(`datetime`, `text`) with their `required` flags, `project` and `checklistItems` on an
issue `_import` (system fields: accepted), and a goal's `keyResultItems`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from haul.sandbox.server import start_sandbox

JAN = "2024-01-10T10:00:00.000+0000"


@pytest.fixture(scope="module")
def tiny() -> Iterator[dict[str, Any]]:
    with start_sandbox(size="tiny", seed=3) as running:
        yield running.info


def client(info: dict[str, Any], org: str, version: str = "v3") -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    base = info["tracker"].rsplit("/v3", 1)[0] + f"/{version}"
    return httpx.Client(base_url=base, headers=headers)


def test_v2_fields_list_what_exporters_read_with_the_services_schema(tiny: dict[str, Any]):
    with client(tiny, "source", "v2") as v2:
        fields = {f["id"]: f for f in v2.get("/fields").json()}
    assert {"qaEngineer", "project", "checklistItems"} <= set(fields)
    assert fields["qaEngineer"]["schema"]["type"] == "user"
    assert fields["deployedAt"]["schema"]["type"] == "datetime"
    assert fields["releaseNotes"]["schema"]["type"] == "text"
    required = {key for key, f in fields.items() if f["schema"]["required"]}
    assert {"summary", "queue"} <= required and "description" not in required


def test_an_import_may_carry_the_project_and_checklist_system_fields(tiny: dict[str, Any]):
    body = {"queue": "NEW", "summary": "from an importer", "createdAt": JAN, "createdBy": "alice",
            "project": 1, "checklistItems": [{"text": "one", "checked": False}]}  # fmt: skip
    with client(tiny, "target") as target:
        reply = target.post("/issues/_import", json=body)
        by_key = target.post("/issues/_import", json={**body, "type": "bug"})
        unknown = target.post("/issues/_import", json={**body, "type": "noSuchType"})
    assert reply.status_code == 201, reply.text
    assert by_key.status_code == 201 and by_key.json()["type"]["key"] == "bug"  # keys, as ids
    assert unknown.status_code == 422 and "type" in unknown.json()["errors"]


def test_a_goal_keeps_its_key_results_and_a_project_has_none(tiny: dict[str, Any]):
    results = [{"summary": "p95 under 200 ms", "progress": 40}]
    with client(tiny, "target") as target:
        goal = target.post("/entities/goal", json={"fields": {"summary": "Fast",
                                                              "keyResultItems": results}})  # fmt: skip
        assert goal.status_code == 201, goal.text
        read = target.get(
            f"/entities/goal/{goal.json()['id']}", params={"fields": "keyResultItems"}
        )
        project = target.post("/entities/project", json={"fields": {"summary": "P",
                                                                    "keyResultItems": results}})  # fmt: skip
    assert read.json()["fields"]["keyResultItems"] == results
    assert project.status_code == 422 and "keyResultItems" in project.json()["errors"]
