"""The one TOML configuration file, validated by a schema (pydantic) into frozen models.

Every problem is reported at once, each by its key path (`source.tracker_url`,
`backfill[1].queue`), in plain words; unknown keys are rejected with the valid ones named: a
typo silently ignored in a migration config is a wrong migration. `haul config-schema`
prints the JSON Schema. Tokens are never in the file: it names the environment variables
that hold them (`token_env`), and `Endpoint.token()` reads them only when a client is built.
Relative paths are relative to the config file's folder; `~` is the user's home.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from haul.connectors.errors import HaulError
from haul.pipelines.config.mapping_files import read_groups_csv, read_users_csv
from haul.pipelines.config.model import Model
from haul.pipelines.config.types import (
    DEFAULT_PROVENANCE,
    Duration,
    Rate,
    Slug,
    SurveyId,
    Template,
    TimeZoneName,
    Weekday,
    WorkHours,
    describe_errors,
    http_url,
)


class ConfigError(HaulError):
    """The configuration cannot be used: each problem names its key path (exit 2)."""

    exit_code = 2

    def __init__(
        self, key: str, problem: str, *, more: list[tuple[str, str]] | None = None
    ) -> None:
        self.problems = [(key, problem), *(more or [])]
        self.key, self.problem = key, problem
        listed = "; ".join(f"{where}: {what}" for where, what in self.problems)
        count = f"{len(self.problems)} problems: " if len(self.problems) > 1 else ""
        super().__init__(f"config error: {count}{listed}")


class Section(BaseModel):
    """A table of the file: unknown keys rejected, values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


class Endpoint(Section):
    """One organisation on the services it uses: where they are and how to authenticate."""

    tracker_url: str | None = Field(None, description="The tracker's API root, ending in /v3.")
    wiki_url: str | None = Field(None, description="The wiki's API root, ending in /v1.")
    forms_url: str | None = Field(None, description="The forms service's API root, ending in /v1.")
    tracker_web_url: str | None = Field(
        None, description="The tracker's web address (links in text: rewritten to the target's)."
    )
    wiki_web_url: str | None = Field(
        None, description="The wiki's web address (links in text: rewritten to the target's)."
    )
    token_env: str = Field(min_length=1, description="The environment variable holding the token.")
    org_id: str | None = Field(None, min_length=1, description="The org id (X-Org-ID).")
    cloud_org_id: str | None = Field(None, min_length=1, description="Or a cloud org id.")
    auth_scheme: Literal["OAuth", "Bearer"] = Field("OAuth", description="Authorization scheme.")
    read_rps: Rate = Field(
        "auto", description='Reads per second: "auto" (adapts) or a number (a cap).'
    )
    write_rps: Rate = Field(
        "auto", description='Writes per second: "auto" (adapts) or a number (a cap).'
    )
    max_rps: float | None = Field(None, gt=0, description='The ceiling of an "auto" budget.')
    budget_share: int = Field(
        1,
        ge=1,
        description="The number of processes that share this side's token with no shared "
        "budget file: each keeps to 1/N of the rates (a number, max_rps, and the limit an "
        '"auto" budget is told or learns). Use [tuning] shared_budget where a file can be '
        "shared: the processes then use what another leaves.",
    )
    section: str = Field("", exclude=True, description="Filled in: source or target.")

    @field_validator("tracker_url")
    @classmethod
    def _tracker(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value, "/v3")

    @field_validator("wiki_url", "forms_url")
    @classmethod
    def _v1(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value, "/v1")

    @field_validator("tracker_web_url", "wiki_web_url")
    @classmethod
    def _web(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value)

    @model_validator(mode="after")
    def _one_org_one_service(self) -> Endpoint:
        if (self.org_id is None) == (self.cloud_org_id is None):
            raise ValueError("org_id: give exactly one of org_id or cloud_org_id")
        if not (self.tracker_url or self.wiki_url or self.forms_url):
            raise ValueError("tracker_url: give the URL of at least one service")
        return self

    def token(self, environ: Mapping[str, str] = os.environ) -> str:
        """The token from the environment; a missing variable is a config error naming it."""
        value = environ.get(self.token_env, "").strip()
        if not value:
            raise ConfigError(
                f"{self.section}.token_env",
                f"environment variable {self.token_env} is not set or empty",
            )
        return value

    @property
    def org(self) -> str:
        return self.org_id or self.cloud_org_id or ""

    @property
    def org_key(self) -> str:
        """The setting that names the org: org_id or cloud_org_id."""
        return "org_id" if self.org_id else "cloud_org_id"

    @property
    def service_urls(self) -> dict[str, str]:
        """Service name -> its API root, for each service this side configures."""
        urls = {"tracker": self.tracker_url, "wiki": self.wiki_url, "forms": self.forms_url}
        return {service: url for service, url in urls.items() if url}


EntityType = Literal["project", "portfolio", "goal"]
ENTITY_TYPES: tuple[EntityType, ...] = ("project", "portfolio", "goal")


class Scope(Section):
    """What to move: queues (optionally narrowed by a query), wiki subtrees, surveys."""

    queues: tuple[str, ...] = Field((), description="Tracker queue keys.")
    query: str | None = Field(None, description="A query that narrows the queues' issues.")
    wiki_roots: tuple[Slug, ...] = Field((), description="Wiki subtrees (slugs) to move.")
    surveys: tuple[SurveyId, ...] | Literal["all"] = Field((), description='Survey ids, or "all".')
    entities: tuple[EntityType, ...] | Literal["all"] = Field(
        (),
        description='The planning layer\'s entities to move: "all", or a list of "project", '
        '"portfolio", "goal". With their fields, parents, comments, checklists, attachments, '
        "links and permissions. Needs a tracker.",
    )
    filters: Literal["all", "none"] = Field(
        "none", description='"all" moves every saved filter, its query rewritten for the target.'
    )
    dashboards: Literal["all", "none"] = Field(
        "none", description='"all" moves every dashboard with its widgets\' queries rewritten.'
    )
    changelog: bool | Literal["auto"] = Field(
        "auto",
        description="Stage each issue's changelog. It has no import endpoint, so only exports "
        'and the staging store keep it. "auto" stages it unless the config is a migration\'s '
        "(a [target] and no [export] section), which saves one request per issue.",
    )

    @field_validator("changelog", mode="before")
    @classmethod
    def _changelog(cls, value: Any) -> Any:
        if isinstance(value, bool) or value == "auto":
            return value
        raise ValueError(f'must be true, false or "auto", not {value!r}')

    @property
    def entity_types(self) -> tuple[EntityType, ...]:
        """The entity types in scope, parents' types first (a portfolio holds projects)."""
        chosen = ENTITY_TYPES if self.entities == "all" else self.entities
        return tuple(kind for kind in ("portfolio", "project", "goal") if kind in chosen)

    @field_validator("queues")
    @classmethod
    def _queue_keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not all(queue.strip() for queue in value):
            raise ValueError("every queue must be a non-empty string")
        return tuple(queue.strip() for queue in value)

    @model_validator(mode="after")
    def _something(self) -> Scope:
        if not (self.queues or self.wiki_roots or self.surveys):
            raise ValueError("queues: give at least one of queues, wiki_roots or surveys")
        return self


class Remapping(Section):
    """How source names become target names."""

    queues: dict[str, str] = Field(
        default_factory=dict, description="Source queue -> target queue."
    )
    users_file: Path | None = Field(None, description="CSV of source login,target login rows.")
    default_user: str | None = Field(None, description="Target login for unmapped users.")
    groups_file: Path | None = Field(
        None, description="CSV of source group,target group rows (wiki page access)."
    )
    email_domains: list[str] = Field(
        default_factory=list,
        description="The organisation's email domains: a back-fill author's address on one of "
        "them may name a target login by its part before @ (any other address only whole).",
    )
    wiki_roots: dict[Slug, Slug] = Field(default_factory=dict, description="Source -> target slug.")
    wiki_provenance: str = Field(DEFAULT_PROVENANCE, description="Provenance line ('' for none).")
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="Source custom field key -> the target key its values go to (default: same).",
    )
    create_missing: bool = Field(
        True,
        description="Create the queues, dictionary values, fields, components, versions, "
        "boards and sprints the issues need and the target lacks (false: haul check lists "
        "them as errors and nothing is created).",
    )

    @field_validator("email_domains")
    @classmethod
    def _bare_domains(cls, domains: list[str]) -> list[str]:
        for domain in domains:
            if not domain.strip() or "@" in domain:
                raise ValueError(f"{domain!r} is not a domain: give it without @, e.g. example.org")
        return [domain.strip().lower() for domain in domains]


# what a back-fill rule must say for each place its answers go
RULE_FIELDS = {"tracker": ("queue", "summary"), "wiki_grid": ("page", "title")}


class Backfill(Section):
    """One rule that turns a survey's answers into tracker issues or rows of a wiki grid."""

    survey: SurveyId = Field(description="The survey whose answers this rule loads.")
    into: Literal["tracker", "wiki_grid"] = Field(
        description="Where each answer goes: a tracker issue, or a row of a wiki grid."
    )
    queue: str | None = Field(
        None, description="into = tracker (required): the target queue (made when it lacks it)."
    )
    summary: Template | None = Field(
        None, description="into = tracker (required): the issue's summary; {slug} is an answer."
    )
    description: Template | None = Field(
        None, description="The issue's description (default: every question and its answer)."
    )
    fields: dict[str, Template] = Field(
        default_factory=dict,
        description="Issue field -> template (priority and type by key; other fields as text).",
    )
    values: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Per field: an answer's value -> the target's key."
    )
    created_by: Template | None = Field(
        None,
        description="The issue's author: a target login, or an address matched to a user "
        "(default: the survey's author, else mapping.default_user).",
    )
    page: Slug | None = Field(
        None, description="into = wiki_grid (required): the target page that holds the grid."
    )
    title: str | None = Field(None, description="into = wiki_grid (required): the grid's title.")

    @model_validator(mode="after")
    def _what_the_target_needs(self) -> Backfill:
        needed = RULE_FIELDS[self.into]
        missing = [name for name in needed if not getattr(self, name)]
        if missing:
            raise ValueError(f"{missing[0]}: required when into = {self.into!r}")
        return self


class Staging(Section):
    """Where the staging database lives (its blobs and log beside it)."""

    path: Path = Field(description="The staging database file.")


class Tuning(Section):
    """How hard to work and how long to wait."""

    concurrency: int = Field(32, gt=0, description="Records (issues, pages) in flight at once.")
    per_scroll: int = Field(
        1000, gt=0, le=1000, description="Issues per scroll page (≤ 1000, the most a page holds)."
    )
    lookback_minutes: float = Field(10.0, ge=0, description="Incremental runs re-read this much.")
    scroll_ttl_ms: int = Field(300_000, gt=0, description="How long the service keeps a scroll.")
    rate_limit_patience: Duration = Field(900.0, description='How long to wait out 429s ("15m").')
    outage_patience: Duration = Field(300.0, description='How long to wait out an outage ("5m").')
    request_timeout: Duration = Field(
        120.0, description="One request's total deadline, body included."
    )
    shared_budget: Path | None = Field(
        None,
        description="A file through which processes that share a token share its rate budgets "
        "(the parts of a sharded run): on one machine or a shared volume, every process naming "
        "the same file keeps, together with the others, to one budget per token, service and "
        'direction; an "auto" budget\'s learned limit is shared too. Processes with tokens of '
        "their own keep budgets of their own in it. Relative to the config file's folder. "
        "haul writes only a file it made: a symbolic link there, or a file of anything "
        "else, is refused (exit 2).",
    )
    shared_budget_wait: Duration = Field(
        30.0,
        gt=0,
        description="How long a process waits for the shared budget file's lock (each holder "
        'keeps it for microseconds) before it stops (exit 1) naming the holder\'s pid ("30s").',
    )
    bulk_reads: bool = Field(
        True,
        description="A first migration lists links only for the issues a query says have some, "
        "and reads worklogs organisation-wide by creation window.",
    )
    link_audit_sample: int | None = Field(
        None,
        ge=0,
        description="Issues per queue the links query did not return whose links are listed "
        "anyway: one link among them turns the query off for that queue. Not set: 5% of the "
        "queue's issues, at least 20, at most 200.",
    )
    link_audit_seed: int = Field(0, description="Seeds the choice of the audited issues.")


class Export(Section):
    """Defaults of `haul export` (its options win), and the calendar of its flow model."""

    out: Path | None = Field(
        None, description="Where the dated folders go (default: exports beside the config)."
    )
    format: Literal["csv", "parquet", "xlsx"] = Field("csv", description="The files' format.")
    keep: int | None = Field(
        None, gt=0, description="Keep the newest N dated folders (default: keep all)."
    )
    healthcheck_url: str | None = Field(
        None, description="GET after a good export (a dead man's switch)."
    )
    restricted: Literal["exclude", "include"] = Field(
        "exclude",
        description="What the export does with content the source restricts (a wiki page or "
        "grid not open to all staff, an issue with an access list, a team-only project, and "
        'what belongs to them): "exclude" (the default) leaves it out and counts it in the '
        'manifest; "include" writes it, marked in the restricted and access_holders columns.',
    )
    # the flow model: business seconds count these days and hours, in this zone, whose
    # days and ISO weeks also bound issue_daily and flow_weekly
    work_days: tuple[Weekday, ...] = Field(
        ("mon", "tue", "wed", "thu", "fri"),
        min_length=1,
        description="The flow model's working days ([model] work_days wins).",
    )
    work_hours: WorkHours = Field(
        "09:00-18:00", description='Its working hours ("24:00" ends the day).'
    )
    timezone: TimeZoneName = Field("UTC", description="The zone of its days and hours.")
    daily_since: date | None = Field(
        None, description="issue_daily's first day ([model] daily_since wins)."
    )

    @field_validator("healthcheck_url")
    @classmethod
    def _ping(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value)


class Sync(Section):
    """How a later run keeps the target in step with changes at the source."""

    deletions: Literal["report", "mirror"] = Field(
        "report",
        description='What a record deleted at the source does to the target: "report" (the '
        'default) lists it in haul status and the report; "mirror" deletes it in the target '
        "too, recorded in the ledger.",
    )
    conflicts: Literal["keep-target", "source-wins"] = Field(
        "keep-target",
        description="What a later run does with a field changed both at the source and in the "
        'target since haul wrote it: "keep-target" (the default) keeps the target\'s value and '
        "reports the conflict with both values (haul status, haul failures, the report; exit "
        '3); "source-wins" writes the source\'s value and records the value it overwrote.',
    )


class Limits(Section):
    """The target's hard limits (the tracker's documented values by default): a record over one
    is named by `haul check` and `haul plan` and failed by the load, before any write."""

    attachment_max_bytes: int = Field(
        128 * 1024 * 1024, gt=0, description="The largest file the target accepts, in bytes."
    )
    comment_max_chars: int = Field(
        512_000, gt=0, description="The longest comment text the target accepts, in characters."
    )
    comments_per_issue: int = Field(
        1000, gt=0, description="The most comments the target keeps on one issue."
    )


class Config(Section):
    """The whole file."""

    source: Endpoint
    target: Endpoint | None = None
    scope: Scope
    mapping: Remapping = Remapping()
    staging: Staging
    tuning: Tuning = Tuning()
    backfill: tuple[Backfill, ...] = ()
    export: Export | None = None
    model: Model = Model()  # the flow model's definitions (config_model)
    sync: Sync = Sync()
    limits: Limits = Limits()
    _folder: Path = PrivateAttr(default_factory=Path.cwd)  # the config file's folder

    @property
    def folder(self) -> Path:
        """The folder of the config file: relative paths and default outputs sit there."""
        return self._folder

    @property
    def staging_path(self) -> Path:
        return self.staging.path

    @property
    def log_path(self) -> Path:
        return self.staging.path.with_suffix(".log")

    @property
    def stages_changelog(self) -> tuple[bool, str]:
        """Whether extracts stage the changelog, and the setting that says so."""
        wanted = self.scope.changelog
        if wanted == "auto":
            wanted = self.target is None or self.export is not None
            return wanted, (
                '[scope] changelog = "auto" skips it in a config with [target] and no '
                "[export]; set it to true to stage it"
            )
        return wanted, f"[scope] changelog = {str(wanted).lower()}"

    def routing_settings(self) -> dict[str, Any]:
        """The settings that decide where records go, by key path: each side's service URLs
        and org, the scope, the mappings of queues and wiki roots, the back-fill rules. A
        shard manifest pins them (`pipelines.shards.manifest`)."""
        settings: dict[str, Any] = {}
        for name, side in (("source", self.source), ("target", self.target)):
            for key in ("tracker_url", "wiki_url", "forms_url", "org_id", "cloud_org_id"):
                settings[f"{name}.{key}"] = None if side is None else getattr(side, key)
        for key, value in self.scope.model_dump(mode="json").items():
            settings[f"scope.{key}"] = value
        settings["mapping.queues"] = dict(self.mapping.queues)
        settings["mapping.wiki_roots"] = dict(self.mapping.wiki_roots)
        # without defaults: a setting a later haul adds leaves a rule's value as it was
        settings["backfill"] = [
            rule.model_dump(mode="json", exclude_defaults=True) for rule in self.backfill
        ]
        return settings

    def require_target(self, command: str) -> Endpoint:
        """The target, for a command that writes to one; a config error when it is absent."""
        if self.target is None:
            raise ConfigError(
                "target", f"missing section [target]: haul {command} writes to a target org"
            )
        return self.target


def load_config(path: str | Path) -> Config:
    """Read and validate the file at `path`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("--config", f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            "--config",
            f"{path} is not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}): "
            "save it as UTF-8",
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--config", f"{path} is not valid TOML: {exc}") from exc
    return parse_config(data, base_dir=path.parent)


def parse_config(data: dict[str, Any], *, base_dir: Path) -> Config:
    """Validate a parsed TOML document; every problem at once, as one ConfigError."""
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = describe_errors(exc, Config)
        raise ConfigError(*problems[0], more=problems[1:]) from None
    _check_sides(config)
    resolved = _resolved(config, base_dir.resolve())
    resolved._folder = base_dir.resolve()
    return resolved


# What each part of the scope needs on each side: (scope key, service, URL key, sides).
SCOPE_NEEDS = (
    ("queues", "tracker", "tracker_url", ("source", "target")),
    ("wiki_roots", "wiki", "wiki_url", ("source", "target")),
    ("surveys", "forms", "forms_url", ("source",)),
)
# Where each kind of back-fill rule writes: into -> (service, URL key of the target).
BACKFILL_NEEDS = {"tracker": ("tracker", "tracker_url"), "wiki_grid": ("wiki", "wiki_url")}


def _check_sides(config: Config) -> None:
    """Every service the scope and the back-fill rules use has its URL on each side."""
    problems: list[tuple[str, str]] = []
    for scope_key, service, url_key, sides in SCOPE_NEEDS:
        if not getattr(config.scope, scope_key):
            continue
        for where in sides:
            side = config.source if where == "source" else config.target
            if side is not None and not getattr(side, url_key):
                problems.append(
                    (f"{where}.{url_key}", f"scope.{scope_key} moves {service} data: give the URL")
                )
    for web_key in ("tracker_web_url", "wiki_web_url"):
        if (
            getattr(config.source, web_key)
            and config.target
            and not getattr(config.target, web_key)
        ):
            problems.append(
                (f"target.{web_key}", f"source.{web_key} is set: give the target's, which links"
                 " in text to the source's web address are rewritten to")
            )  # fmt: skip
    surveys = config.scope.surveys
    for index, rule in enumerate(config.backfill):
        service, url_key = BACKFILL_NEEDS[rule.into]
        if config.target is not None and not getattr(config.target, url_key):
            problems.append(
                (f"target.{url_key}", f"backfill[{index}] writes into the {service}: give the URL")
            )
        if surveys != "all" and rule.survey not in surveys:
            problems.append((f"backfill[{index}].survey", f"{rule.survey} is not in scope.surveys"))
    seen: set[tuple[str, str]] = set()
    for index, rule in enumerate(config.backfill):
        if (rule.survey, rule.into) in seen:
            problems.append(
                (f"backfill[{index}]", f"a second rule for survey {rule.survey} into {rule.into}")
            )
        seen.add((rule.survey, rule.into))
    problems.extend(_shared_two_ways(config))
    unknown_roots = sorted(set(config.mapping.wiki_roots) - set(config.scope.wiki_roots))
    if unknown_roots:
        problems.append(
            (
                "mapping.wiki_roots",
                f"{', '.join(unknown_roots)} is not in scope.wiki_roots "
                f"({', '.join(config.scope.wiki_roots) or 'none'})",
            )
        )
    if problems:
        raise ConfigError(*problems[0], more=problems[1:])


def _shared_two_ways(config: Config) -> list[tuple[str, str]]:
    """A shared budget file and a static split of the same budgets contradict each other."""
    if config.tuning.shared_budget is None:
        return []
    return [
        (
            f"{side.section or name}.budget_share",
            "give [tuning] shared_budget or budget_share, not both: the file shares the "
            "token's rate, budget_share splits it where no file can be shared",
        )
        for name, side in (("source", config.source), ("target", config.target))
        if side is not None and side.budget_share > 1
    ]


def _resolved(config: Config, base: Path) -> Config:
    """Paths starting with `~` in the user's home, relative paths joined to the config's
    folder; each side told its name. The mapping files are read, so a bad row is a config error
    (exit 2) of every command."""
    users, groups = config.mapping.users_file, config.mapping.groups_file
    users = None if users is None else base / users.expanduser()
    groups = None if groups is None else base / groups.expanduser()
    if users is not None and not users.is_file():
        raise ConfigError("mapping.users_file", f"{users} does not exist")
    if groups is not None and not groups.is_file():
        raise ConfigError("mapping.groups_file", f"{groups} does not exist")
    # read once now, so a malformed row or a source mapped twice stops every command that
    # loads the config (`haul check` too) before anything is read or written
    if users is not None:
        read_users_csv(users)
    if groups is not None:
        read_groups_csv(groups)
    export = config.export
    tuning = config.tuning
    if tuning.shared_budget is not None:
        given = base / tuning.shared_budget.expanduser()
        # the folder resolved, the file not: a symbolic link there is refused, not followed
        shared = given.parent.resolve() / given.name
        tuning = tuning.model_copy(update={"shared_budget": shared})
    if export is not None and export.out is not None:
        export = export.model_copy(update={"out": (base / export.out.expanduser()).resolve()})
    model = config.model
    if model.holidays_file is not None:
        holidays_file = base / model.holidays_file.expanduser()
        if not holidays_file.is_file():
            raise ConfigError("model.holidays_file", f"{holidays_file} does not exist")
        model = model.model_copy(update={"holidays_file": holidays_file})
    return config.model_copy(
        update={
            "model": model,
            "source": config.source.model_copy(update={"section": "source"}),
            "target": config.target.model_copy(update={"section": "target"})
            if config.target
            else None,
            "mapping": config.mapping.model_copy(
                update={"users_file": users, "groups_file": groups}
            ),
            "staging": Staging(path=(base / config.staging.path.expanduser()).resolve()),
            "tuning": tuning,
            "export": export,
        }
    )


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of the file, for editors."""
    return Config.model_json_schema()
