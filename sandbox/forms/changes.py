"""An answer deleted and restored, as a person does it through the API.

``DELETE /surveys/{id}/answers/{answer_id}`` takes the answer out of every listing and read
(204); ``POST /surveys/{id}/answers/{answer_id}/restore`` brings it back where it was, under
the same id and time (200 ``{id}``). The spec names both operations and their parameters but
not their paths: these are the sandbox's choice. Deleting a deleted answer or restoring a
present one is 404.
"""

from __future__ import annotations

import bisect

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.forms.context import Call, checked_int, not_found
from haul.sandbox.forms.model import Survey


def _answer_id(request: Request) -> int:
    return checked_int("path", "answer_id", request.path_params["answer_id"], 0, 2**63)


def _survey(request: Request) -> Survey:
    return Call(request).survey(request.path_params["survey_id"])


async def delete_answer(request: Request) -> Response:
    survey, answer_id = _survey(request), _answer_id(request)
    at = bisect.bisect_left(survey.answers, answer_id, key=lambda a: a.id)
    if at == len(survey.answers) or survey.answers[at].id != answer_id:
        raise not_found("Answer")
    survey.deleted[answer_id] = survey.answers.pop(at)
    return Response(status_code=204)


async def restore_answer(request: Request) -> Response:
    survey, answer_id = _survey(request), _answer_id(request)
    answer = survey.deleted.pop(answer_id, None)
    if answer is None:
        raise not_found("Answer")
    bisect.insort(survey.answers, answer, key=lambda a: a.id)
    return JSONResponse({"id": answer.id})


API = (
    ("DELETE", "/surveys/{survey_id}/answers/{answer_id}", delete_answer),
    ("POST", "/surveys/{survey_id}/answers/{answer_id}/restore", restore_answer),
)
