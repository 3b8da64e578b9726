"""The load at its edges, end to end on the sandbox over sockets: a write whose reply comes too
late is settled by asking the target; a rerun with a lost staging store duplicates nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from haul.pipelines.commands.run import run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.entity_snapshot import counted, sdk_client
from tests.helpers.haul_fixtures import client_for, environ, lose_store, source_queues, write_config
from tests.helpers.org_snapshot import org_snapshot


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

    summary = await run_all(config, all_services(), environ=environ(info))

    sandbox.set_faults("")
    assert summary.complete and summary.failed == 0, summary
    assert summary.details["ambiguous_writes"] > 0, summary.details
    by_entity = {row.entity: row for row in summary.counts}
    assert by_entity["issue"].loaded == by_entity["issue"].to_load > 0
    with StagingStore.open(config.staging_path) as store:
        assert store.ledger.counts()["issue"] == {"done": by_entity["issue"].to_load}


def sub_records(snapshot: dict[str, Any]) -> Counter[str]:
    """How many comments, worklogs and attachments the target's issues hold."""
    return Counter(
        {kind: sum(len(issue[kind]) for issue in snapshot.values())
         for kind in ("comments", "worklogs", "attachments")}
    )  # fmt: skip


async def test_a_rerun_with_a_lost_store_duplicates_nothing(sandbox: Any, tmp_path: Path) -> None:
    """Migrate, lose the staging store, run the same migration again: the issues are found by
    their `unique`, and every comment, worklog and attachment under them is looked for before
    it is made, and so is every entity (a project, a goal) once the target is known to hold
    this migration: the target holds each once, as after the first run."""
    info = sandbox.info
    queues = source_queues(info)
    path = write_config(tmp_path, info, queues=queues, scope={"entities": "all"})
    config = load_config(path)
    first = await run_all(config, all_services(), environ=environ(info))
    assert first.complete and first.failed == 0
    entities_first = counted(sdk_client(info, "target"))
    mapped = [{"TEST": "NEW"}.get(queue, queue) for queue in queues]
    async with client_for(info, "target") as target:
        after_first = await org_snapshot(target, mapped, rename={"NEW": "TEST"})

    lose_store(config.staging_path)
    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.failed == 0, second
    async with client_for(info, "target") as target:
        after_second = await org_snapshot(target, mapped, rename={"NEW": "TEST"})
    assert sub_records(after_first)["comments"] > 0
    assert sub_records(after_second) == sub_records(after_first)
    assert after_second == after_first
    assert counted(sdk_client(info, "target")) == entities_first
