"""The tracker service is the sum of its layers (`pipelines/tracker/layer.py`): what each layer
hands over reaches the service once, nothing is left out, and the plans keep their order."""

from __future__ import annotations

from pathlib import Path

import pytest

import haul.pipelines.tracker as TRACKER_PACKAGE
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, load_config
from haul.pipelines.engine import plan_ledger
from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, each_record
from haul.pipelines.tracker.children.layer import KINDS, children_layer
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad, issue_of
from haul.pipelines.tracker.service import LAYERS, TABLES_IN_ORDER, TRACKER, TrackerService
from haul.pipelines.tracker.target import TrackerTarget
from haul.state.store import StagedRecord, StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def config(tmp_path: Path, deletions: str) -> Config:
    path = tmp_path / "haul.toml"
    path.write_text(
        '[source]\ntracker_url = "http://127.0.0.1:8700/v3"\norg_id = "1"\n'
        'token_env = "SRC_TOKEN"\n[scope]\nqueues = ["TEST"]\n'
        f'[sync]\ndeletions = "{deletions}"\n[staging]\npath = "haul.db"\n',
        encoding="utf-8",
    )
    return load_config(path)


def test_every_layer_hands_its_entities_and_tables_to_the_service_once() -> None:
    """The service declares each layer's entities, and exports each layer's tables, once."""
    declared = [entity.name for layer in LAYERS for entity in layer.entities]
    assert [entity.name for entity in TRACKER.entities] == declared
    assert len(set(declared)) == len(declared)
    handed = {table.name for layer in LAYERS for table in layer.tables}
    exported = TRACKER.tables
    assert {t.name for t in exported.tables} | {f.name for f in exported.families} == handed
    assert {layer.name for layer in TABLES_IN_ORDER} == {
        layer.name for layer in LAYERS if layer.tables
    }


def test_layers_are_named_after_their_folders_and_listed_once() -> None:
    """One layer per folder of pipelines/tracker, in the service's load order."""
    names = [layer.name for layer in LAYERS]
    assert names == [
        "organisation", "issues", "children", "links", "entities", "planning", "backfill",
        "changes", "flow", "checks",
    ]  # fmt: skip
    folders = Path(TRACKER_PACKAGE.__file__).parent
    assert sorted(names) == sorted(
        path.name for path in folders.iterdir() if (path / "layer.py").exists()
    )


@pytest.mark.parametrize("deletions", ["report", "mirror"])
def test_moves_are_followed_before_the_issues_are_planned_and_deletions_found_last(
    tmp_path: Path, deletions: str
) -> None:
    """The engine plans in the order the service hands the plans: the organisation before the
    issues, a moved issue's rows renamed before any issue is planned (its status change
    after its own row), deleted records found after every other plan."""
    plans = list(TRACKER.plans(config(tmp_path, deletions)))
    assert plans.index("status") < plans.index("sprint") < plans.index("issue")
    assert plans.index("issue_move") < plans.index("issue") < plans.index("issue_status")
    assert plans[-1] == ("deletion" if deletions == "mirror" else "deleted_at_source")


# a kind of record hanging under an issue that no layer knows: a "note", written as a comment
PLAN_NOTES = each_record("note", parent=issue_of)


def note_spec(load: TreeLoad) -> EntitySpec:
    async def send(record: StagedRecord, issue_key: str | None) -> str:
        body = {"text": record.raw["text"]}
        reply = await load.client.import_comment(load.parent_key(record, issue_key), body)
        return load.made("note", str(reply["id"]))

    return EntitySpec("note", "note", PLAN_NOTES, send, lambda *args: _nothing())


async def _nothing() -> None:
    return None


# `haul plan` names what a refresh of a note edits: its text
NOTE = Kind(
    Entity("note"), PLAN_NOTES, note_spec, preview=lambda load: KindPreview(refreshed=("text",))
)


async def test_a_new_child_kind_is_one_module_and_one_line_in_its_folder(tmp_path: Path) -> None:
    """Adding a kind under the issue is a `Kind` in children/ and its line in `KINDS`: the
    service then declares it, plans its rows under their issues after the other children,
    loads it with the others, in that order, and `haul plan` previews it as it says; nothing
    outside the folder changes."""
    layers = tuple(
        children_layer((*KINDS, NOTE)) if layer.name == "children" else layer for layer in LAYERS
    )
    service = TrackerService(layers)
    names = [entity.name for entity in service.entities]
    assert names.index("checklist") < names.index("note") < names.index("link")

    cfg = config(tmp_path, "report")
    plans = list(service.plans(cfg))
    assert plans.index("checklist") < plans.index("note") < plans.index("link")
    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records("issue", [{"source_id": "TEST-1", "raw": {"key": "TEST-1"}}])
        note = {"source_id": "TEST-1/n1", "parent": "TEST-1", "raw": {"text": "hello"}}
        store.upsert_records("note", [note])
        plan_ledger(store, {name: plan for name, plan in service.plans(cfg).items()
                            if name in ("issue", "note")})  # fmt: skip
        row = store.ledger.get("note", "TEST-1/n1")
        assert row is not None and (row.parent_entity, row.parent) == ("issue", "TEST-1")

        client = TrackerClient.connect(base_url="http://127.0.0.1:9/v3", token="t", org_id="1")
        target = await TrackerTarget.of(cfg, client, store, read_only=True)
        children = next(layer for layer in layers if layer.name == "children")
        assert children.target is not None
        specs = [spec.name for spec in (await children.target(target)).specs]
        assert specs[-2:] == ["checklist", "note"]
        assert "note" in TreeLoad.of(target).kinds  # `haul plan` decides it as the trees' own
        changes = next(layer for layer in layers if layer.name == "changes")
        assert changes.target is not None
        preview = (await changes.target(target)).preview
        record = store.get_record("note", "TEST-1/n1")
        assert preview is not None and record is not None
        [change] = await preview.changes(row, record)
        assert (change.entity, change.action, change.fields) == ("note", "update", ("text",))
        assert preview.pending(row, record) is None  # a pending note is a create
        await client.aclose()
