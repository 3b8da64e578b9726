"""A new kind of record, added the way docs/contributing/adding.md says.

A small fake service, `notes`, with one entity kind, `note`, is plugged in beside the real ones
(`registry.added`): its client speaks to an in-memory service over `httpx.MockTransport` (a
source org with notes, a target org that starts empty, told apart by the org header). Every
piece of the kind lives in this module, as it would in the service's package: the stream that
stages notes, the spec that sends one, the fingerprint that both finds it again and verifies it,
the `Entity` declaration the counts read, and the export table. The shared commands (extract,
plan, load with a dropped reply, verify, export, status) then carry it without a change.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from haul.connectors.http import ServiceClient
from haul.pipelines import registry
from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, load, open_store
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, Endpoint, Tuning, load_config
from haul.pipelines.export.columns import identifier, value
from haul.pipelines.export.command import ExportRequest, run_export
from haul.pipelines.export.pages import Page as ExportPage
from haul.pipelines.export.tables import Registry, Table
from haul.pipelines.findings import Finding
from haul.pipelines.registry import services as all_services
from haul.pipelines.report.counts import entity_counts
from haul.pipelines.services import Entity, SourceParts, TargetParts, core_options
from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, each_record
from haul.pipelines.streams import Page
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import environ, write_config

NOTES = [{"id": str(n), "title": f"note {n}", "text": f"text of note {n}"} for n in range(1, 6)]


@dataclass
class NotesBackend:
    """The fake service: notes per org; the first create of `drop_once` is applied and its
    reply lost (the connection is cut after the write), as a flaky network does."""

    orgs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    drop_once: str | None = None
    creates: int = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        notes = self.orgs.setdefault(request.headers.get("X-Org-ID", ""), [])
        if request.url.path.endswith("/myself"):
            return httpx.Response(200, json={"login": "admin"})
        if request.method == "GET":
            return httpx.Response(200, json=notes)
        body = json.loads(request.content)
        note = {"id": str(100 + len(notes)), **body}
        notes.append(note)
        self.creates += 1
        if body["title"] == self.drop_once:
            self.drop_once = None
            raise httpx.ReadError("the connection was cut after the write", request=request)
        return httpx.Response(201, json=note)


class NotesClient(ServiceClient):
    """The fake service's client: one HttpCore, like every real one."""

    service = "notes"

    async def myself(self) -> Any:
        return await self.core.get_json("/myself")

    async def list_notes(self) -> list[dict[str, Any]]:
        return list(await self.core.get_json("/notes"))

    async def create_note(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(await self.core.post_json("/notes", json=body))


@dataclass
class NoteStream:
    """The extract piece: every note of the source, in one page."""

    client: NotesClient
    entity: str = "note"
    checkpoint: str | None = None

    async def pages(self, saved: Callable[[], dict[str, Any] | None]) -> AsyncIterator[Page]:
        notes = await self.client.list_notes()
        yield Page([{"source_id": n["id"], "updated_at": "t", "raw": n} for n in notes])


def note_spec(client: NotesClient) -> EntitySpec:
    """The load piece: plan every staged note, send one, and its fingerprint (identity once)."""

    def expected(record: Any) -> Fields:
        return {"title": record.raw["title"], "text": record.raw["text"]}

    async def listing(container: str) -> list[Fields]:
        return [
            {"id": n["id"], "title": n["title"], "text": n["text"]}
            for n in await client.list_notes()
        ]

    fingerprint = Fingerprint(expected, lambda record, parent: "notes", listing, ("title",))

    async def send(record: Any, parent: str | None) -> str:
        return str((await client.create_note(expected(record)))["id"])

    return EntitySpec(
        "note", "note", each_record("note"), send, fingerprint.find, fingerprint=fingerprint
    )


TABLES = Registry()
TABLES.add_table(
    Table(
        "notes",
        "note",
        (identifier("id", "the note's id", "id"), value("title", "string", "its title", "title")),
        doc="one row per note",
        service="notes",
    )
)


@dataclass
class NotesService:
    """The fake service as haul sees it: the one plug-in point."""

    backend: NotesBackend
    name: str = "notes"
    entities: tuple[Entity, ...] = (Entity("note"),)
    tables: Registry = TABLES
    pages: tuple[ExportPage, ...] = ()  # no page beside its table
    clients: list[NotesClient] = field(default_factory=list)
    section: ClassVar[str] = "notes"

    def plans(self, config: Config) -> Mapping[str, Any]:
        return {"note": each_record("note")}

    def configured(self, endpoint: Endpoint) -> bool:
        return True

    def client(self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> Any:
        options = core_options(endpoint, environ, tuning)
        transport = httpx.MockTransport(self.backend.handle)
        return NotesClient.connect(
            base_url="http://notes.invalid/v1", transport=transport, **options
        )

    async def source(self, config: Config, client: Any, store: StagingStore) -> SourceParts:
        return SourceParts([NoteStream(client)])

    async def target(
        self, config: Config, client: Any, store: StagingStore, *, read_only: bool = False
    ) -> TargetParts:
        return TargetParts([note_spec(client)])

    async def checks(
        self, config: Config, client: Any, store: StagingStore | None, side: str
    ) -> list[Finding]:
        return []

    async def checks_across(
        self, config: Config, source: Any, target: Any, store: StagingStore | None
    ) -> list[Finding]:
        return []


@pytest.fixture
def notes(sandbox: Any, tmp_path: Path) -> Iterator[tuple[Config, NotesBackend]]:
    """A forms-only sandbox config, with the notes service plugged in beside the real ones."""
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=[], services=("forms",)))
    backend = NotesBackend({config.source.org: [dict(n) for n in NOTES]})
    with registry.added(NotesService(backend)):
        yield config, backend


async def test_a_new_entity_kind_moves_through_every_shared_command(
    sandbox: Any, notes: tuple[Config, NotesBackend], tmp_path: Path
) -> None:
    """Extract stages the notes; plan says 5 to create; a load whose write reply is lost finds
    the note it made (no duplicate); verify compares every note and sees a hand edit; export
    writes its table; the counts table has its row."""
    config, backend = notes
    env = environ(sandbox.info)
    await extract(config, all_services(), environ=env)
    plan = await make_plan(config, all_services(), environ=env)
    assert plan.counts["note"]["create"] == 5
    assert sum(plan.counts["note"].values()) == 5

    backend.drop_once = "note 3"
    summary = await load(config, all_services(), environ=env)
    target = backend.orgs[config.require_target("test").org]
    assert sorted(n["title"] for n in target) == [n["title"] for n in NOTES]  # none twice
    assert backend.creates == 5
    assert summary.details["ambiguous_writes"] == 1
    assert {row.entity: row.loaded for row in summary.counts}["note"] == 5

    result = await verify(config, all_services(), environ=env)
    note = next(v for v in result.entities if v.entity == "note")
    assert (note.compared, note.checked, note.found, note.differing) == (True, 5, 5, 0)
    target[0]["text"] = "edited by hand"
    result = await verify(config, all_services(), environ=env, entities=["note"])
    assert [(d.entity, d.field, d.target) for d in result.differences] == [
        ("note", "text", "edited by hand")
    ]

    exported = run_export(
        config, ExportRequest(out=tmp_path / "exports"), services=registry.services()
    )
    assert {file.table: file.rows for file in exported.files}["notes"] == 5
    with open_store(config.staging_path) as store:
        counted = {row.entity: row.in_store for row in entity_counts(store, registry.services())}
    assert counted["note"] == 5
