"""The forms service's API (v1): surveys, questions, answers, the export operation.

Answers come a page at a time through the ``next.next_url`` cursor; the link points at a
retired ``/v3/`` route, so only its query string (``id=...``) is carried onto our own
``/v1`` request, which keeps its own filters. Each page comes with its ``columns``: the
answers' ``data`` cells are positional and aligned to them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from haul.connectors.errors import NotFoundError, UnexpectedReply
from haul.connectors.http import ServiceClient, Sink
from haul.connectors.pagination import NextUrlPaginator, OffsetLimitPaginator, paginate

Record = dict[str, Any]

ANSWERS_PAGE_SIZE = 100
SURVEYS_PAGE_SIZE = 100
EXPORT_POLL_S = 0.5


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


@dataclass(frozen=True)
class AnswerPage:
    """One page of a survey's answers and the columns their cells are aligned to."""

    columns: list[Record]
    answers: list[Record]


class _AnswersPaginator(NextUrlPaginator):
    """The answers cursor, keeping each page's columns."""

    def __init__(self) -> None:
        super().__init__(records_key="answers")
        self.columns: list[Record] = []

    def update_state(self, response: httpx.Response, body: Any, records: list[Any]) -> None:
        self.columns = list(body.get("columns") or [])
        super().update_state(response, body, records)


class FormsClient(ServiceClient):
    """One forms org, over one HttpCore (closed with the client)."""

    service = "forms"

    async def me(self) -> Record:
        """The token's own user: the cheap auth probe (AuthError when rejected)."""
        return await self.core.get_json("/me")

    myself = me  # the name the runner's token check calls

    # -- surveys and questions ---------------------------------------------------------

    async def iter_surveys(self, *, limit: int = SURVEYS_PAGE_SIZE) -> AsyncIterator[Record]:
        """Yield every survey the token sees (offset and limit, until a short page)."""
        paginator = OffsetLimitPaginator(limit=limit)
        async for page in paginate(self.core, "GET", "/surveys", paginator):
            for survey in page:
                yield survey

    async def get_survey(self, survey_id: str) -> Record:
        """One survey, whole (NotFoundError when there is none)."""
        return await self.core.get_json(f"/surveys/{_segment(survey_id)}")

    async def find_survey(self, survey_id: str) -> Record | None:
        """One survey, or None when it does not exist."""
        try:
            return await self.get_survey(survey_id)
        except NotFoundError:
            return None

    async def list_questions(self, survey_id: str) -> list[Record]:
        """Every question of a survey, page after page, each with its ``page_id``."""
        body = await self.core.get_json(f"/surveys/{_segment(survey_id)}/questions")
        pages = body.get("pages") if isinstance(body, dict) else None
        if not isinstance(pages, list):
            raise UnexpectedReply(
                f"forms GET /surveys/{survey_id}/questions: expected {{pages: [...]}}, "
                f"got {str(body)[:200]}",
                service="forms",
                method="GET",
                url=f"/surveys/{survey_id}/questions",
            )
        return [
            {**item, "page_id": page.get("id")}
            for page in pages
            for item in page.get("items") or []
        ]

    # -- answers -----------------------------------------------------------------------

    async def iter_answer_pages(
        self,
        survey_id: str,
        *,
        after_id: int | None = None,
        date_from: str | None = None,
        date_to: str | None = None,
        page_size: int = ANSWERS_PAGE_SIZE,
    ) -> AsyncIterator[AnswerPage]:
        """Yield a survey's answers oldest first, a page at a time, after `after_id` if given.

        Columns are named by question slug (``use_slugs``).
        """
        params: dict[str, Any] = {"page_size": page_size, "ordering": "asc", "use_slugs": "true"}
        if after_id is not None:
            params["id"] = after_id
        if date_from:
            params["date_from"] = date_from
        if date_to:
            params["date_to"] = date_to
        paginator = _AnswersPaginator()
        path = f"/surveys/{_segment(survey_id)}/answers"
        async for answers in paginate(self.core, "GET", path, paginator, params=params):
            yield AnswerPage(paginator.columns, answers)

    async def get_answer(self, answer_id: int) -> Record:
        """One answer by id (``survey`` says whose)."""
        return await self.core.get_json("/answers", params={"answer_id": answer_id})

    async def fill(self, survey_id: str, values: Record) -> Record:
        """Submit the form once (question slug -> value): a new answer (not idempotent)."""
        return await self.core.post_json(f"/surveys/{_segment(survey_id)}/form", json=values)

    async def download_file(self, path: str, sink: Sink) -> int:
        """Stream a stored file (an answer's files value names it by path) into ``sink``."""
        return await self.core.download("/files", sink, params={"path": path})

    # -- export operation --------------------------------------------------------------

    async def export_answers(
        self, survey_id: str, sink: Sink, *, format: str = "csv", poll_s: float = EXPORT_POLL_S
    ) -> int:
        """Run the export operation to its end and stream its file into ``sink``."""
        path = f"/surveys/{_segment(survey_id)}/answers/export"
        operation = await self.core.post_json(path, json={"format": format})
        task_id = str(operation["id"])
        result = f"/surveys/{_segment(survey_id)}/answers/export-results"
        while True:
            async with self.core.stream("GET", result, params={"task_id": task_id}) as response:
                if response.status_code != 202:  # the redirect was followed to the file
                    written = 0
                    async for chunk in response.aiter_bytes():
                        sink.write(chunk)
                        written += len(chunk)
                    return written
            await asyncio.sleep(poll_s)

    async def publish(self, survey_id: str) -> None:
        """Open the survey for answers."""
        await self.core.post_json(f"/surveys/{_segment(survey_id)}/publish", repeatable=True)

    async def unpublish(self, survey_id: str) -> None:
        """Close the survey for answers."""
        await self.core.post_json(f"/surveys/{_segment(survey_id)}/unpublish", repeatable=True)
