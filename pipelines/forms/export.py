"""Forms' export tables: the surveys, and one table per survey of its answers (the answer's id
and time, then one column per question, named by its slug and typed after it: integers, yes/no
as booleans, dates; several values, matrices and files as JSON)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from haul.pipelines.export.columns import as_json, identifier, timestamp, value
from haul.pipelines.export.tables import (
    BrokenTable,
    Column,
    ColumnType,
    Family,
    Item,
    Table,
    each_table,
)
from haul.state.store import StagingStore

SERVICE = "forms"
ANSWER_TYPES: dict[str, ColumnType] = {"integer": "int", "boolean": "bool", "date": "date"}
LISTS = ("matrix", "series", "files")

SURVEYS = Table("surveys", "survey", (
    identifier("id", "the survey's id (24 hex digits)", "id"),
    value("name", "string", "name", "name"),
    timestamp("created_at", "when the survey was created", "created"),
    value("author_login", "string", "who made it: login", "author", "username"),
    value("answers", "int", "answers it had when staged", "answers"),
    as_json("questions", "its questions (slug, label, type, options)", "questions"),
), doc="surveys in scope", service=SERVICE)  # fmt: skip


def _answer(slug: str) -> Any:
    def read(item: Item) -> Any:
        return (item.raw.get("values") or {}).get(slug)

    return read


def answers_table(survey_id: str, survey: dict[str, Any]) -> Table:
    """One survey's answers: a column per question, by slug."""
    columns: list[Column] = [
        identifier("answer_id", "the answer's id", "id"),
        timestamp("answered_at", "when it was answered", "created"),
    ]
    for question in survey.get("questions") or []:
        slug = str(question.get("slug") or question.get("id"))
        kind: ColumnType = ANSWER_TYPES.get(str(question.get("type")), "string")
        if question.get("multiple") or question.get("type") in LISTS:
            kind = "json"
        columns.append(Column(slug, kind, str(question.get("label") or slug), _answer(slug)))
    name = "".join(c if c.isalnum() else "_" for c in str(survey.get("name") or "survey").lower())
    return Table(
        f"survey_{name.strip('_')}_{survey_id[:8]}",
        "survey_answer",
        tuple(columns),
        doc=f"answers of survey {survey.get('name')!r} ({survey_id})",
        service=SERVICE,
        parent=survey_id,
    )


def survey_tables(store: StagingStore) -> Iterable[Table | BrokenTable]:
    """A table per staged survey."""
    return each_table(
        store.iter_records("survey"),
        lambda record: answers_table(record.source_id, record.raw),
        lambda record: f"survey {record.source_id}",
        "survey_answer",
    )


SURVEY_ANSWERS = Family(
    "survey_<name>_<id>",
    survey_tables,
    doc="one table per survey: a row per answer, a column per question (by slug)",
    service=SERVICE,
)

# the forms' export tables, in the order `haul export --describe` lists them
TABLES = (SURVEYS, SURVEY_ANSWERS)
