"""FormsClient over a mock forms service: the retired next_url, offset paging, the export."""

from __future__ import annotations

import io

import httpx
import pytest

from haul.connectors.forms import FormsClient

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

FORMS = "https://forms.test/v1"
SURVEY = "0123456789abcdef01234567"


def client_for(make_core, handler) -> FormsClient:
    return FormsClient(make_core(handler, service="forms", base_url=FORMS))


async def test_answers_follow_next_url_query_onto_v1_keeping_our_filters(make_core):
    seen: list[httpx.URL] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        assert request.url.path == f"/v1/surveys/{SURVEY}/answers"
        columns = [{"id": 1, "slug": "subject", "type": "string"}]
        after = request.url.params.get("id")
        if after is None:
            return httpx.Response(
                200,
                json={
                    "columns": columns,
                    "answers": [{"id": 1, "data": [{"value": "a"}]}],
                    "next": {"next_url": f"/v3/surveys/{SURVEY}/answers?id=1&page_size=100"},
                },
            )
        assert after == "1"
        return httpx.Response(
            200,
            json={"columns": columns, "answers": [{"id": 2, "data": [None]}], "next": None},
        )

    async with client_for(make_core, handler) as client:
        pages = [page async for page in client.iter_answer_pages(SURVEY, date_from="2020-01-01")]
    assert [[a["id"] for a in page.answers] for page in pages] == [[1], [2]]
    assert pages[1].columns[0]["slug"] == "subject"
    assert all(url.params["date_from"] == "2020-01-01" for url in seen)
    assert all(
        url.params["ordering"] == "asc" and url.params["use_slugs"] == "true" for url in seen
    )


async def test_surveys_page_by_offset_until_a_short_page(make_core):
    def handler(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params["offset"])
        result = [{"id": f"{n:024x}"} for n in range(offset, min(offset + 2, 3))]
        return httpx.Response(200, json={"links": {}, "result": result})

    async with client_for(make_core, handler) as client:
        surveys = [survey async for survey in client.iter_surveys(limit=2)]
    assert len(surveys) == 3


async def test_the_export_is_polled_until_its_file_arrives(make_core):
    polls = []

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/answers/export"):
            return httpx.Response(200, json={"id": "op1", "status": "running"})
        if path.endswith("/export-results"):
            polls.append(request.url.params["task_id"])
            if len(polls) < 3:
                return httpx.Response(202, json={"id": "op1", "status": "running"})
            return httpx.Response(302, headers={"Location": f"{FORMS}/files/export.csv"})
        if path == "/v1/files/export.csv":
            return httpx.Response(200, content=b"id,subject\n1,a\n")
        return httpx.Response(404, json={"detail": "no route"})

    sink = io.BytesIO()
    async with client_for(make_core, handler) as client:
        written = await client.export_answers(SURVEY, sink, poll_s=0)
    assert sink.getvalue() == b"id,subject\n1,a\n" and written == 15
    assert polls == ["op1", "op1", "op1"]
