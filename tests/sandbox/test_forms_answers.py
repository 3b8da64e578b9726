"""The sandbox forms over real sockets: auth, survey ids, offset paging of surveys, and answers
drained through next_url's query carried onto /v1 (the /v3 route it names is retired), with
their filters, one answer by id or key, and filling."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import drain_answers, forms_for

MAX_PAGE_SIZE = 100


@pytest.fixture(scope="module")
def forms(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with forms_for(sandbox) as client:
        yield client


@pytest.fixture(scope="module")
def support(sandbox: RunningSandbox) -> str:
    """The support-request survey (the JSON line lists it first)."""
    return str(sandbox.info["surveys"]["source"][0])


@pytest.fixture(scope="module")
def every_answer(forms: httpx.Client, support: str) -> list[dict]:
    return drain_answers(forms, support, ordering="asc", page_size=MAX_PAGE_SIZE)


def test_a_token_and_an_org_are_both_needed(sandbox: RunningSandbox) -> None:
    """No token, a wrong one, no org or an unknown org: 401 with a detail; Bearer and
    X-Cloud-Org-Id work as OAuth and X-Org-Id do."""
    info = sandbox.info
    token, org = info["tokens"]["admin"], info["orgs"]["source"]
    for headers in (
        {},
        {"X-Org-Id": org},
        {"Authorization": "OAuth wrong", "X-Org-Id": org},
        {"Authorization": f"OAuth {token}"},
        {"Authorization": f"OAuth {token}", "X-Org-Id": "nope"},
    ):
        reply = httpx.get(info["forms"] + "/surveys", headers=headers)
        assert reply.status_code == 401 and "detail" in reply.json()
    for headers in (
        {"Authorization": f"Bearer {token}", "X-Cloud-Org-Id": org},
        {"Authorization": f"OAuth {info['tokens']['user']}", "X-Org-Id": org},
    ):
        assert httpx.get(info["forms"] + "/me", headers=headers).status_code == 200


def test_survey_ids_are_24_hex(forms: httpx.Client, support: str) -> None:
    """A malformed id is 422 naming the path parameter; a well-formed unknown one 404."""
    bad = forms.get("/surveys/not-an-id")
    assert bad.status_code == 422 and bad.json()[0]["loc"] == ["path", "survey_id"]
    assert forms.get("/surveys/" + "f" * 24).json() == {"detail": "Survey not found"}
    assert forms.get("/surveys/" + "f" * 24 + "/answers").status_code == 404
    assert forms.get(f"/surveys/{support.upper()}").json()["id"] == support


def test_surveys_page_by_offset_until_a_short_page(
    sandbox: RunningSandbox, forms: httpx.Client
) -> None:
    """limit=2 over three surveys: a full page with a next link, then a short one without."""
    first = forms.get("/surveys", params={"limit": 2}).json()
    assert len(first["result"]) == 2 and "offset=2" in first["links"]["next"]
    rest = forms.get("/surveys", params={"limit": 2, "offset": 2}).json()
    assert len(rest["result"]) == 1 and rest["links"] == {}
    listed = [survey["id"] for survey in first["result"] + rest["result"]]
    assert listed == sandbox.info["surveys"]["source"]
    assert forms.get("/surveys", params={"limit": 0}).status_code == 422
    with forms_for(sandbox, "target") as target:
        assert target.get("/surveys").json() == {"links": {}, "result": []}


def test_the_cursor_gives_every_answer_once_either_way(
    forms: httpx.Client, support: str, every_answer: list[dict]
) -> None:
    """Small pages both ways: each answer exactly once, ids (and times) ascending or
    descending, the count the survey reports, and the default ordering is desc."""
    ids = [answer["id"] for answer in every_answer]
    assert ids == sorted(set(ids)) and len(ids) > 10
    assert [a["created"] for a in every_answer] == sorted(a["created"] for a in every_answer)
    assert [a["id"] for a in drain_answers(forms, support, ordering="asc", page_size=3)] == ids
    assert [a["id"] for a in drain_answers(forms, support, ordering="desc", page_size=4)] == ids[
        ::-1
    ]
    assert [a["id"] for a in drain_answers(forms, support, page_size=5)] == ids[::-1]
    assert forms.get(f"/surveys/{support}").json()["answers"] == len(ids)


def test_next_url_names_the_retired_route_with_the_cursor_and_filters(
    sandbox: RunningSandbox, forms: httpx.Client, support: str, every_answer: list[dict]
) -> None:
    """The link carries id, page_size, ordering and the filters as given; /v3 itself is 404;
    the last page's next is null."""
    since = every_answer[2]["created"]
    body = forms.get(
        f"/surveys/{support}/answers",
        params={"page_size": 2, "ordering": "asc", "date_from": since, "use_slugs": "true"},
    ).json()
    link = urlsplit(body["next"]["next_url"])
    assert dict(parse_qsl(link.query)) == {
        "id": str(body["answers"][-1]["id"]), "page_size": "2", "ordering": "asc",
        "date_from": since, "use_slugs": "true",
    }  # fmt: skip
    retired = httpx.get(info_root(sandbox) + link.path + "?" + link.query, headers=forms.headers)
    assert retired.status_code == 404
    last = forms.get(f"/surveys/{support}/answers", params={"page_size": MAX_PAGE_SIZE}).json()
    assert last["next"] is None


def info_root(sandbox: RunningSandbox) -> str:
    """The forms service's origin (scheme, host and port, no /v1)."""
    return str(sandbox.info["forms"]).removesuffix("/v1")


def test_dates_bound_the_answers_inclusively(
    forms: httpx.Client, support: str, every_answer: list[dict]
) -> None:
    """date_from and date_to filter on created, alone and together, across pages."""
    low, high = every_answer[3]["created"], every_answer[-4]["created"]
    later = drain_answers(forms, support, ordering="asc", page_size=2, date_from=low)
    assert later == every_answer[3:]
    earlier = drain_answers(forms, support, page_size=2, date_to=high)
    assert earlier == every_answer[:-3][::-1]
    both = drain_answers(forms, support, ordering="asc", page_size=2, date_from=low, date_to=high)
    assert both == every_answer[3:-3]
    bad = forms.get(f"/surveys/{support}/answers", params={"date_from": "yesterday"})
    assert bad.status_code == 422 and bad.json()[0]["loc"] == ["query", "date_from"]


def test_page_size_is_1_to_100_and_other_inputs_are_checked(
    forms: httpx.Client, support: str
) -> None:
    """Each invalid parameter is a 422 naming it."""
    for name, value in (
        ("page_size", MAX_PAGE_SIZE + 1),
        ("page_size", 0),
        ("page_size", "many"),
        ("ordering", "sideways"),
        ("format", "pdf"),
        ("id", "x"),
        ("use_slugs", "perhaps"),
    ):
        reply = forms.get(f"/surveys/{support}/answers", params={name: value})
        assert reply.status_code == 422, (name, value)
        assert reply.json()[0]["loc"] == ["query", name]
        assert {"loc", "error_code", "msg"} == set(reply.json()[0])
    assert forms.get(f"/surveys/{support}/answers", params={"page_size": 100}).status_code == 200


def test_cells_align_to_columns_named_by_id_or_slug(
    forms: httpx.Client, support: str, every_answer: list[dict]
) -> None:
    """A cell is {"value": str | [str]} or null; use_slugs names columns and enum values by
    slug (labels otherwise); questions picks columns; format=raw gives data as stored."""
    columns = forms.get(f"/surveys/{support}/answers", params={"use_slugs": "true"}).json()[
        "columns"
    ]
    slugs = [column["slug"] for column in columns]
    assert slugs == ["subject", "email", "details", "urgency", "screenshot"]
    cells = [cell for answer in every_answer for cell in answer["data"]]
    assert None in cells and all(len(answer["data"]) == 5 for answer in every_answer)
    for cell in filter(None, cells):
        value = cell["value"]
        assert isinstance(value, str) or all(isinstance(item, str) for item in value)
    labels = {a["data"][3]["value"] for a in every_answer if a["data"][3]}
    assert labels and labels <= {"Low", "Normal", "High"}
    by_slug = drain_answers(forms, support, use_slugs="true", page_size=MAX_PAGE_SIZE)
    assert {a["data"][3]["value"] for a in by_slug if a["data"][3]} <= {"low", "normal", "high"}
    by_id = forms.get(f"/surveys/{support}/answers").json()
    assert [c["slug"] for c in by_id["columns"]] == [str(c["id"]) for c in columns]
    picked = forms.get(
        f"/surveys/{support}/answers",
        params={"questions": f"{columns[0]['id']},{columns[3]['id']}", "use_slugs": "true"},
    ).json()
    assert [c["slug"] for c in picked["columns"]] == ["subject", "urgency"]
    raw = forms.get(
        f"/surveys/{support}/answers",
        params={"format": "raw", "use_slugs": "true", "ordering": "asc", "page_size": 100},
    ).json()
    assert "columns" not in raw
    assert all(set(a["data"]) <= set(slugs) and "subject" in a["data"] for a in raw["answers"])
    files = [f for a in raw["answers"] for f in a["data"].get("screenshot", [])]
    assert files and all(set(f) == {"name", "size", "path", "url"} for f in files)


def test_one_answer_by_id_or_by_key(
    forms: httpx.Client, support: str, every_answer: list[dict]
) -> None:
    """GET /answers takes exactly one of answer_id and answer_key; data items describe their
    question; an unknown id is 404."""
    first = every_answer[0]
    by_id = forms.get("/answers", params={"answer_id": first["id"]}).json()
    assert by_id["id"] == first["id"] and by_id["created"] == first["created"]
    assert by_id["survey"]["id"] == support
    assert {"id", "slug", "label", "type", "value"} <= set(by_id["data"][0])
    by_key = forms.get("/answers", params={"answer_key": by_id["answer_key"]}).json()
    assert by_key == by_id
    assert forms.get("/answers", params={"answer_id": 1}).status_code == 404
    assert forms.get("/answers").status_code == 422
    both = {"answer_id": first["id"], "answer_key": by_id["answer_key"]}
    assert forms.get("/answers", params=both).status_code == 422


def test_a_filled_answer_is_all_a_later_drain_after_the_cursor_returns() -> None:
    """Filling adds an answer created now; the cursor of the last drained answer returns it
    alone; enum values are checked, required questions enforced, unknown slugs refused; a
    backdated answer keeps its date; an unpublished form takes no answers."""
    with start_sandbox(seed=2, size="tiny") as running, forms_for(running) as forms:
        support = running.info["surveys"]["source"][0]
        last = drain_answers(forms, support, ordering="asc")[-1]
        filled = forms.post(
            f"/surveys/{support}/form",
            json={"subject": "New", "email": "a@example.org", "urgency": "High", "details": None},
        )
        assert filled.status_code == 200 and filled.json()["answer_id"] > last["id"]
        newer = drain_answers(forms, support, ordering="asc", use_slugs="true", id=last["id"])
        assert [a["id"] for a in newer] == [filled.json()["answer_id"]]
        assert newer[0]["data"][:4] == [{"value": "New"}, {"value": "a@example.org"}, None,
                                        {"value": "high"}]  # fmt: skip
        assert newer[0]["created"] > last["created"]
        for body, loc in (
            ({"subject": "no email"}, "email"),
            ({"subject": "s", "email": "e", "urgency": "extreme"}, "urgency"),
            ({"subject": "s", "email": "e", "nosuch": "x"}, "nosuch"),
        ):
            refused = forms.post(f"/surveys/{support}/form", json=body)
            assert refused.status_code == 422 and refused.json()[0]["loc"] == ["body", loc]
        old = forms.post(
            f"/surveys/{support}/form",
            json={"subject": "Old", "email": "e", "_created": "2020-02-02T10:00:00Z"},
        ).json()
        shown = forms.get("/answers", params={"answer_id": old["answer_id"]}).json()
        assert shown["created"] == "2020-02-02T10:00:00.000Z"
        assert forms.post(f"/surveys/{support}/unpublish").status_code == 200
        assert forms.get(f"/surveys/{support}").json()["is_published"] is False
        closed = forms.post(f"/surveys/{support}/form", json={"subject": "s", "email": "e"})
        assert closed.status_code == 400 and "detail" in closed.json()
        assert forms.post(f"/surveys/{support}/publish").status_code == 200
        assert forms.get(f"/surveys/{support}").json()["is_published"] is True
