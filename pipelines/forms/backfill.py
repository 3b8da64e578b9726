"""Back-fill: a survey's staged answers become tracker issues, or the rows of a wiki grid.

Each `[[backfill]]` rule names a survey and where its answers go. Into the tracker, every
answer is one issue made through `_import` with the answer's time as `createdAt` and a
`unique` derived from the survey and answer ids, so the ledger finds it again after a crash
or a dropped reply and a rerun never makes a second one; the answer's files become the
issue's attachments. Into a wiki grid, the survey's answers are one grid on the named page:
one column per question (typed after it), one row per answer in answer order, kept in step by
the same repeatable sync the wiki's own grids use.

The tracker and the wiki services add these specs to their own when a rule names them; the
rules are checked against the staged surveys before any write (`check_rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.connectors.wiki import WikiClient
from haul.pipelines.config import Backfill, Config, ConfigError
from haul.pipelines.engine import PlanFn
from haul.pipelines.forms.answers import (
    default_description,
    grid_cell,
    grid_column,
    render,
    unknown_slugs,
)
from haul.pipelines.specs import EntitySpec, Planned, RecordFailure, Ref, staged_bytes
from haul.pipelines.wiki.content import SlugMap
from haul.pipelines.wiki.grids import GridSync
from haul.state.store import StagedRecord, StagingStore

DICTIONARY_FIELDS = {"priority": "priority", "type": "issuetype"}
Unclaimed = Callable[[str], bool]


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
        slugs = [str(q.get("slug") or q.get("id")) for q in survey.raw.get("questions") or []]
        templates = {
            "summary": rule.summary,
            "description": rule.description,
            "created_by": rule.created_by,
            **{f"fields.{name}": template for name, template in rule.fields.items()},
        }
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
    if problems:
        raise ConfigError(*problems[0], more=problems[1:])


def _answers(store: StagingStore, survey: str) -> Iterator[StagedRecord]:
    return store.iter_records("survey_answer", parent=survey)


def _answer_order(record: StagedRecord) -> str:
    return f"{int(record.raw['id']):020d}"


def tracker_plans(config: Config) -> dict[str, PlanFn]:
    """One issue per answer of each tracker rule's survey, its files under it."""
    surveys = [rule.survey for _, rule in rules(config, "tracker")]
    if not surveys:
        return {}

    def issues(store: StagingStore) -> Iterator[Planned]:
        for survey in surveys:
            for record in _answers(store, survey):
                yield Planned(record, None, _answer_order(record))

    def files(store: StagingStore) -> Iterator[Planned]:
        wanted = set(surveys)
        for record in store.iter_records("survey_file"):
            if (record.parent or "").partition("/")[0] in wanted:
                yield Planned(record, Ref("backfill_issue", record.parent or ""), record.source_id)

    return {"backfill_issue": issues, "backfill_attachment": files}


def grid_plans(config: Config) -> dict[str, PlanFn]:
    """One grid per grid rule's survey, made, then filled. A grid whose page is a page the
    same run migrates loads under that page, so the page is there first."""
    pages = {rule.survey: str(rule.page) for _, rule in rules(config, "wiki_grid")}
    if not pages:
        return {}
    slugs = SlugMap(tuple(config.scope.wiki_roots), dict(config.mapping.wiki_roots))

    def grids(store: StagingStore) -> Iterator[Planned]:
        migrated = {
            slugs.target(record.source_id): record.source_id
            for record in store.iter_records("wiki_page")
        }
        for survey, page in pages.items():
            record = store.get_record("survey", survey)
            if record is not None:
                source_page = migrated.get(page)
                yield Planned(record, Ref("wiki_page", source_page) if source_page else None)

    def filled(store: StagingStore) -> Iterator[Planned]:
        for survey in pages:
            record = store.get_record("survey", survey)
            if record is not None:
                yield Planned(record, Ref("backfill_grid", survey))

    return {"backfill_grid": grids, "backfill_grid_rows": filled}


def tracker_time(value: Any) -> str:
    """A forms timestamp in the tracker's format (UTC, milliseconds)."""
    moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


@dataclass
class TrackerBackfill:
    """Answers into tracker issues; `target_logins`, `dictionaries` from the target org."""

    client: TrackerClient
    store: StagingStore
    config: Config
    target_logins: set[str]
    dictionaries: dict[str, dict[str, Any]]  # kind -> key -> target id

    def __post_init__(self) -> None:
        self.rules = {rule.survey: rule for _, rule in rules(self.config, "tracker")}
        self.prefix = f"haul:forms:{self.config.source.org}"

    def specs(self) -> list[EntitySpec]:
        plans = tracker_plans(self.config)
        if not plans:
            return []
        return [
            EntitySpec("backfill_issue", "survey_answer", plans["backfill_issue"],
                       self.send_issue, self.find_issue),
            EntitySpec("backfill_attachment", "survey_file", plans["backfill_attachment"],
                       self.send_attachment, self.find_attachment),
        ]  # fmt: skip

    def unique(self, record: StagedRecord) -> str:
        return f"{self.prefix}:{record.source_id}"

    def issue_body(self, record: StagedRecord) -> dict[str, Any]:
        survey_id = str(record.raw["survey_id"])
        rule = self.rules[survey_id]
        survey = self.store.get_record("survey", survey_id)
        questions = survey.raw.get("questions") or [] if survey else []
        values = record.raw.get("values") or {}
        created = tracker_time(record.raw["created"])
        author = self._author(rule, values, survey.raw if survey else {})
        body: dict[str, Any] = {
            "queue": rule.queue,
            "summary": (render(rule.summary or "", values).strip() or f"Answer {record.raw['id']}")[
                :255
            ],
            "description": render(rule.description, values)
            if rule.description
            else default_description(questions, values),
            "createdAt": created,
            "createdBy": author,
            "updatedAt": created,
            "updatedBy": author,
            "unique": self.unique(record),
        }
        for name, template in rule.fields.items():
            rendered = render(template, values)
            value = rule.values.get(name, {}).get(rendered, rendered)
            kind = DICTIONARY_FIELDS.get(name)
            if kind is not None and value:
                if value not in self.dictionaries.get(kind, {}):
                    raise RecordFailure(f"the target org has no {kind} with key {value!r}")
                body[name] = self.dictionaries[kind][value]
            elif value:
                body[name] = value
        return body

    def preflight(self) -> None:
        """Every dictionary value the staged answers give has a key in the target: else a
        config error before any write, naming the values and the target's keys."""
        problems: list[tuple[str, str]] = []
        for index, rule in rules(self.config, "tracker"):
            for name, template in rule.fields.items():
                kind = DICTIONARY_FIELDS.get(name)
                if kind is None:
                    continue
                known = self.dictionaries.get(kind, {})
                given = {
                    render(template, a.raw.get("values") or {})
                    for a in _answers(self.store, rule.survey)
                }
                mapped = {rule.values.get(name, {}).get(value, value) for value in given if value}
                missing = sorted(value for value in mapped if value not in known)
                if missing:
                    problems.append((
                        f"backfill[{index}].values.{name}",
                        f"{', '.join(missing)} is not a {kind} key of the target "
                        f"({', '.join(sorted(known))}): map it, e.g. values = "
                        f'{{ {name} = {{ "{missing[0]}" = "{sorted(known)[0] if known else "..."}" }} }}',
                    ))  # fmt: skip
        if problems:
            raise ConfigError(*problems[0], more=problems[1:])

    def _author(self, rule: Backfill, values: dict[str, Any], survey: dict[str, Any]) -> str:
        """The template's user, else the survey's author, else the default user."""
        candidates = [
            render(rule.created_by, values) if rule.created_by else "",
            survey.get("author"),
        ]
        for candidate in candidates:
            login = str(candidate or "").strip()
            for name in (login, login.partition("@")[0]):
                if name and name in self.target_logins:
                    return name
        if self.config.mapping.default_user:
            return self.config.mapping.default_user
        raise RecordFailure(
            f"no target user for {candidates[0] or survey.get('author')!r} and no "
            "mapping.default_user is set"
        )

    async def send_issue(self, record: StagedRecord, parent: str | None) -> str:
        return str((await self.client.import_issue(self.issue_body(record)))["key"])

    async def find_issue(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> str | None:
        found = await self.client.find_by_unique(self.unique(record))
        return str(found["key"]) if found else None

    async def send_attachment(self, record: StagedRecord, key: str | None) -> str:
        if key is None:
            raise RecordFailure(f"the issue of file {record.source_id} is not loaded")
        source = await staged_bytes(self.store, record, drained="survey_answer")
        answer = self.store.get_record("survey_answer", record.parent or "")
        if answer is None:
            raise RecordFailure(f"the answer of file {record.source_id} is no longer staged")
        issue = self.issue_body(answer)
        reply = await self.client.import_attachment(
            key,
            filename=str(record.raw["name"]),
            created_at=issue["createdAt"],
            created_by=issue["createdBy"],
            source=source,
        )
        return str(reply["id"])

    async def find_attachment(
        self, record: StagedRecord, key: str | None, unclaimed: Unclaimed
    ) -> str | None:
        if key is None:
            return None
        for attachment in await self.client.list_attachments(key):
            same_size = record.raw.get("size") in (None, attachment.get("size"))
            named = attachment.get("name") == record.raw["name"]
            if named and same_size and unclaimed(str(attachment["id"])):
                return str(attachment["id"])
        return None


@dataclass
class GridBackfill:
    """A survey's answers as the rows of a grid on a wiki page of the target."""

    client: WikiClient
    store: StagingStore
    config: Config

    def __post_init__(self) -> None:
        self.rules = {rule.survey: rule for _, rule in rules(self.config, "wiki_grid")}
        self.sync = GridSync(self.client)

    def specs(self) -> list[EntitySpec]:
        plans = grid_plans(self.config)
        if not plans:
            return []
        return [
            EntitySpec("backfill_grid", "survey", plans["backfill_grid"], self.send_grid,
                       self.find_grid),
            EntitySpec("backfill_grid_rows", "survey", plans["backfill_grid_rows"],
                       self.send_rows, self.find_rows, refresh=self.refresh_rows),
        ]  # fmt: skip

    def source_grid(self, survey: StagedRecord) -> dict[str, Any]:
        """The grid the survey's answers make: an answer id and time, then one column per
        question; one row per answer, oldest first."""
        columns = [
            {"slug": "answer_id", "title": "Answer", "type": "number", "required": False},
            {"slug": "answered_at", "title": "Answered at", "type": "string", "required": False},
            *[grid_column(question) for question in survey.raw.get("questions") or []],
        ]
        answers = sorted(_answers(self.store, survey.source_id), key=_answer_order)
        rows = []
        for answer in answers:
            values = answer.raw.get("values") or {}
            cells = [answer.raw["id"], str(answer.raw.get("created") or "")]
            cells += [grid_cell(column, values.get(column["slug"])) for column in columns[2:]]
            rows.append({"row": cells})
        return {"structure": {"columns": columns}, "rows": rows}

    async def _page_id(self, survey: StagedRecord) -> int:
        slug = str(self.rules[survey.source_id].page)
        page = await self.client.find_page(slug, fields=None)
        if page is None:
            raise RecordFailure(f"wiki page {slug} does not exist in the target: create it first")
        return int(page["id"])

    async def send_grid(self, record: StagedRecord, page: str | None) -> str:
        title = str(self.rules[record.source_id].title)
        page_id = int(page) if page else await self._page_id(record)
        grid = await self.client.create_grid(page_id, title)
        return str(grid["id"])

    async def find_grid(
        self, record: StagedRecord, page: str | None, unclaimed: Unclaimed
    ) -> str | None:
        title = str(self.rules[record.source_id].title)
        page_id = int(page) if page else await self._page_id(record)
        async for grid in self.client.iter_grids(page_id):
            if grid.get("title") == title and unclaimed(str(grid["id"])):
                return str(grid["id"])
        return None

    async def send_rows(self, record: StagedRecord, grid: str | None) -> str:
        if grid is None:
            raise RecordFailure(f"the grid of survey {record.source_id} was not made")
        await self.sync.sync(self.source_grid(record), grid)
        return grid

    async def find_rows(
        self, record: StagedRecord, grid: str | None, unclaimed: Unclaimed
    ) -> str | None:
        if grid is None or not await self.sync.matches(self.source_grid(record), grid):
            return None
        return grid

    async def refresh_rows(self, record: StagedRecord, grid: str) -> None:
        await self.sync.sync(self.source_grid(record), grid)
