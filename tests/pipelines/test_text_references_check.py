"""`haul check` names, before the load, each staged text that shows files the migration does not
carry: their references would keep pointing at the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from haul.pipelines.tracker.checks.check import reference_findings
from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_text_showing_a_file_no_staged_record_holds_is_named(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "haul.db") as store:
        description = "![a](/ajax/v2/attachments/11?inline=true) [b](/OPS-9/attachments/99)"
        store.upsert_records(
            "issue",
            [{"source_id": "TEST-1", "raw": {"description": description}, "updated_at": "t1"}],
        )
        store.replace_children("TEST-1", "attachment", [{"source_id": "TEST-1/11", "raw": {}}])
        store.replace_children("TEST-1", "comment", [{"source_id": "7", "raw": {"text": "ok"}}])

        (finding,) = reference_findings(store)

    assert finding.level == "warning"
    assert "issue TEST-1 shows files that are not migrated (99)" in finding.what


def test_every_file_shown_migrated_is_one_ok(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "haul.db") as store:
        raw = {"description": "[b](/TEST-1/attachments/11)"}
        store.upsert_records("issue", [{"source_id": "TEST-1", "raw": raw, "updated_at": "t1"}])
        store.replace_children("TEST-1", "attachment", [{"source_id": "TEST-1/11", "raw": {}}])
        assert [f.level for f in reference_findings(store)] == ["ok"]
