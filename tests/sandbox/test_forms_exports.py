"""The sandbox forms' export operation (wait, then ok; 202, then a redirect to its file) and
the stored files answers carry, over real sockets."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import httpx
import pytest
from openpyxl import load_workbook

from haul.sandbox.server import RunningSandbox
from tests.helpers.sandbox_clients import drain_answers, forms_for


@pytest.fixture(scope="module")
def forms(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with forms_for(sandbox) as client:
        yield client


@pytest.fixture(scope="module")
def support(sandbox: RunningSandbox) -> str:
    return str(sandbox.info["surveys"]["source"][0])


def export(forms: httpx.Client, survey: str, **body: object) -> httpx.Response:
    """Start an export and poll its result until it is no longer 202; the final reply."""
    operation = forms.post(f"/surveys/{survey}/answers/export", json=body)
    assert operation.status_code == 200, operation.text
    for _ in range(5):
        reply = forms.get(
            f"/surveys/{survey}/answers/export-results", params={"task_id": operation.json()["id"]}
        )
        if reply.status_code != 202:
            return reply
    raise AssertionError("the export never finished")


def test_the_operation_waits_then_redirects_to_its_file(
    sandbox: RunningSandbox, forms: httpx.Client, support: str
) -> None:
    """The first look says wait (202 {id, status}), the next ok with a result url; the
    results then redirect (302, same host) to a file of every answer, one row each."""
    started = forms.post(f"/surveys/{support}/answers/export", json={"format": "csv"}).json()
    assert set(started) == {"id", "status", "message", "result"}
    assert started["status"] == "wait"
    results = f"/surveys/{support}/answers/export-results"
    waiting = forms.get(results, params={"task_id": started["id"]})
    assert waiting.status_code == 202 and waiting.json() == {"id": started["id"], "status": "wait"}
    polled = forms.get(f"/operations/{started['id']}").json()
    assert polled["status"] == "ok" and polled["result"]["url"].startswith(sandbox.info["forms"])
    done = forms.get(results, params={"task_id": started["id"]})
    assert done.status_code == 302
    assert done.headers["location"].startswith(sandbox.info["forms"] + "/operations/")
    rows = list(csv.reader(io.StringIO(forms.get(done.headers["location"]).text)))
    assert rows[0] == ["id", "created", "subject", "email", "details", "urgency", "screenshot"]
    answers = drain_answers(forms, support, ordering="asc", use_slugs="true")
    assert [int(row[0]) for row in rows[1:]] == [answer["id"] for answer in answers]
    assert [row[2] for row in rows[1:]] == [answer["data"][0]["value"] for answer in answers]


def test_json_and_xlsx_exports_and_their_filters(forms: httpx.Client, support: str) -> None:
    """json lists answers by slug; xlsx has a header row and a row per answer; pks, columns,
    limit and the dates pick what is exported."""
    answers = drain_answers(forms, support, ordering="asc")
    as_json = forms.get(export(forms, support, format="json").headers["location"]).json()
    assert [item["id"] for item in as_json] == [answer["id"] for answer in answers]
    assert all("subject" in item["answers"] for item in as_json)
    sheet = load_workbook(
        io.BytesIO(forms.get(export(forms, support).headers["location"]).content)
    ).active
    assert sheet is not None
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:3] == ("id", "created", "subject") and len(rows) == len(answers) + 1
    picked = [answer["id"] for answer in answers[:3]]
    chosen = forms.get(
        export(forms, support, format="json", pks=picked, columns=["email"], limit=2).headers[
            "location"
        ]
    ).json()
    assert [item["id"] for item in chosen] == picked[:2]
    assert all(set(item["answers"]) <= {"email"} for item in chosen)
    since = answers[-2]["created"]
    recent = forms.get(
        export(forms, support, format="json", started_at=since).headers["location"]
    ).json()
    assert [item["id"] for item in recent] == [answer["id"] for answer in answers[-2:]]


def test_bad_exports_are_refused(forms: httpx.Client, support: str) -> None:
    """An unknown format is 422 naming it; an unknown task 404; a task of another survey 404."""
    bad = forms.post(f"/surveys/{support}/answers/export", json={"format": "pdf"})
    assert bad.status_code == 422 and bad.json()[0]["loc"] == ["body", "format"]
    results = f"/surveys/{support}/answers/export-results"
    assert forms.get(results, params={"task_id": "nope"}).status_code == 404
    assert forms.get("/operations/nope").json() == {"detail": "Operation not found"}
    other = forms.get("/surveys").json()["result"][1]["id"]
    task = forms.post(f"/surveys/{other}/answers/export", json={}).json()["id"]
    assert forms.get(results, params={"task_id": task}).status_code == 404


def test_files_of_answers_download_by_id_url_or_path(forms: httpx.Client, support: str) -> None:
    """A files value (raw format) lists {name, size, path, url}; the url, the id route and
    /files?path= serve the same bytes, as many as the size; the list cell names the path."""
    raw = drain_answers(forms, support, ordering="asc", use_slugs="true", format="raw")
    files = [f for answer in raw for f in answer["data"].get("screenshot", [])]
    assert files
    listed = drain_answers(forms, support, ordering="asc", use_slugs="true")
    paths = [path for answer in listed if answer["data"][4] for path in answer["data"][4]["value"]]
    assert paths == [f["path"] for f in files]
    for stored in files[:3]:
        by_url = forms.get(stored["url"].removeprefix("/v1"))
        by_path = forms.get("/files", params={"path": stored["path"], "download": "true"})
        assert by_url.status_code == by_path.status_code == 200
        assert by_url.content == by_path.content and len(by_url.content) == stored["size"]
        assert stored["name"] in by_path.headers["content-disposition"]
    assert forms.get("/files", params={"path": "/nope/1_x.txt"}).status_code == 404
    assert forms.get("/files/0000000000000000").json() == {"detail": "File not found"}
    assert forms.get("/files").status_code == 422


def test_a_filled_answer_carries_new_and_stored_files(
    sandbox: RunningSandbox, support: str
) -> None:
    """A files value may send {name, content} (stored anew) or name a stored path."""
    with forms_for(sandbox) as forms:
        stored = forms.get(
            "/surveys/" + support + "/answers",
            params={"format": "raw", "use_slugs": "true", "page_size": 100},
        ).json()
        existing = next(
            a["data"]["screenshot"][0] for a in stored["answers"] if "screenshot" in a["data"]
        )
        filled = forms.post(
            f"/surveys/{support}/form",
            json={"subject": "With files", "email": "e@example.org",
                  "screenshot": [{"name": "notes.txt", "content": "hello"}, existing["path"]]},
        ).json()  # fmt: skip
        answer = forms.get("/answers", params={"answer_id": filled["answer_id"]}).json()
        files = next(item["value"] for item in answer["data"] if item["slug"] == "screenshot")
        assert [f["name"] for f in files] == ["notes.txt", existing["name"]]
        assert forms.get(files[0]["url"].removeprefix("/v1")).content == b"hello"
        refused = forms.post(
            f"/surveys/{support}/form",
            json={"subject": "s", "email": "e", "screenshot": ["/nope/0_x.txt"]},
        )
        assert refused.status_code == 422
