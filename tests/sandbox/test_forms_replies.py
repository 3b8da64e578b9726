"""Every forms route whose live reply was recorded answers with the same status, keys and JSON
types (sandbox_shapes compares them recursively); the whole survey has every key the notes
list."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from haul.sandbox.server import RunningSandbox
from tests.helpers.sandbox_clients import forms_for
from tests.helpers.sandbox_shapes import assert_like_recording

# api-notes 3.2: the keys of a whole survey
SURVEY_KEYS = {
    "allow_multiple_answers", "answers", "author", "auto_publication", "captcha", "collab_id",
    "created", "dir_id", "file_storage", "fill_again", "follow", "followers", "footer",
    "hashed_id", "id", "iframe", "is_banned", "is_favourite", "is_public", "is_published",
    "language", "max_count", "metric", "name", "need_auth", "quiz", "share", "show_last_answer",
    "stats", "styles", "teaser", "texts", "validator_url",
}  # fmt: skip


@pytest.fixture(scope="module")
def forms(sandbox: RunningSandbox) -> Iterator[httpx.Client]:
    with forms_for(sandbox) as client:
        yield client


@pytest.fixture(scope="module")
def support(sandbox: RunningSandbox) -> str:
    return str(sandbox.info["surveys"]["source"][0])


def like(recording: str, reply: httpx.Response) -> None:
    assert_like_recording(f"forms:{recording}", reply.status_code, reply.json())


@pytest.mark.parametrize(
    ("recording", "path"),
    [
        ("me/get", "/me"),
        ("surveys/list", "/surveys"),
        ("surveys/get", "/surveys/{support}"),
        ("questions/list", "/surveys/{support}/questions"),
        ("answers/list", "/surveys/{support}/answers"),
    ],
)
def test_reads(forms: httpx.Client, support: str, recording: str, path: str) -> None:
    """The caller, the survey listing and one survey, its questions, its answers."""
    like(recording, forms.get(path.format(support=support)))


def test_one_answer(forms: httpx.Client, support: str) -> None:
    """GET /answers?answer_id= as recorded."""
    first = forms.get(f"/surveys/{support}/answers").json()["answers"][0]
    like("answers/get", forms.get("/answers", params={"answer_id": first["id"]}))


def test_the_whole_survey_has_every_key_the_notes_list(
    sandbox: RunningSandbox, forms: httpx.Client, support: str
) -> None:
    """And its author is a login of an org user."""
    survey = forms.get(f"/surveys/{support}").json()
    assert set(survey) >= SURVEY_KEYS
    login = survey["author"]["username"]
    user = httpx.get(sandbox.info["tracker"] + f"/users/{login}", headers=forms.headers)
    assert user.status_code == 200 and user.json()["login"] == login


def test_export_results_while_waiting(forms: httpx.Client, support: str) -> None:
    """202 {id, status} as recorded."""
    task = forms.post(f"/surveys/{support}/answers/export", json={"format": "csv"}).json()["id"]
    results = forms.get(f"/surveys/{support}/answers/export-results", params={"task_id": task})
    like("answers/export_results_get", results)


def test_filling(forms: httpx.Client, sandbox: RunningSandbox) -> None:
    """POST /surveys/{id}/form as recorded (on the feedback survey, read by nothing else)."""
    feedback = sandbox.info["surveys"]["source"][2]
    like("filling/submit", forms.post(f"/surveys/{feedback}/form", json={"score": 7}))
