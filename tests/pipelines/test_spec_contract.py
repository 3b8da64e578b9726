"""The entity spec contract, for every spec, against the sandbox over real HTTP.

`send` then `find` names the same target record; `find` skips target records other ledger
rows hold, so two identical records are two. The crash tests prove the whole system; these
pin down the one promise each spec makes to the engine.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.run import extract, open_clients
from haul.pipelines.config import load_config
from haul.pipelines.registry import services
from haul.pipelines.registry import services as all_services
from haul.pipelines.services import loadable, optional
from haul.pipelines.specs import EntitySpec, Ref, target_of
from haul.state.ledger import LedgerRow
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import environ, source_queues, write_config

ORGANISATION = (
    "status", "issuetype", "priority", "resolution", "workflow", "queue", "queue_config",
    "field_category", "field", "local_field", "component", "version", "board", "board_column",
    "sprint",
)  # fmt: skip
# a queue's configuration is set on its queue, not made: it is not looked for before a send
FOUND_FIRST = tuple(name for name in ORGANISATION if name != "queue_config")
TRACKER = (
    *ORGANISATION,
    *("issue", "issue_access", "comment", "comment_attachment", "worklog", "attachment"),
    *("checklist", "link"),
    *("remote_link", "autoaction", "trigger", "macro"),
)
WIKI = (
    "wiki_page",
    "wiki_page_access",
    "wiki_attachment",
    "wiki_grid",
    "wiki_grid_rows",
    "wiki_comment",
)
# the planning layer's specs, declared (optional: shown when planned) when the scope names them
PLANNING = (
    "filter", "dashboard", "dashboard_widget",
    "entity_access", "entity_comment", "entity_checklist", "entity_attachment",
    "portfolio", "project", "goal", "entity_link",
)  # fmt: skip
# texts written again once the files they show are in (declared optional: shown when planned)
REFERENCES = ("issue_references", "comment_references")
SCOPE = {"entities": "all", "filters": "all", "dashboards": "all"}
SEED = 5  # the `sandbox` fixture's (conftest.py)
SPECS = TRACKER + REFERENCES + WIKI + PLANNING
# specs with no row to send in a fresh migration: a status change carried by a later run
# (tests/pipelines/test_tracker_sync.py covers it), a file replaced at the source since
# (tests/pipelines/test_tracker_sync_nothing_missed.py)
UNPLANNED = ("issue_status", "attachment_replaced")
# a second copy of one of these is a second record in the target (an issue's key is unique,
# a checklist is one record per issue, a link between the same two issues is one link, a page
# is one per slug, a grid's content is its grid's, an issue links to an external object once,
# an entity's access and checklist are one per entity, an entity's link to one end is one)
DUPLICABLE = (
    "comment",
    "comment_attachment",
    "worklog",
    "attachment",
    "wiki_attachment",
    "wiki_grid",
    "wiki_comment",
    "entity_comment",
    "entity_attachment",
    "filter",
    "dashboard",
    "dashboard_widget",
    "trigger",
    "macro",
)


@dataclass
class Target:
    """A staged, planned store and the target's specs, ready to send single records."""

    store: StagingStore
    specs: dict[str, EntitySpec]

    def pending(self, entity: str) -> LedgerRow:
        return next(self.store.ledger.iter_rows(status="pending", entity=entity))

    async def send(self, row: LedgerRow) -> str:
        """Send one record after its parent chain and its requirements, marking each done."""
        spec = self.specs[row.entity]
        record = self.store.get_record(spec.staged, row.source_id)
        assert record is not None
        parent = (
            await self.ensure(Ref(row.parent_entity, row.parent)) if row.parent_entity else None
        )
        for needed in spec.requires(record):
            await self.ensure(needed)
        if spec.order.find_first and (found := await spec.find(record, parent, lambda c: True)):
            self.store.ledger.done(row.entity, row.source_id, found)
            return found  # the target had it: the engine reuses it the same way
        self.store.ledger.begin(row.entity, row.source_id)
        sent = await spec.send(record, parent)
        target_id = sent if isinstance(sent, str) else sent.target_id
        self.store.ledger.done(row.entity, row.source_id, target_id)
        return target_id

    async def ensure(self, ref: Ref) -> str:
        row = self.store.ledger.get(*ref)
        assert row is not None
        return row.target_id if row.status == "done" else await self.send(row)

    async def find(self, row: LedgerRow, unclaimed: Any) -> str | None:
        spec = self.specs[row.entity]
        record = self.store.get_record(spec.staged, row.source_id)
        parent = self.store.ledger.target_id(row.parent_entity, row.parent) if row.parent else None
        assert record is not None
        return target_of(await spec.find(record, parent, unclaimed))  # a find may answer Sent


def _scope(request: pytest.FixtureRequest) -> dict[str, str]:
    """The planning layer's scope, for its specs and the tests of every spec only."""
    callspec = getattr(request.node, "callspec", None)
    entity = callspec.params.get("entity") if callspec is not None else None
    return SCOPE if entity is None or entity in PLANNING else {}


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The source org extracted once per scope, each in a folder a test copies: a sandbox of
    the same seed serves the same source org, so each test's fresh sandbox matches the store
    (an extract per test cost the module half a minute)."""
    from haul.sandbox import server as sandbox_server

    folders = {}
    with sandbox_server.start_sandbox(size="tiny", seed=SEED) as sandbox:
        info = sandbox.info
        _open_an_issue_to_two_people(info)
        for key, scope in (("", {}), ("planning", SCOPE)):
            folder = tmp_path_factory.mktemp(f"extracted-{key or 'plain'}")
            config = load_config(_config(folder, info, scope))
            asyncio.run(extract(config, all_services(), environ=environ(info)))
            (folder / "haul.toml").unlink()
            folders[key] = folder
        yield folders


def _open_an_issue_to_two_people(info: dict[str, Any]) -> None:
    """The tiny org seeds no issue access list: one issue gets one at the source (an ordinary
    edit), so `issue_access` has a row to send."""
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    reply = httpx.patch(f"{info['tracker']}/issues/DEV-1", headers=headers,
                        json={"access": ["frank", "grace"]})  # fmt: skip
    assert reply.status_code == 200, reply.text


def _config(folder: Path, info: dict[str, Any], scope: dict[str, str]) -> Path:
    queues = source_queues(info)
    return write_config(folder, info, queues=queues, services=("tracker", "wiki"), scope=scope)


@pytest.fixture
async def target(
    sandbox: Any, tmp_path: Path, request: pytest.FixtureRequest, extracted: dict[str, Path]
) -> AsyncIterator[Target]:
    info = sandbox.info
    scope = _scope(request)
    shutil.copytree(extracted["planning" if scope else ""], tmp_path, dirs_exist_ok=True)
    config = load_config(_config(tmp_path, info, scope))
    async with open_clients(config, all_services(), environ(info), config.target) as (clients,):
        with StagingStore.open(config.staging_path) as store:
            specs: dict[str, EntitySpec] = {}
            for service, client in clients:
                parts = await service.target(config, client, store)
                specs.update({spec.name: spec for spec in parts.specs})
            yield Target(store, specs)


def test_every_loadable_entity_has_a_spec() -> None:
    """The contract below covers every entity the services always load, and the planning
    layer's, loaded when the scope names them."""
    assert tuple(name for service in services() for name in loadable(service)) == TRACKER + WIKI
    declared = {name for service in services() for name in optional(service)}
    assert set(PLANNING) | set(REFERENCES) <= declared


async def test_the_contract_covers_every_spec_of_the_target(target: Target) -> None:
    """With every scope on, the target's specs are the contract's, no more."""
    assert sorted(target.specs) == sorted(SPECS + UNPLANNED)


# DESIGN's layer of each spec ("Exactly-once loading"), by the name of its `Phase`
LAYERS = {
    "DICTIONARY_VALUES": ("status", "issuetype", "priority", "resolution"),
    "QUEUES_AND_CATEGORIES": ("workflow", "queue", "field_category"),
    "FIELDS": ("field",),
    "CONFIGURATION": (
        *("queue_config", "local_field", "component", "version", "board", "board_column"),
        "sprint",
    ),
    "TREES": (
        *("issue", "comment", "comment_attachment", "worklog", "attachment", "checklist"),
        *("issue_status", "attachment_replaced", "issue_access"),
        *("issue_references", "comment_references", *WIKI),
    ),
    "LINKS": ("link", "remote_link"),
    "PLANNING": tuple(name for name in PLANNING if name != "entity_link"),
    "PLANNING_LINKS": ("entity_link",),
    "AUTOACTIONS": ("autoaction", "trigger", "macro"),
}


async def test_every_spec_loads_in_its_designs_layer(target: Target) -> None:
    """Each spec's phase is the layer DESIGN puts it in: the organisation objects before the
    trees, the links after them, the planning layer next, the autoactions last."""
    phases = {name: spec.phase.name for name, spec in target.specs.items()}
    assert phases == {name: layer for layer, names in LAYERS.items() for name in names}


@pytest.mark.parametrize("entity", SPECS)
async def test_send_then_find_names_the_same_target_record(target: Target, entity: str) -> None:
    """What `send` wrote, `find` finds again, under the same target id."""
    row = target.pending(entity)
    target_id = await target.send(row)
    assert await target.find(row, lambda candidate: True) == target_id


@pytest.mark.parametrize("entity", FOUND_FIRST)
async def test_an_organisation_object_the_target_has_is_found_before_any_send(
    target: Target, entity: str
) -> None:
    """The organisation objects are looked for first (`find_first`): one the target has is
    found, not made again; one it lacks is made once and found again."""
    assert target.specs[entity].order.find_first
    row = target.pending(entity)
    first = await target.send(row)
    assert await target.find(row, lambda candidate: True) == first


@pytest.mark.parametrize("entity", DUPLICABLE)
async def test_find_skips_target_records_other_rows_hold(target: Target, entity: str) -> None:
    """Sent twice, a record is two target records; `find` returns the one not yet claimed."""
    row = target.pending(entity)
    first = await target.send(row)
    spec = target.specs[entity]
    record = target.store.get_record(spec.staged, row.source_id)
    parent = target.store.ledger.target_id(row.parent_entity, row.parent) if row.parent else None
    assert record is not None
    second = target_of(await spec.send(record, parent))  # a send may answer Sent
    assert second is not None and second != first
    assert await target.find(row, lambda candidate: candidate != first) == second
    assert await target.find(row, lambda candidate: candidate not in (first, second)) is None
