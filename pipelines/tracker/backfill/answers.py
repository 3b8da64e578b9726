"""Back-fill into the tracker: each answer of a rule's survey becomes one issue.

Every answer is one issue made through `_import` with the answer's time as `createdAt` and a
`unique` derived from the survey and answer ids, so the ledger finds it again after a crash or
a dropped reply and a rerun never makes a second one; the answer's files become the issue's
attachments. The rules are checked against the staged surveys before any write
(`check_rules`), and every dictionary value the answers give against the target's keys
(`TrackerBackfill.preflight`). Forms is read only through its staged records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Backfill, Config, ConfigError
from haul.pipelines.engine import PlanFn
from haul.pipelines.forms.answers import default_description, render
from haul.pipelines.forms.staged import answer_order, answers_of, author_login, rules
from haul.pipelines.specs import EntitySpec, Planned, RecordFailure, Ref, Unclaimed, staged_bytes
from haul.pipelines.tracker.backfill.addresses import TargetPeople
from haul.pipelines.tracker.backfill.prints import BackfillPrints
from haul.pipelines.tracker.backfill.queues import plan_queues, queue_spec
from haul.pipelines.tracker.target import default_user
from haul.pipelines.tracker.timefmt import tracker_time
from haul.state.store import StagedRecord, StagingStore

DICTIONARY_FIELDS = {"priority": "priority", "type": "issuetype"}


def tracker_plans(config: Config) -> dict[str, PlanFn]:
    """One issue per answer of each tracker rule's survey, its files under it."""
    surveys = [rule.survey for _, rule in rules(config, "tracker")]
    if not surveys:
        return {}

    def issues(store: StagingStore) -> Iterator[Planned]:
        for survey in surveys:
            for record in answers_of(store, survey):
                yield Planned(record, None, answer_order(record))

    def files(store: StagingStore) -> Iterator[Planned]:
        wanted = set(surveys)
        for record in store.iter_records("survey_file"):
            if (record.parent or "").partition("/")[0] in wanted:
                yield Planned(record, Ref("backfill_issue", record.parent or ""), record.source_id)

    return {"backfill_queue": plan_queues(config), "backfill_issue": issues,
            "backfill_attachment": files}  # fmt: skip


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
        self.default_user = default_user(self.store, self.config)
        self.defaulted: set[str] = set()  # who fell to the default user, for the report
        users = (record.raw for record in self.store.iter_records("target.user"))
        self.people = TargetPeople.of(users, self.config.mapping.email_domains)

    def specs(self) -> list[EntitySpec]:
        plans = tracker_plans(self.config)
        if not plans:
            return []
        prints = self.prints()
        return [
            queue_spec(self.client, self.store, self.config, self.dictionaries),
            EntitySpec("backfill_issue", "survey_answer", plans["backfill_issue"],
                       self.send_issue, self.find_issue, fingerprint=prints.issue()),
            EntitySpec("backfill_attachment", "survey_file", plans["backfill_attachment"],
                       self.send_attachment, self.find_attachment,
                       fingerprint=prints.attachment()),
        ]  # fmt: skip

    def prints(self) -> BackfillPrints:
        """What `haul verify` compares of a back-filled issue and its files."""
        logins = {str(r.raw["uid"]): r.raw["login"] for r in self.store.iter_records("target.user")}
        return BackfillPrints(self.client, self.issue_body, logins, self.dictionaries)

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
                    for a in answers_of(self.store, rule.survey)
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
        """The template's user, else the survey's author, else the default user (the target
        token's own user when `mapping.default_user` is not set); an address matches whole,
        or by its part before @ on the organisation's domains only (`addresses`). A template
        user that matches no one is named in the report, whoever the answer then goes to."""
        written = render(rule.created_by, values).strip() if rule.created_by else ""
        author = author_login(survey)
        if written and (login := self.people.login_for(written)) is not None:
            return login
        if (login := self.people.login_for(author)) is not None:
            if written:
                self.defaulted.add(f"{written} (back-fill: loaded as the survey's author {login})")
            return login
        if self.default_user:
            self.defaulted.add(f"{written or author or 'no author'} (back-fill)")
            return self.default_user
        raise RecordFailure(
            f"no target user for {written or author!r} and no mapping.default_user is set"
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
