"""Back-fill into the wiki: a survey's answers as the rows of a grid on a target page.

One column per question (typed after it), one row per answer in answer order, kept in step by
the same repeatable sync the wiki's own grids use. A grid whose page the same run migrates
loads under that page, so the page is there first. Forms is read only through its staged
records. `haul verify` compares the grid by its page and title (its fingerprint) and its
columns and rows cell by cell (`pipelines.wiki.verify`, from `survey_grid`). An answer the
source deleted (`pipelines.forms.deletions`) keeps its row, unless `[sync] deletions =
"mirror"`: then the survey's changed answer count refreshes the grid without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from haul.connectors.wiki import WikiClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.forms.answers import grid_cell, grid_column
from haul.pipelines.forms.deletions import DELETED
from haul.pipelines.forms.staged import answer_order, answers_of, rules
from haul.pipelines.specs import (
    EntitySpec,
    Fields,
    Fingerprint,
    Order,
    Phase,
    Planned,
    RecordFailure,
    Ref,
    Unclaimed,
)
from haul.pipelines.wiki.content import SlugMap
from haul.pipelines.wiki.grids import GridSync
from haul.state.store import StagedRecord, StagingStore


def grid_plans(config: Config) -> dict[str, PlanFn]:
    """One grid per grid rule's survey, made, then filled. A grid whose page is a page the
    same run migrates loads under that page, so the page is there first."""
    pages = {rule.survey: str(rule.page) for _, rule in rules(config, "wiki_grid")}
    if not pages:
        return {}
    slugs = SlugMap.of(config)

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

    def deleted(store: StagingStore) -> Iterator[Planned]:
        for survey in pages:
            for record in store.iter_records(DELETED, parent=survey):
                yield Planned(record, sort_key=str(record.raw.get("detected_at") or ""))

    plans: dict[str, PlanFn] = {"backfill_grid": grids, "backfill_grid_rows": filled}
    if config.sync.deletions == "mirror":  # the rows of answers the source deleted go
        plans["backfill_grid_deletion"] = deleted
    return plans


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
        deletions = [
            EntitySpec("backfill_grid_deletion", DELETED, plans["backfill_grid_deletion"],
                       self.send_deletion, self.find_deletion, order=Order(Phase.DELETIONS, find_first=True)),
        ] if "backfill_grid_deletion" in plans else []  # fmt: skip
        return [
            EntitySpec("backfill_grid", "survey", plans["backfill_grid"], self.send_grid,
                       self.find_grid, claims_with=("wiki_grid",), fingerprint=self.grid()),
            EntitySpec("backfill_grid_rows", "survey", plans["backfill_grid_rows"],
                       self.send_rows, self.find_rows, refresh=self.refresh_rows),
            *deletions,
        ]  # fmt: skip

    def source_grid(self, survey: StagedRecord) -> dict[str, Any]:
        return survey_grid(self.store, survey, self.config.sync.deletions == "mirror")

    def grid(self) -> Fingerprint:
        """A back-filled grid: its page (the migrated page's id, else the rule's slug) and
        title."""
        return Fingerprint(
            lambda record: {"title": str(self.rules[record.source_id].title)},
            lambda record, page: page or f"slug:{self.rules[record.source_id].page}",
            self._grids,
            ("title",),
        )

    async def _grids(self, place: str) -> list[Fields]:
        if place.startswith("slug:"):
            page = await self.client.find_page(place.removeprefix("slug:"), fields=None)
            if page is None:
                return []
            place = str(page["id"])
        return [
            {"id": str(g["id"]), "title": g.get("title")}
            async for g in self.client.iter_grids(int(place))
        ]

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

    # -- answers deleted at the source, mirrored: their rows leave the grid ---------------

    def _filled(self, deleted: StagedRecord) -> tuple[StagedRecord, str] | None:
        """The survey of a deleted answer and its filled grid's target id (None: not filled)."""
        survey = self.store.get_record("survey", str(deleted.raw["survey"]))
        row = self.store.ledger.get("backfill_grid_rows", str(deleted.raw["survey"]))
        if survey is None or row is None or row.status != "done" or not row.target_id:
            return None
        return survey, row.target_id

    async def send_deletion(self, record: StagedRecord, parent: str | None) -> str:
        """The grid brought in step with the survey's answers, the deleted ones left out."""
        filled = self._filled(record)
        if filled is None:
            return "no grid to change"
        survey, grid = filled
        await self.sync.sync(self.source_grid(survey), grid)
        return f"left out of grid {grid}"

    async def find_deletion(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> str | None:
        """Done when the grid holds the survey's answers without the deleted ones."""
        filled = self._filled(record)
        if filled is None:
            return "no grid to change"
        survey, grid = filled
        matches = await self.sync.matches(self.source_grid(survey), grid)
        return f"left out of grid {grid}" if matches else None


def survey_grid(
    store: StagingStore, survey: StagedRecord, without_deleted: bool = False
) -> dict[str, Any]:
    """The grid a survey's answers make: an answer id and time, then one column per question;
    one row per answer, oldest first (without the answers the source deleted, mirroring)."""
    columns = [
        {"slug": "answer_id", "title": "Answer", "type": "number", "required": False},
        {"slug": "answered_at", "title": "Answered at", "type": "string", "required": False},
        *[grid_column(question) for question in survey.raw.get("questions") or []],
    ]
    rows = []
    answers = answers_of(store, survey.source_id, without_deleted=without_deleted)
    for answer in sorted(answers, key=answer_order):
        values = answer.raw.get("values") or {}
        cells = [answer.raw["id"], str(answer.raw.get("created") or "")]
        cells += [grid_cell(column, values.get(column["slug"])) for column in columns[2:]]
        rows.append({"row": cells})
    return {"structure": {"columns": columns}, "rows": rows}
