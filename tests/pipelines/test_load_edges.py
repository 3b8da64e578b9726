"""The load at its edges, end to end on the sandbox over sockets: a write whose reply comes too
late is settled by asking the target; a rerun with a lost staging store duplicates nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul_fixtures import environ, source_queues, write_config

from haul.pipelines.config import load_config
from haul.pipelines.runner import run_all
from haul.state.store import StagingStore


async def test_a_write_whose_reply_comes_after_the_deadline_is_settled_by_asking_the_target(
    sandbox: Any, tmp_path: Path
) -> None:
    """An import the target applied but answered after the request deadline is ambiguous:
    the load asks the target (the spec's find), finds it, records it done and goes on; each
    issue is in the target once."""
    info = sandbox.info
    queues = source_queues(info)
    tuning = '\n[tuning]\nrequest_timeout = "1s"\n'
    config = load_config(write_config(tmp_path, info, queues=queues, extra=tuning))
    sandbox.set_faults("slow_after:0.3:1500@/v3/issues/_import")

    summary = await run_all(config, environ=environ(info))

    sandbox.set_faults("")
    assert summary.complete and summary.failed == 0, summary
    assert summary.details["ambiguous_writes"] > 0, summary.details
    by_entity = {row.entity: row for row in summary.counts}
    assert by_entity["issue"].loaded == by_entity["issue"].staged > 0
    with StagingStore.open(config.staging_path) as store:
        assert store.ledger.counts()["issue"] == {"done": by_entity["issue"].staged}
