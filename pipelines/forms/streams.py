"""The forms extract: surveys with their questions, each survey's answers, answers' files.

`SurveyStream` stages each survey with its questions (read again every run: the answer
count it carries is what tells a grid back-fill that rows were added). `AnswerStream`
stages a survey's answers oldest first, a page at a time with the last answer id as its
checkpoint, so a later run asks only for answers after it, then looks for answers the
source deleted (`pipelines.forms.deletions`). The next page is asked for while the last one
is staged (`prefetched`): each page needs the cursor of the one before, so that overlap is
what a single survey's answers can gain; several surveys are read at once by the extract. `FileDrain` downloads the files
an answer carries into the blob store; an answer without files costs no request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.forms import FormsClient
from haul.pipelines.concurrency import prefetched
from haul.pipelines.config import ConfigError
from haul.pipelines.downloads import download_checked, staged_or_fetched
from haul.pipelines.forms.answers import answer_values, files_of
from haul.pipelines.forms.deletions import find_deleted_answers
from haul.pipelines.streams import Page, Row
from haul.state.store import StagedRecord, StagingStore


@dataclass
class SurveyStream:
    """The surveys in scope, each with its questions, as one page."""

    client: FormsClient
    survey_ids: list[str]
    entity: str = "survey"
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        rows: list[Row] = []
        for survey_id in self.survey_ids:
            try:
                survey = await self.client.get_survey(survey_id)
            except NotFoundError:
                raise ConfigError(
                    "scope.surveys", f"{survey_id} is not a survey of the source org"
                ) from None
            questions = await self.client.list_questions(survey_id)
            rows.append({"source_id": survey_id, "raw": {**survey, "questions": questions}})
        yield Page(rows)


@dataclass
class AnswerStream:
    """One survey's answers, oldest first, checkpointed by the last answer id."""

    client: FormsClient
    survey_id: str
    entity: str = "survey_answer"
    store: StagingStore | None = None  # given: answers deleted at the source are looked for

    @property
    def checkpoint(self) -> str:
        return f"forms:{self.survey_id}"

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        after = (saved() or {}).get("after_id")
        listing = self.client.iter_answer_pages(self.survey_id, after_id=after)
        async for page in prefetched(listing):
            rows = [
                {
                    "source_id": f"{self.survey_id}/{answer['id']}",
                    "parent": self.survey_id,
                    "updated_at": str(answer.get("created") or ""),
                    "raw": _answer(self.survey_id, page.columns, answer),
                }
                for answer in page.answers
            ]
            yield Page(rows, {"after_id": page.answers[-1]["id"]})
        if self.store is not None:  # every answer is staged: what the survey lost shows
            await find_deleted_answers(self.client, self.store, self.survey_id)


def _answer(survey_id: str, columns: list[dict[str, Any]], answer: dict[str, Any]) -> Row:
    values = answer_values(columns, answer.get("data") or [])
    return {
        "id": answer["id"],
        "created": answer.get("created"),
        "survey_id": survey_id,
        "values": values,
        "files": files_of(columns, values),
    }


@dataclass
class FileDrain:
    """The files an answer carries, into the blob store, staged as `survey_file` rows."""

    client: FormsClient
    store: StagingStore
    parent: str = "survey_answer"
    file_bytes: int = 0
    downloaded: list[str] = field(default_factory=list)

    async def fetch(self, answer: StagedRecord) -> dict[str, list[Row]]:
        rows: list[Row] = []
        for index, item in enumerate(answer.raw.get("files") or []):
            source_id = f"{answer.source_id}/{index}"
            blob, problem = await staged_or_fetched(
                self.store,
                "survey_file",
                source_id,
                item.get("size"),
                partial(self._download, item),
            )
            row = {"source_id": source_id, "raw": dict(item)}
            rows.append({**row, "problem": problem} if problem else {**row, "blob": blob})
        return {"survey_file": rows}

    async def _download(self, item: dict[str, Any]) -> str:
        expected = item.get("size")
        sha256, size = await download_checked(
            self.store.blobs,
            lambda sink: self.client.download_file(str(item["path"]), sink),
            name=str(item.get("name")),
            expected=int(expected) if expected is not None else None,
        )
        self.file_bytes += size
        return sha256
