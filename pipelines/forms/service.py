"""Forms as a service: a source only (the service has no import endpoint).

Stages the surveys under `[scope] surveys` (ids, or "all") with their questions, their
answers and the answers' files. What `[[backfill]]` rules make of them is loaded by the
tracker and the wiki, which read them through `pipelines.forms.staged`.
"""

from __future__ import annotations

from collections.abc import Mapping

from haul.connectors.forms import FormsClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.pages import Page
from haul.pipelines.export.tables import Registry
from haul.pipelines.findings import Finding
from haul.pipelines.forms.checks import forms_checks
from haul.pipelines.forms.deletions import DELETED
from haul.pipelines.forms.export import TABLES
from haul.pipelines.forms.streams import AnswerStream, FileDrain, SurveyStream
from haul.pipelines.services import Details, Entity, SourceParts, TargetParts, core_options
from haul.pipelines.shards.manifest import PartScope
from haul.pipelines.shards.units import Unit
from haul.pipelines.streams import ExtractStats, Stream
from haul.state.store import StagingStore

ENTITIES = (
    Entity("survey", loads=False),
    Entity("survey_answer", loads=False),
    Entity("survey_file", loads=False, files=True),
    # answers deleted at the source: listed by haul status (a grid back-fill drops them when
    # mirroring); nothing loads into forms
    Entity(DELETED, loads=False),
)


class FormsService:
    """Surveys, their questions, answers and files."""

    name: str = "forms"
    entities: tuple[Entity, ...] = ENTITIES

    @property
    def tables(self) -> Registry:
        return Registry.of(TABLES)

    @property
    def pages(self) -> tuple[Page, ...]:
        return ()

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        return {}

    def configured(self, endpoint: Endpoint) -> bool:
        return bool(getattr(endpoint, "forms_url", None))

    def client(self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> FormsClient:
        # configured() made sure of the URL
        return FormsClient.connect(
            base_url=endpoint.forms_url or "", **core_options(endpoint, environ, tuning)
        )

    async def shard_units(self, config: Config, client: FormsClient) -> list[Unit]:
        """A shard manifest's units: one per survey in scope, weighed by its answers (the
        survey listing's count)."""
        wanted = config.scope.surveys
        units = []
        async for survey in client.iter_surveys():
            survey_id = str(survey["id"])
            if wanted == "all" or survey_id in wanted:
                answers = int(survey.get("answers") or 0)
                units.append(Unit(PartScope(surveys=(survey_id,)), answers))
        return sorted(units, key=lambda unit: unit.scope.surveys)

    async def source(self, config: Config, client: FormsClient, store: StagingStore) -> SourceParts:
        scope = config.scope.surveys
        if scope == "all":
            survey_ids = [str(survey["id"]) async for survey in client.iter_surveys()]
        else:
            survey_ids = list(scope)
        answers = [AnswerStream(client, survey_id, store=store) for survey_id in survey_ids]
        drain = FileDrain(client, store)

        async def details(stats: ExtractStats) -> Details:
            return {
                "surveys_staged": stats.staged["survey"],
                "survey_answers_staged": stats.staged["survey_answer"],
                "survey_file_bytes": drain.file_bytes,
            }

        streams: list[Stream] = [SurveyStream(client, survey_ids), *answers]
        return SourceParts(streams, [drain], details)

    async def target(
        self, config: Config, client: FormsClient, store: StagingStore, *, read_only: bool = False
    ) -> TargetParts:
        return TargetParts([])  # nothing loads into forms: back-fills go to the tracker and wiki

    async def checks(
        self, config: Config, client: FormsClient, store: StagingStore | None, side: str
    ) -> list[Finding]:
        """On the source: the surveys named exist, the back-fill templates name questions."""
        return await forms_checks(config, client) if side == "source" else []

    async def checks_across(
        self, config: Config, source: FormsClient, target: FormsClient, store: StagingStore | None
    ) -> list[Finding]:
        return []  # nothing loads into forms


FORMS = FormsService()
