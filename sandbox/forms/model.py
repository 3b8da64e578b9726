"""The sandbox forms service's state and its seeding from ``(seed, size)``.

Per organisation: surveys (24-hex ids) with their questions on pages, their answers (ids
ascending with time) and the files answers carry (by path), and the export operations. The
source org gets surveys covering every question type the spec names, one of them shaped like
a support request (subject, email, details, urgency); the target org gets none.

An answer keeps its values by question slug. On the wire a cell is ``{"value": v}`` where v is
a string or a list of strings (a files value lists file paths, read with ``GET /files?path=``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from haul.sandbox.tracker.model import Org, User, World

# size -> (answers of the support survey, answers of each other survey)
SIZES = {"tiny": (18, 8), "small": (300, 100), "medium": (3000, 1000), "large": (20000, 5000)}
YEAR_MS = 365 * 24 * 3600 * 1000
START_MS = 1_546_300_800_000  # 2019-01-01
SUPPORT = "support"
TYPES = (
    "string",
    "boolean",
    "integer",
    "date",
    "enum",
    "matrix",
    "series",
    "suggest",
    "payment",
    "daterange",
    "files",
)


@dataclass
class Question:
    id: int
    slug: str
    label: str
    type: str
    options: list[str] = field(default_factory=list)
    multiple: bool = False
    required: bool = False

    def json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "slug": self.slug,
            "label": self.label,
            "type": self.type,
            "hidden": False,
            "multiline": self.type == "string" and self.slug == "details",
            "required": self.required,
        }
        if self.options:
            body["options"] = [
                {"id": i + 1, "slug": o, "label": o.title()} for i, o in enumerate(self.options)
            ]
            body["multiple"] = self.multiple
        return body


@dataclass
class Answer:
    id: int
    created: int
    values: dict[str, Any]  # slug -> str | list[str] (absent: not answered)


@dataclass
class Survey:
    id: str
    name: str
    author: User
    created: int
    questions: list[Question]
    answers: list[Answer] = field(default_factory=list)
    published: bool = True


@dataclass
class Operation:
    id: str
    survey_id: str
    format: str
    polls_left: int = 2
    data: bytes = b""

    @property
    def status(self) -> str:
        return "ok" if self.polls_left <= 0 else "running"


@dataclass
class FormsOrg:
    surveys: dict[str, Survey] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # path -> bytes
    operations: dict[str, Operation] = field(default_factory=dict)
    next_answer: int = 1000


@dataclass
class FormsWorld:
    orgs: dict[str, FormsOrg]

    def next_answer_id(self, org: FormsOrg) -> int:
        org.next_answer += 1
        return org.next_answer


def build_forms(world: World) -> FormsWorld:
    """Every org's forms: the source's seeded, the others empty."""
    forms = FormsWorld({org_id: FormsOrg() for org_id in world.orgs})
    source = world.org_by_role("source")
    _seed(forms, forms.orgs[source.id], source, random.Random(f"forms:{world.seed}"), world.size)
    return forms


def survey_ids_for(world: World) -> list[str]:
    """The seeded surveys' ids (for the sandbox's JSON line); the same ids `build_forms` makes."""
    rng = random.Random(f"forms:{world.seed}")
    return [_survey_id(rng) for _ in range(3)]


def _survey_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(96):024x}"


def _seed(forms: FormsWorld, org: FormsOrg, tracker: Org, rng: random.Random, size: str) -> None:
    support_count, other_count = SIZES.get(size, SIZES["tiny"])
    users = sorted(tracker.users.values(), key=lambda user: user.uid)
    ids = [_survey_id(rng) for _ in range(3)]
    support = Survey(ids[0], "Support requests", users[0], START_MS, [
        Question(1, "subject", "Subject", "string", required=True),
        Question(2, "email", "Your email", "string", required=True),
        Question(3, "details", "Details", "string"),
        Question(4, "urgency", "Urgency", "enum", ["low", "normal", "high"]),
        Question(5, "screenshot", "Screenshot", "files"),
    ])  # fmt: skip
    every_type = Survey(ids[1], "Every question type", users[1 % len(users)], START_MS + 1000, [
        Question(10 + i, f"q_{kind}", f"A {kind} question", kind,
                 ["red", "green", "blue"] if kind in ("enum", "matrix", "series") else [],
                 multiple=kind == "enum")
        for i, kind in enumerate(TYPES)
    ])  # fmt: skip
    feedback = Survey(ids[2], "Quarterly feedback", users[2 % len(users)], START_MS + 2000, [
        Question(30, "score", "Score", "integer", required=True),
        Question(31, "would_recommend", "Would you recommend us?", "boolean"),
        Question(32, "comment", "Comment", "string"),
    ])  # fmt: skip
    for survey, count in (
        (support, support_count),
        (every_type, other_count),
        (feedback, other_count),
    ):
        span = 5 * YEAR_MS
        times = sorted(START_MS + rng.randrange(span) for _ in range(count))
        for when in times:
            values = {q.slug: value for q in survey.questions
                      if (value := _value(q, rng, users, org, survey)) is not None}  # fmt: skip
            survey.answers.append(Answer(forms.next_answer_id(org), when, values))
        org.surveys[survey.id] = survey


def _value(question: Question, rng: random.Random, users: list[User], org: FormsOrg,
           survey: Survey) -> Any:  # fmt: skip
    if not question.required and rng.random() < 0.15:
        return None  # not answered
    kind = question.type
    if question.slug == "email":
        return rng.choice(users).email
    if question.slug == "subject":
        return rng.choice(("Cannot log in", "Export is slow", "Wrong invoice", "Feature idea"))
    if kind == "string":
        return rng.choice(("Please help.", "It broke after the update.", "All good, thanks."))
    if kind == "boolean":
        return rng.choice(("true", "false"))
    if kind == "integer":
        return str(rng.randrange(1, 11))
    if kind == "date":
        return f"202{rng.randrange(0, 6)}-0{rng.randrange(1, 10)}-1{rng.randrange(0, 10)}"
    if kind == "enum":
        if question.multiple:
            return sorted(rng.sample(question.options, rng.randrange(1, len(question.options) + 1)))
        return rng.choice(question.options)
    if kind == "matrix":
        return [f"{row}: {rng.choice(('yes', 'no'))}" for row in question.options]
    if kind == "series":
        return [rng.choice(question.options) for _ in range(2)]
    if kind == "suggest":
        return rng.choice(("Moscow", "Berlin", "Lisbon"))
    if kind == "payment":
        return f"{rng.randrange(1, 500)}.00 RUB"
    if kind == "daterange":
        return "2024-01-01 - 2024-01-05"
    if kind == "files":
        if rng.random() < 0.6:
            return None
        name = rng.choice(("screen.png", "log.txt"))
        path = f"/{survey.id}/{rng.getrandbits(64):016x}_{name}"
        org.files[path] = rng.randbytes(rng.randrange(50, 5000))
        return [path]
    return None
