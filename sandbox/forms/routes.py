"""The caller, surveys (listed by offset and limit, one whole), their questions, and the
publish state."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.forms.answers import wire_time
from haul.sandbox.forms.context import Call, query_int
from haul.sandbox.forms.model import ROOT, Survey
from haul.sandbox.people import User
from haul.sandbox.timefmt import now_ms

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


async def me(request: Request) -> Response:
    user = Call(request).user
    return JSONResponse(
        {"id": user.uid, "uid": str(user.uid), "cloud_uid": user.cloud_uid, "email": user.email}
    )


def survey_brief(call: Call, survey: Survey) -> dict[str, Any]:
    """A survey as the listing shows it."""
    return {
        "answers": len(survey.answers),
        "collab_id": f"collab-{call.tracker_org.id}",
        "created": wire_time(survey.created),
        "dir_id": call.tracker_org.id,
        "id": survey.id,
        "is_favourite": False,
        "is_public": False,
        "is_published": survey.published,
        "language": "en",
        "modified": wire_time(survey.modified or survey.created),
        "name": survey.name,
    }


def _author(user: User) -> dict[str, Any]:
    return {
        "display_name": user.display,
        "identity": {"uid": str(user.uid), "cloud_uid": user.cloud_uid},
        "username": user.login,
    }


def survey_whole(call: Call, survey: Survey) -> dict[str, Any]:
    """A survey with its settings, as ``GET /surveys/{id}`` shows it."""
    return {
        **survey_brief(call, survey),
        "allow_multiple_answers": True,
        "author": _author(survey.author),
        "auto_publication": False,
        "captcha": False,
        "file_storage": None,
        "fill_again": True,
        "follow": False,
        "followers": [],
        "footer": True,
        "hashed_id": survey.id[::-1],
        "iframe": False,
        "is_banned": False,
        "max_count": 0,
        "metric": None,
        "need_auth": False,
        "quiz": None,
        "share": True,
        "show_last_answer": False,
        "stats": False,
        "styles": None,
        "teaser": True,
        "texts": {
            "back": "Back",
            "next": "Next",
            "redirect": "",
            "submit": "Send",
            "subtitle": "",
            "title": survey.name,
        },
        "validator_url": None,
    }


async def list_surveys(request: Request) -> Response:
    """Offset pages; ``links.next`` names the next one while there is more."""
    call = Call(request)
    offset = query_int(request, "offset", 0, 0, 2**31)
    limit = query_int(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    surveys = sorted(call.org.surveys.values(), key=lambda survey: (survey.created, survey.id))
    links: dict[str, str] = {}
    if offset + limit < len(surveys):
        links["next"] = call.absolute(f"{ROOT}/surveys?offset={offset + limit}&limit={limit}")
    page = [survey_brief(call, survey) for survey in surveys[offset : offset + limit]]
    return JSONResponse({"links": links, "result": page})


async def get_survey(request: Request) -> Response:
    call = Call(request)
    return JSONResponse(survey_whole(call, call.survey(request.path_params["survey_id"])))


async def list_questions(request: Request) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    pages = sorted({question.page for question in survey.questions})
    return JSONResponse({"pages": [
        {"id": page, "items": [q.wire() for q in survey.questions if q.page == page]}
        for page in pages
    ]})  # fmt: skip


async def publish(request: Request) -> Response:
    """A bare 200 (no body), as the live service answers."""
    return _published(request, True)


async def unpublish(request: Request) -> Response:
    return _published(request, False)


def _published(request: Request, published: bool) -> Response:
    call = Call(request)
    survey = call.survey(request.path_params["survey_id"])
    survey.published = published
    survey.modified = now_ms()
    return Response(status_code=200)
