"""Forms' staged records as the back-fills of other services read them.

A back-fill belongs to the service it writes into (`pipelines.tracker.backfill`,
`pipelines.wiki.backfill`) and reads forms only through what the forms extract staged: the
rules of one kind, their check against the staged surveys, and a survey's answers in answer
order. Nothing here talks to a service.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haul.pipelines.config import Backfill, Config, ConfigError
from haul.pipelines.forms.answers import unknown_slugs
from haul.pipelines.forms.deletions import deleted_answers
from haul.state.store import StagedRecord, StagingStore


def rules(config: Config, into: str) -> list[tuple[int, Backfill]]:
    """The rules of one kind, with their index in the file (for error key paths)."""
    return [(index, rule) for index, rule in enumerate(config.backfill) if rule.into == into]


def check_rules(config: Config, store: StagingStore, into: str) -> None:
    """Every rule's survey is staged and every template names only its question slugs."""
    problems: list[tuple[str, str]] = []
    for index, rule in rules(config, into):
        survey = store.get_record("survey", rule.survey)
        if survey is None:
            problems.append(
                (
                    f"backfill[{index}].survey",
                    f"{rule.survey} is not staged: add it to scope.surveys",
                )
            )
            continue
        problems += template_problems(index, rule, question_slugs(survey.raw.get("questions")))
    if problems:
        raise ConfigError(*problems[0], more=problems[1:])


def question_slugs(questions: Any) -> list[str]:
    """The slugs a template may name: each question's slug, else its id."""
    return [str(q.get("slug") or q.get("id")) for q in questions or []]


def template_problems(index: int, rule: Backfill, slugs: list[str]) -> list[tuple[str, str]]:
    """(key path, problem) for each template of a rule naming a question the survey lacks."""
    templates = {
        "summary": rule.summary,
        "description": rule.description,
        "created_by": rule.created_by,
        **{f"fields.{name}": template for name, template in rule.fields.items()},
    }
    problems = []
    for key, template in templates.items():
        unknown = unknown_slugs([template], slugs)
        if unknown:
            problems.append(
                (
                    f"backfill[{index}].{key}",
                    f"{', '.join('{' + u + '}' for u in unknown)} is not a question of survey "
                    f"{rule.survey}; its slugs: {', '.join(slugs)}",
                )
            )
    return problems


def author_login(survey: dict[str, Any]) -> str:
    """The login of a survey's author (the service sends a user object; an older staging
    store may hold a plain login)."""
    author = survey.get("author")
    if isinstance(author, dict):
        author = author.get("username") or author.get("login")
    return str(author or "").strip()


def answers_of(
    store: StagingStore, survey: str, *, without_deleted: bool = False
) -> Iterator[StagedRecord]:
    """The staged answers of one survey (without those the source deleted, if asked)."""
    gone = deleted_answers(store, survey) if without_deleted else set()
    return (
        r for r in store.iter_records("survey_answer", parent=survey) if r.source_id not in gone
    )


def answer_order(record: StagedRecord) -> str:
    """An answer's place among its survey's: answer ids grow with time."""
    return f"{int(record.raw['id']):020d}"
