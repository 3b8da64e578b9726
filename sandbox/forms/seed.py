"""Seed the sandbox forms from ``(seed, size)``: three surveys in the source org, none in the
target.

- **Support requests** (the first id): subject, email, details, urgency (enum low, normal,
  high), screenshot (files): shaped so that answers back-fill naturally into tracker issues.
- **Conference registration**: a question of every type the spec names (string, boolean,
  integer, date, enum single and multiple, matrix, series, suggest, payment, daterange, files)
  on two pages.
- **Quarterly feedback**: score (integer), would_recommend (boolean), comment.

Answers: tiny 30 in all, small 500, medium 5 000, large 30 000; spread over five years, ids
ascending with their time across the org; optional questions sometimes unanswered; every
fourth support request carries a file or two (bytes made when read). Authors and emails are the
org's users. Deterministic for a seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from haul.sandbox.forms.model import (
    Answer,
    FormsOrg,
    FormsWorld,
    Question,
    StoredFile,
    Survey,
    Value,
)
from haul.sandbox.people import User
from haul.sandbox.world import World

# size -> answers of (support requests, conference registration, quarterly feedback)
SIZES = {
    "tiny": (14, 8, 8),
    "small": (300, 100, 100),
    "medium": (3000, 1000, 1000),
    "large": (20000, 5000, 5000),
}
YEAR_MS = 365 * 24 * 3600 * 1000
DAY_MS = 24 * 3600 * 1000
START_MS = 1_546_300_800_000  # 2019-01-01
SPAN_MS = 5 * YEAR_MS
UNANSWERED = 0.15  # how often an optional question is left empty
FILE_EVERY = 4  # every fourth support request carries files

SUPPORT = (
    Question(1, "subject", "Subject", "string", required=True),
    Question(2, "email", "Your email", "string", required=True),
    Question(3, "details", "What happened?", "string", multiline=True),
    Question(4, "urgency", "Urgency", "enum", options=("low", "normal", "high")),
    Question(5, "screenshot", "Screenshot or log", "files"),
)
REGISTRATION = (
    Question(10, "full_name", "Full name", "string", required=True),
    Question(11, "newsletter", "Subscribe to the newsletter?", "boolean"),
    Question(12, "guests", "Guests you bring", "integer"),
    Question(13, "arrival", "Arrival day", "date"),
    Question(14, "ticket", "Ticket", "enum", options=("standard", "student", "vip")),
    Question(15, "topics", "Topics of interest", "enum", multiple=True,
             options=("talks", "workshops", "networking", "demos")),
    Question(16, "session_ratings", "Rate the sessions", "matrix", page=2,
             options=("poor", "fair", "good", "great"), rows=("keynote", "workshops", "catering")),
    Question(17, "schedule", "Sessions you attend, in order", "series", page=2,
             options=("morning", "afternoon", "evening")),
    Question(18, "city", "City", "suggest", page=2),
    Question(19, "fee", "Conference fee", "payment", page=2),
    Question(20, "stay", "Hotel stay", "daterange", page=2),
    Question(21, "badge_photo", "Photo for the badge", "files", page=2),
)  # fmt: skip
FEEDBACK = (
    Question(30, "score", "Score from 1 to 10", "integer", required=True),
    Question(31, "would_recommend", "Would you recommend us?", "boolean"),
    Question(32, "comment", "Comment", "string", multiline=True),
)
SURVEYS = (
    ("Support requests", SUPPORT),
    ("Conference registration", REGISTRATION),
    ("Quarterly feedback", FEEDBACK),
)

SUBJECTS = ("Cannot log in", "Export is slow", "Wrong invoice", "Feature idea", "Page is blank")
TEXTS = ("Please help.", "It broke after the update.", "All good, thanks.", "See the attachment.")
CITIES = ("Moscow", "Berlin", "Lisbon", "Yerevan", "Belgrade")
FILE_NAMES = ("screen.png", "log.txt", "report.pdf", "photo.jpg")


def survey_ids_for(world: World) -> list[str]:
    """The seeded surveys' ids, support requests first (the sandbox's JSON line lists them)."""
    rng = random.Random(f"forms-ids:{world.seed}")
    return [f"{rng.getrandbits(96):024x}" for _ in SURVEYS]


def build_forms(world: World) -> FormsWorld:
    """Every org's forms: the source's seeded, the others empty."""
    forms = FormsWorld({org_id: FormsOrg() for org_id in world.orgs})
    source = world.org_by_role("source")
    users = sorted(source.users.values(), key=lambda user: user.uid)
    rng = random.Random(f"forms:{world.seed}")
    _seed(forms.orgs[source.id], survey_ids_for(world), users, rng, world.size)
    return forms


def _seed(org: FormsOrg, ids: list[str], users: list[User], rng: random.Random, size: str) -> None:
    counts = SIZES.get(size, SIZES["tiny"])
    surveys = [
        Survey(survey_id, name, rng.choice(users), START_MS + index * DAY_MS, list(questions))
        for index, (survey_id, (name, questions)) in enumerate(zip(ids, SURVEYS, strict=True))
    ]
    # every answer's time first, so that ids ascend with time across the whole org
    moments = sorted(
        (survey.created + rng.randrange(SPAN_MS), index)
        for index, (survey, count) in enumerate(zip(surveys, counts, strict=True))
        for _ in range(count)
    )
    for when, index in moments:
        survey = surveys[index]
        answer = Answer(org.new_answer_id(), when, {})
        answer.values = _values(survey, answer, users, org, rng)
        survey.answers.append(answer)
    for survey in surveys:
        survey.modified = survey.answers[-1].created if survey.answers else survey.created
        org.surveys[survey.id] = survey


def _values(
    survey: Survey, answer: Answer, users: list[User], org: FormsOrg, rng: random.Random
) -> dict[str, Value]:
    values: dict[str, Value] = {}
    for question in survey.questions:
        if question.type == "files":
            if answer.id % FILE_EVERY == 0:
                values[question.slug] = _files(survey, org, rng)
            continue
        if not question.required and rng.random() < UNANSWERED:
            continue
        if question.slug == "email":
            values["email"] = rng.choice(users).email
        elif question.slug == "subject":
            values["subject"] = rng.choice(SUBJECTS)
        elif question.slug == "full_name":
            values["full_name"] = rng.choice(users).display
        else:
            values[question.slug] = VALUES[question.type](question, rng)
    return values


def _files(survey: Survey, org: FormsOrg, rng: random.Random) -> list[StoredFile]:
    return [
        org.keep_file(
            StoredFile(
                id=f"{rng.getrandbits(64):016x}",
                survey_id=survey.id,
                name=rng.choice(FILE_NAMES),
                size=rng.randrange(50, 5000),
                seed=rng.getrandbits(32),
            )
        )
        for _ in range(rng.choice((1, 1, 2)))
    ]


def _enum(question: Question, rng: random.Random) -> Value:
    if question.multiple:
        chosen = set(rng.sample(question.options, rng.randrange(1, len(question.options) + 1)))
        return [option for option in question.options if option in chosen]
    return rng.choice(question.options)


def _day(rng: random.Random) -> str:
    return f"{rng.randrange(2019, 2025)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"


def _daterange(question: Question, rng: random.Random) -> Value:
    start = _day(rng)
    return f"{start} - {start[:8]}{min(28, int(start[8:]) + rng.randrange(1, 7)):02d}"


VALUES: dict[str, Callable[[Question, random.Random], Value]] = {
    "string": lambda q, rng: rng.choice(TEXTS),
    "boolean": lambda q, rng: rng.choice(("true", "false")),
    "integer": lambda q, rng: str(rng.randrange(1, 11)),
    "date": lambda q, rng: _day(rng),
    "enum": _enum,
    "matrix": lambda q, rng: [f"{row}: {rng.choice(q.options)}" for row in q.rows],
    "series": lambda q, rng: rng.sample(q.options, rng.randrange(1, len(q.options) + 1)),
    "suggest": lambda q, rng: rng.choice(CITIES),
    "payment": lambda q, rng: f"{rng.randrange(10, 500)}.00 RUB",
    "daterange": _daterange,
}
