"""The sandbox forms service's state: per organisation, surveys with their questions, their
answers (ids ascending with time), the files answers carry, and the export operations.

An answer keeps its values by question slug: a string, a list of strings (several enum options,
matrix rows, series items), or a list of :class:`StoredFile` (a files question). Enum values are
kept as option slugs. How a value looks on the wire depends on the route (see ``answers.py``).
"""

from __future__ import annotations

import bisect
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from haul.sandbox.people import User

ROOT = "/v1"
READY_AFTER_LOOKS = 2  # an export is "wait" at its first look, "ok" from the second on

Value = str | list[str] | list["StoredFile"]


@dataclass(frozen=True, slots=True)
class Question:
    id: int
    slug: str
    label: str
    type: str
    page: int = 1
    options: tuple[str, ...] = ()  # option slugs (enum, series) or a matrix's columns
    rows: tuple[str, ...] = ()  # a matrix's rows
    multiple: bool = False
    required: bool = False
    multiline: bool = False

    def option_label(self, slug: str) -> str:
        return slug.replace("_", " ").capitalize()

    def wire(self) -> dict[str, Any]:
        """The question as ``GET /surveys/{id}/questions`` lists it."""
        body: dict[str, Any] = {
            "id": self.id,
            "slug": self.slug,
            "label": self.label,
            "type": self.type,
            "hidden": False,
            "multiline": self.multiline,
            "required": self.required,
            "comment": "",
            "validators": ["required"] if self.required else [],
        }
        if self.options:
            body["options"] = [
                {"id": index + 1, "slug": slug, "label": self.option_label(slug)}
                for index, slug in enumerate(self.options)
            ]
        if self.type == "enum":
            body["multiple"] = self.multiple
            body["widget"] = "checkbox" if self.multiple else "radio"
        if self.rows:
            body["rows"] = [
                {"id": index + 1, "slug": slug, "label": self.option_label(slug)}
                for index, slug in enumerate(self.rows)
            ]
        return body


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file an answer carries. Seeded bytes are made from ``seed`` when read (cheap to hold
    thousands); a file sent with a filled form keeps its ``data``."""

    id: str  # 16 hex digits
    survey_id: str
    name: str
    size: int
    seed: int = 0
    data: bytes | None = None

    @property
    def path(self) -> str:
        return f"/{self.survey_id}/{self.id}_{self.name}"

    @property
    def url(self) -> str:
        return f"{ROOT}/files/{self.id}"

    def content(self) -> bytes:
        return self.data if self.data is not None else random.Random(self.seed).randbytes(self.size)

    def wire(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "path": self.path, "url": self.url}


@dataclass(slots=True)
class Answer:
    id: int
    created: int  # ms since the epoch
    values: dict[str, Value]  # slug -> value; a question left unanswered is absent


@dataclass(slots=True)
class Survey:
    id: str  # 24 hex digits
    name: str
    author: User
    created: int
    questions: list[Question]
    answers: list[Answer] = field(default_factory=list)  # ascending by id
    deleted: dict[int, Answer] = field(default_factory=dict)  # answer id -> a deleted answer
    published: bool = True
    modified: int = 0

    def question(self, slug: str) -> Question | None:
        return next((q for q in self.questions if q.slug == slug), None)


@dataclass(slots=True)
class Operation:
    """An export: the answers as they were when it started, served once it is ``ok``."""

    id: str
    survey: Survey
    format: str
    questions: list[Question]
    answers: list[Answer]
    looks: int = 0

    @property
    def status(self) -> str:
        return "ok" if self.looks >= READY_AFTER_LOOKS else "wait"

    def look(self) -> str:
        """Count one poll (the operation or its result) and say where it stands."""
        self.looks += 1
        return self.status


@dataclass
class FormsOrg:
    surveys: dict[str, Survey] = field(default_factory=dict)
    files: dict[str, StoredFile] = field(default_factory=dict)  # by file id
    operations: dict[str, Operation] = field(default_factory=dict)
    last_answer_id: int = 1000

    def new_answer_id(self) -> int:
        self.last_answer_id += 1
        return self.last_answer_id

    def keep_file(self, stored: StoredFile) -> StoredFile:
        self.files[stored.id] = stored
        return stored

    def file_at(self, path: str) -> StoredFile | None:
        """The file whose path is ``path`` (``/<survey>/<file id>_<name>``)."""
        file_id = path.rpartition("/")[2].partition("_")[0]
        stored = self.files.get(file_id)
        return stored if stored is not None and stored.path == path else None

    def find_answer(self, answer_id: int) -> tuple[Survey, Answer] | None:
        for survey in self.surveys.values():
            at = bisect.bisect_left(survey.answers, answer_id, key=lambda a: a.id)
            if at < len(survey.answers) and survey.answers[at].id == answer_id:
                return survey, survey.answers[at]
        return None

    def find_answer_by_key(self, key: str) -> tuple[Survey, Answer] | None:
        for survey in self.surveys.values():
            for answer in survey.answers:
                if answer_key(survey.id, answer.id) == key:
                    return survey, answer
        return None


def answer_key(survey_id: str, answer_id: int) -> str:
    """An answer's key: usable without form-edit access, stable for the answer."""
    return hashlib.blake2s(f"{survey_id}/{answer_id}".encode(), digest_size=16).hexdigest()


@dataclass
class FormsWorld:
    orgs: dict[str, FormsOrg]
