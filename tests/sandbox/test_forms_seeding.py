"""The sandbox forms' seeded surveys (every question type, a support-request form, answers over
years, sizes), the same for the same seed across starts, and the shared faults applying to
forms, over real sockets."""

from __future__ import annotations

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.helpers.sandbox_clients import drain_answers, forms_for

TYPES = {"string", "boolean", "integer", "date", "enum", "matrix", "series", "suggest",
         "payment", "daterange", "files"}  # fmt: skip


def questions_of(forms: httpx.Client, survey: str) -> list[dict]:
    pages = forms.get(f"/surveys/{survey}/questions").json()["pages"]
    return [item for page in pages for item in page["items"]]


def test_every_question_type_and_a_support_request_form(sandbox: RunningSandbox) -> None:
    """Every type the spec names, enum single and multiple with their options; the first
    survey asks subject, email, details, urgency (low|normal|high) and a file."""
    support, registration, feedback = sandbox.info["surveys"]["source"]
    with forms_for(sandbox) as forms:
        every = [q for s in (support, registration, feedback) for q in questions_of(forms, s)]
        assert {q["type"] for q in every} >= TYPES
        enums = [q for q in every if q["type"] == "enum"]
        assert {q["multiple"] for q in enums} == {True, False}
        assert all(q["options"] for q in every if q["type"] in ("enum", "matrix"))
        asked = {q["slug"]: q for q in questions_of(forms, support)}
        assert list(asked) == ["subject", "email", "details", "urgency", "screenshot"]
        assert [o["slug"] for o in asked["urgency"]["options"]] == ["low", "normal", "high"]
        assert asked["subject"]["required"] and not asked["details"]["required"]
        assert forms.get(f"/surveys/{support}").json()["name"] == "Support requests"


def test_answers_span_years_with_ids_ascending_by_time(sandbox: RunningSandbox) -> None:
    """Across the org, a later answer has a larger id; answers spread over several years;
    emails are the org's users'; some answers carry files, not all."""
    with forms_for(sandbox) as forms:
        answers = [
            answer
            for survey in sandbox.info["surveys"]["source"]
            for answer in drain_answers(
                forms, survey, ordering="asc", use_slugs="true", page_size=100
            )
        ]
        by_id = sorted(answers, key=lambda answer: answer["id"])
        assert [a["created"] for a in by_id] == sorted(a["created"] for a in answers)
        years = {answer["created"][:4] for answer in answers}
        assert len(years) >= 3
        support = drain_answers(forms, sandbox.info["surveys"]["source"][0], use_slugs="true")
        emails = {answer["data"][1]["value"] for answer in support}
        with_files = [answer for answer in support if answer["data"][4]]
        assert 0 < len(with_files) < len(support)
    with httpx.Client(base_url=sandbox.info["tracker"], headers=forms.headers) as tracker:
        for email in emails:
            assert tracker.get(f"/users/{email.partition('@')[0]}").status_code == 200


@pytest.mark.parametrize(("size", "answers"), [("tiny", 30), ("small", 500)])
def test_the_size_sets_how_many_answers(size: str, answers: int) -> None:
    """Three surveys at every size; 30 answers at tiny, 500 at small (the listing's counts)."""
    with start_sandbox(seed=3, size=size) as running, forms_for(running) as forms:
        listed = forms.get("/surveys").json()["result"]
        assert len(listed) == 3 and sum(survey["answers"] for survey in listed) == answers


def snapshot(seed: int) -> dict:
    """Everything the source org's forms show, and one file's bytes."""
    with start_sandbox(seed=seed, size="tiny") as running, forms_for(running) as forms:
        surveys = running.info["surveys"]["source"]
        raw = drain_answers(forms, surveys[0], ordering="asc", format="raw", use_slugs="true")
        first_file = next(a["data"]["screenshot"][0] for a in raw if "screenshot" in a["data"])
        return {
            "surveys": surveys,
            "listing": forms.get("/surveys").json()["result"],
            "questions": [questions_of(forms, survey) for survey in surveys],
            "answers": [drain_answers(forms, survey, ordering="asc") for survey in surveys],
            "raw": raw,
            "file": forms.get(first_file["url"].removeprefix("/v1")).content,
        }


def test_the_same_seed_gives_the_same_forms_across_starts() -> None:
    """Two starts at one seed show the same surveys, questions, answers and file bytes;
    another seed other surveys."""
    first = snapshot(5)
    assert snapshot(5) == first
    assert snapshot(6)["surveys"] != first["surveys"]


def test_faults_apply_to_forms(fresh: RunningSandbox) -> None:
    """5xx and 429 (with Retry-After) on a glob of forms paths, the others untouched; a fill
    dropped before it applies adds nothing, one dropped after it applies adds its answer."""
    support = fresh.info["surveys"]["source"][0]
    with forms_for(fresh) as forms:
        fresh.set_faults("5xx:1@/v1/surveys")
        assert forms.get("/surveys").status_code == 503
        assert forms.get("/me").status_code == 200
        fresh.set_faults("429:1:7@/v1/surveys/*/questions")
        limited = forms.get(f"/surveys/{support}/questions")
        assert limited.status_code == 429 and limited.headers["retry-after"] == "7"
        fresh.set_faults("")
        before = len(drain_answers(forms, support, page_size=100))
        body = {"subject": "dropped", "email": "e@example.org"}
        for kind, added in (("drop_before", 0), ("drop_after", 1)):
            fresh.set_faults(f"{kind}:1@/v1/surveys/*/form")
            with pytest.raises(httpx.TransportError):
                forms.post(f"/surveys/{support}/form", json=body)
            fresh.set_faults("")
            assert len(drain_answers(forms, support, page_size=100)) == before + added
            before += added
    stats = fresh.stats()["by_route"]
    assert stats["GET /v1/surveys/{survey_id}/answers"] >= 3
