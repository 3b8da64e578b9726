"""Saved filters and dashboards (with their cycle-time widgets): extracted when `[scope] filters`
or `dashboards` is "all", loaded once every issue is in the target, their queries rewritten.

A filter keeps its name, query and conditions object; a dashboard its name, layout and owner;
a widget its description, query, statuses and mode. Queries are rewritten for the target
(`pipelines.tracker.planning.queries`): what names something the target lacks is kept as it was and
counted under `not_carried`. The API makes the loading user a filter's owner (a filter has no
owner field to send), so an owner other than that user is counted too.

Each is found again (and verified) by what tells it apart: a filter by name and query among the
org's filters, a dashboard by name among the org's, a widget by description and query on its
dashboard. The spec shows no dashboard listing: a source that answers 404 to it is a problem of
the listing (`haul failures`), and no dashboard is carried.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Scope
from haul.pipelines.engine import PlanFn
from haul.pipelines.specs import (
    EntitySpec,
    Fields,
    Fingerprint,
    Order,
    Phase,
    Planned,
    RecordFailure,
    Ref,
)
from haul.pipelines.streams import ListStream, Page
from haul.pipelines.tracker.planning.queries import QueryRewriter, Rewritten
from haul.pipelines.tracker.transform import Transform, ref_id
from haul.state.store import StagedRecord, StagingStore

ORG = "org"
PHASE = Phase.PLANNING  # after the links: every issue a query names has its target key
WIDGET_EXTRAS = ("start", "end", "autoUpdatable", "excludedStatuses", "includedStatuses")
NO_LISTING = "the tracker source lists no dashboards (GET /dashboards answered 404)"


@dataclass
class DashboardStream:
    """The source's dashboards, or a problem of the listing when it has none to list."""

    client: TrackerClient
    entity: str = "dashboard"
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        listing = (self.entity, f"{self.entity} listing")
        try:
            found = await self.client.list_dashboards()
        except NotFoundError:
            yield Page([], None, [(*listing, f"{NO_LISTING}: no dashboard is carried")])
            return
        rows = [{"source_id": str(item["id"]), "raw": item} for item in found]
        yield Page(rows, None, [], [listing])


@dataclass
class WidgetStream:
    """Every widget of every dashboard, each under its dashboard."""

    client: TrackerClient
    entity: str = "dashboard_widget"
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        try:
            dashboards = await self.client.list_dashboards()
        except NotFoundError:
            return  # DashboardStream names the problem
        rows = [
            {
                "source_id": f"{board['id']}/{widget['id']}",
                "parent": str(board["id"]),
                "raw": widget,
            }
            for board in dashboards
            for widget in await self.client.list_dashboard_widgets(board["id"])
        ]
        yield Page(rows)


def saved_streams(client: TrackerClient, scope: Scope) -> list[Any]:
    """The extract's streams of saved filters and dashboards, as `[scope]` asks for them."""
    streams: list[Any] = []
    if scope.filters == "all":
        streams.append(ListStream("filter", client.list_filters, source="the tracker"))
    if scope.dashboards == "all":
        streams += [DashboardStream(client), WidgetStream(client)]
    return streams


def _every(entity: str, parent: Callable[[StagedRecord], Ref | None]) -> PlanFn:
    """Every staged record of `entity`, in the order the source made them (by id)."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        for record in store.iter_records(entity):
            order = record.source_id.rpartition("/")[2].zfill(24)
            yield Planned(record, parent(record), order)

    return plan


PLAN_FILTERS = _every("filter", lambda record: None)
PLAN_DASHBOARDS = _every("dashboard", lambda record: None)
PLAN_WIDGETS = _every("dashboard_widget", lambda record: Ref("dashboard", record.parent or ""))


def saved_plans(scope: Scope) -> dict[str, PlanFn]:
    """Ledger entity -> plan, for what `[scope]` moves."""
    plans: dict[str, PlanFn] = {}
    if scope.filters == "all":
        plans["filter"] = PLAN_FILTERS
    if scope.dashboards == "all":
        plans |= {"dashboard": PLAN_DASHBOARDS, "dashboard_widget": PLAN_WIDGETS}
    return plans


def status_keys(value: Any) -> list[str]:
    """A widget's statuses (references or bare keys) as their keys."""
    items = value if isinstance(value, list) else [] if value is None else [value]
    return [str(item.get("key") if isinstance(item, dict) else item) for item in items]


@dataclass
class SavedLoad:
    """The specs of saved filters and dashboards for one target org."""

    client: TrackerClient
    transform: Transform
    rewriter: QueryRewriter
    uids: dict[str, str]  # target login -> target uid
    loading_user: str | None  # the target token's login: a filter's owner in the target
    # "what: why" -> how many, for `not_carried`
    kept: Counter[str] = field(default_factory=Counter)

    def specs(self) -> list[EntitySpec]:
        """The saved filters', dashboards' and widgets' specs (the plans say which load)."""
        filters, dashboards, widgets = (
            self._filter_print(),
            self._board_print(),
            self._widget_print(),
        )
        return [
            EntitySpec("filter", "filter", PLAN_FILTERS, self.send_filter, filters.find,
                       refresh=self.refresh_filter, order=Order(PHASE), fingerprint=filters),
            EntitySpec("dashboard", "dashboard", PLAN_DASHBOARDS, self.send_dashboard,
                       dashboards.find, refresh=_not_editable("dashboard"), order=Order(PHASE),
                       fingerprint=dashboards),
            EntitySpec("dashboard_widget", "dashboard_widget", PLAN_WIDGETS, self.send_widget,
                       widgets.find, refresh=_not_editable("dashboard widget"), order=Order(PHASE),
                       fingerprint=widgets),
        ]  # fmt: skip

    def _count(self, entity: str, rewritten: Rewritten) -> Any:
        for name in rewritten.kept:
            self.kept[f"{entity} query: {name} has no target counterpart (kept as written)"] += 1
        return rewritten.value

    # -- filters -------------------------------------------------------------------------

    def _filter_fields(self, record: StagedRecord) -> Fields:
        raw = record.raw
        return {
            "name": raw.get("name"),
            "query": self.rewriter.query(raw.get("query")).value,
            "filter": self.rewriter.conditions(raw.get("filter")).value,
        }

    async def send_filter(self, record: StagedRecord, parent: str | None) -> str:
        raw = record.raw
        body: dict[str, Any] = {"name": raw.get("name")}
        if raw.get("query"):
            body["query"] = self._count("filter", self.rewriter.query(raw["query"]))
        if raw.get("filter"):
            body["filter"] = self._count("filter", self.rewriter.conditions(raw["filter"]))
        if self.transform.users.login(raw.get("owner")) != self.loading_user:
            self.kept["filter owner: the API makes the loading user the owner"] += 1
        return str((await self.client.create_filter(body))["id"])

    async def refresh_filter(self, record: StagedRecord, target_id: str) -> None:
        """A filter changed at the source: its name, query and conditions, each sent (a cleared
        one as null, so the target clears it too)."""
        raw = record.raw
        body: dict[str, Any] = {"name": raw.get("name"), "query": None, "filter": None}
        if raw.get("query"):
            body["query"] = self._count("filter", self.rewriter.query(raw["query"]))
        if raw.get("filter"):
            body["filter"] = self._count("filter", self.rewriter.conditions(raw["filter"]))
        await self.client.update_filter(target_id, body)

    def _filter_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            return [
                {"id": str(f["id"]), "name": f.get("name"), "query": f.get("query"),
                 "filter": f.get("filter")}
                for f in await self.client.list_filters()
            ]  # fmt: skip

        return Fingerprint(self._filter_fields, _org, listing, ("name", "query"))

    # -- dashboards and their widgets ------------------------------------------------------

    def _owner(self, record: StagedRecord) -> str | None:
        return self.transform.users.login(record.raw.get("owner"))

    def _board_fields(self, record: StagedRecord) -> Fields:
        owner = self._owner(record)
        return {
            "name": record.raw.get("name"),
            "layout": record.raw.get("layout"),
            "owner": None if owner is None else self.uids.get(owner, owner),
        }

    async def send_dashboard(self, record: StagedRecord, parent: str | None) -> str:
        body = {"name": record.raw.get("name"), "owner": self._owner(record)}
        if record.raw.get("layout"):
            body["layout"] = record.raw["layout"]
        return str((await self.client.create_dashboard(body))["id"])

    def _board_print(self) -> Fingerprint:
        async def listing(container: str) -> list[Fields]:
            return [
                {"id": str(d["id"]), "name": d.get("name"), "layout": d.get("layout"),
                 "owner": ref_id(d.get("owner"))}
                for d in await self.client.list_dashboards()
            ]  # fmt: skip

        return Fingerprint(self._board_fields, _org, listing, ("name",))

    def _widget_fields(self, record: StagedRecord) -> Fields:
        raw = record.raw
        return {
            "description": raw.get("description"),
            "query": self.rewriter.query(raw.get("query")).value,
            "fromStatuses": status_keys(raw.get("fromStatuses")),
            "toStatuses": status_keys(raw.get("toStatuses")),
            "mode": raw.get("mode"),
        }

    async def send_widget(self, record: StagedRecord, dashboard: str | None) -> str:
        if dashboard is None:
            raise RecordFailure(f"the dashboard of widget {record.source_id} is not loaded")
        raw = record.raw
        if raw.get("type", "cycleTime") != "cycleTime":
            raise RecordFailure(
                f"widget {record.source_id} is a {raw['type']} widget: the API creates "
                "cycle-time widgets only"
            )
        body: dict[str, Any] = {
            "description": raw.get("description"),
            "fromStatuses": [{"key": key} for key in status_keys(raw.get("fromStatuses"))],
            "toStatuses": [{"key": key} for key in status_keys(raw.get("toStatuses"))],
        }
        if raw.get("query"):
            body["query"] = self._count("widget", self.rewriter.query(raw["query"]))
        for name in ("mode", *WIDGET_EXTRAS):
            if raw.get(name) is not None:
                body[name] = raw[name]
        reply = await self.client.create_cycle_time_widget(dashboard, body)
        return str(reply["id"])

    def _widget_print(self) -> Fingerprint:
        async def listing(dashboard: str) -> list[Fields]:
            return [
                {"id": str(w["id"]), "description": w.get("description"), "query": w.get("query"),
                 "fromStatuses": status_keys(w.get("fromStatuses")),
                 "toStatuses": status_keys(w.get("toStatuses")), "mode": w.get("mode")}
                for w in await self.client.list_dashboard_widgets(dashboard)
            ]  # fmt: skip

        return Fingerprint(
            self._widget_fields, lambda record, parent: parent, listing, ("description", "query")
        )


def _org(record: StagedRecord, parent: str | None) -> str:
    return ORG


def _not_editable(what: str) -> Callable[[StagedRecord, str], Awaitable[None]]:
    """The refresh of what the API cannot edit: a change at the source fails it, named (a
    problem `haul failures` lists), instead of passing as carried."""

    async def refresh(record: StagedRecord, target_id: str) -> None:
        raise RecordFailure(
            f"the {what} {record.source_id} changed at the source, and the API edits no {what}:"
            f" change {target_id} in the target by hand"
        )

    return refresh
