"""The tracker service is the sum of its layers (`pipelines/tracker/layer.py`): what each layer
hands over reaches the service once, nothing is left out, and the plans keep their order."""

from __future__ import annotations

from pathlib import Path

import pytest

from haul.pipelines.config import Config, load_config
from haul.pipelines.tracker.service import LAYERS, TABLES_IN_ORDER, TRACKER

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
        "organisation", "issues", "entities", "planning", "backfill", "sync", "flow", "checks",
    ]  # fmt: skip


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
