"""The sandbox forms service over real sockets: reply shapes against the recorded live
replies, offset paging, the answers cursor at the retired /v3 route, filters, filling, files,
faults, and the same seeded surveys for the same seed."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from sandbox_shapes import assert_like_recording

from haul.sandbox.server import RunningSandbox, start_sandbox


def forms_for(sandbox: RunningSandbox, org: str) -> httpx.Client:
    info = sandbox.info
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-Id": info["orgs"][org]}
    return httpx.Client(base_url=info["forms"], headers=headers, timeout=30)


@pytest.fixture(scope="module")
def forms(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with forms_for(sandbox, "source") as client:
        yield client


def drain(client: httpx.Client, survey: str, **params: object) -> list[dict]:
    """Every answer, carrying only next_url's query onto our own /v1 route."""
    answers: list[dict] = []
    query: dict[str, str] = {}
    while True:
        reply = client.get(f"/surveys/{survey}/answers", params={**params, **query})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        answers += body["answers"]
        if body["next"] is None:
            return answers
        link = body["next"]["next_url"]
        assert urlsplit(link).path.startswith("/v3/")  # the retired route, as the live one
        query = dict(parse_qsl(urlsplit(link).query))


def _reply(response: httpx.Response) -> tuple[int, object]:
    return response.status_code, response.json()


def test_replies_look_like_the_live_service(sandbox: RunningSandbox, forms: httpx.Client) -> None:
    support = sandbox.info["surveys"]["source"][0]
    assert_like_recording("forms:me/get", *_reply(forms.get("/me")))
    assert_like_recording("forms:surveys/list", *_reply(forms.get("/surveys")))
    assert_like_recording("forms:surveys/get", *_reply(forms.get(f"/surveys/{support}")))
    assert_like_recording(
        "forms:questions/list", *_reply(forms.get(f"/surveys/{support}/questions"))
    )
    assert_like_recording("forms:answers/list", *_reply(forms.get(f"/surveys/{support}/answers")))
    first = forms.get(f"/surveys/{support}/answers").json()["answers"][0]
    assert_like_recording(
        "forms:answers/get", *_reply(forms.get("/answers", params={"answer_id": first["id"]}))
    )


def test_auth_and_errors(sandbox: RunningSandbox, forms: httpx.Client) -> None:
    info = sandbox.info
    assert httpx.get(info["forms"] + "/me").status_code == 401
    assert forms.get("/surveys/" + "f" * 24).json() == {"detail": "Survey not found"}
    bad = forms.get("/surveys/not-an-id")
    assert bad.status_code == 422 and bad.json()[0]["loc"] == ["path", "survey_id"]
    support = info["surveys"]["source"][0]
    too_big = forms.get(f"/surveys/{support}/answers", params={"page_size": 101})
    assert too_big.status_code == 422 and too_big.json()[0]["loc"] == ["query", "page_size"]
    retired = httpx.get(info["forms"].replace("/v1", "/v3") + f"/surveys/{support}/answers")
    assert retired.status_code == 404


def test_surveys_page_by_offset_and_cover_every_question_type(forms: httpx.Client) -> None:
    first = forms.get("/surveys", params={"limit": 2}).json()
    assert len(first["result"]) == 2 and "next" in first["links"]
    rest = forms.get("/surveys", params={"limit": 2, "offset": 2}).json()
    assert len(rest["result"]) == 1 and rest["links"] == {}
    kinds = {
        item["type"]
        for survey in first["result"] + rest["result"]
        for page in forms.get(f"/surveys/{survey['id']}/questions").json()["pages"]
        for item in page["items"]
    }
    wanted = {"string", "boolean", "integer", "date", "enum", "matrix", "series", "suggest",
              "payment", "daterange", "files"}  # fmt: skip
    assert wanted <= kinds


def test_the_cursor_gives_every_answer_once_either_way(
    sandbox: RunningSandbox, forms: httpx.Client
) -> None:
    support = sandbox.info["surveys"]["source"][0]
    ascending = drain(forms, support, ordering="asc", page_size=5)
    descending = drain(forms, support, ordering="desc", page_size=4)
    ids = [a["id"] for a in ascending]
    assert ids == sorted(ids) and len(ids) == len(set(ids)) > 5
    assert [a["id"] for a in descending] == ids[::-1]
    middle = ascending[len(ascending) // 2]["created"]
    later = drain(forms, support, ordering="asc", date_from=middle)
    assert later and all(a["created"] >= middle for a in later) and len(later) < len(ascending)


def test_a_filled_answer_comes_after_the_cursor_alone(sandbox: RunningSandbox) -> None:
    with start_sandbox(seed=2, size="tiny") as running, forms_for(running, "source") as forms:
        support = running.info["surveys"]["source"][0]
        last = drain(forms, support, ordering="asc", use_slugs="true")[-1]["id"]
        filled = forms.post(f"/surveys/{support}/form", json={"subject": "New", "email": "a@b.c"})
        assert_like_recording("forms:filling/submit", *_reply(filled))
        newer = drain(forms, support, ordering="asc", id=last)
        assert [a["id"] for a in newer] == [filled.json()["answer_id"]]
        missing = forms.post(f"/surveys/{support}/form", json={"subject": "no email"})
        assert missing.status_code == 422 and missing.json()[0]["loc"] == ["body", "email"]


def test_files_of_answers_download(sandbox: RunningSandbox, forms: httpx.Client) -> None:
    support = sandbox.info["surveys"]["source"][0]
    answers = drain(forms, support, use_slugs="true")
    columns = forms.get(f"/surveys/{support}/answers", params={"use_slugs": "true"}).json()[
        "columns"
    ]
    at = [c["slug"] for c in columns].index("screenshot")
    paths = [path for a in answers if a["data"][at] for path in a["data"][at]["value"]]
    assert paths
    body = forms.get("/files", params={"path": paths[0]})
    assert body.status_code == 200 and len(body.content) >= 50


def test_the_export_answers_202_then_redirects_to_its_file(
    sandbox: RunningSandbox, forms: httpx.Client
) -> None:
    support = sandbox.info["surveys"]["source"][0]
    operation = forms.post(f"/surveys/{support}/answers/export", json={"format": "csv"}).json()
    waiting = forms.get(
        f"/surveys/{support}/answers/export-results", params={"task_id": operation["id"]}
    )
    assert_like_recording("forms:answers/export_results_get", *_reply(waiting))
    assert forms.get(f"/operations/{operation['id']}").json()["status"] == "ok"
    done = forms.get(
        f"/surveys/{support}/answers/export-results", params={"task_id": operation["id"]}
    )
    assert done.status_code == 302
    assert forms.get(done.headers["location"]).text.startswith("id,created,subject")


def test_faults_apply_and_seeding_is_deterministic() -> None:
    faults = "5xx:1@/v1/surveys*"
    with (
        start_sandbox(seed=4, size="tiny", faults=faults) as running,
        forms_for(running, "source") as forms,
    ):
        assert forms.get("/surveys").status_code == 503
        assert forms.get("/me").status_code == 200
    snapshots = []
    for _ in range(2):
        with start_sandbox(seed=4, size="tiny") as running, forms_for(running, "source") as forms:
            support = running.info["surveys"]["source"][0]
            snapshots.append(drain(forms, support, ordering="asc"))
    assert snapshots[0] == snapshots[1]
