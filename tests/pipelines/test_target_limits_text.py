"""A comment's length is measured on the text the load writes (its references rewritten), not
on the text staged: a rewrite that lengthens a text can take it over the target's limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from haul.pipelines.config import Limits
from haul.pipelines.tracker.issues.limits import OverLimit, TargetLimits
from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_rewrite_that_lengthens_a_comment_takes_it_over_the_limit(tmp_path: Path) -> None:
    text = "see TEST-1" + "." * 90  # 100 characters staged
    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records("issue", [{"source_id": "TEST-1", "raw": {}, "updated_at": "t1"}])
        row = {"source_id": "7", "raw": {"text": text, "createdAt": "t1"}}
        store.replace_children("TEST-1", "comment", [row])
        record = store.get_record("comment", "7")
        assert record is not None
        limits = Limits(comment_max_chars=100)
        as_staged = TargetLimits(store, limits, lambda raw: raw["text"])
        assert as_staged.reason(record) is None
        rewritten = TargetLimits(store, limits, lambda raw: raw["text"].replace("TEST", "PLATFORM"))
        with pytest.raises(OverLimit, match=r"104 characters, over the target's limit of 100"):
            rewritten.check(record)
