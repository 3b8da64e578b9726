"""The tracker's target context is built once per command, over real sockets: `haul verify`
reads the target org and writes nothing to the store but its own results (a checksum of each
table is the same before and after), and `haul check` stages the target's dictionaries once."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.report.run import VERIFY_CHECKPOINT
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import (
    TOKEN_ENV,
    client_for,
    environ,
    source_queues,
    write_config,
)
from tests.helpers.wiki_fixtures import write_wiki_config

STATUSES = "GET /v3/statuses"  # a listing of the org's statuses: one per staging of them


# what a verify must leave as it is: the staged records, the load's own tables and every
# checkpoint but the one holding verify's results
UNTOUCHED = {
    "records": "SELECT entity, source_id, parent, updated_at, content_hash, blob, raw, staged_at"
    " FROM records ORDER BY entity, source_id",
    "ledger": "SELECT * FROM ledger ORDER BY entity, source_id",
    "drained": "SELECT * FROM drained ORDER BY entity, source_id",
    "problems": "SELECT * FROM problems ORDER BY entity, source_id",
    "checkpoints": f"SELECT * FROM checkpoints WHERE name != '{VERIFY_CHECKPOINT}' ORDER BY name",
}


def _checksums(path: Path) -> dict[str, str]:
    """A sha256 of each table of `UNTOUCHED`."""
    with StagingStore.open(path) as store:
        return {
            table: hashlib.sha256(repr(store.db.execute(sql).fetchall()).encode()).hexdigest()
            for table, sql in UNTOUCHED.items()
        }


async def test_verify_leaves_the_staged_records_untouched(sandbox: Any, tmp_path: Path) -> None:
    """After a migration of the tracker and the wiki, a priority added to the target is not
    staged by a verify (it compares against what the load staged of the target org), and the
    verify still finds every record of both services."""
    info = sandbox.info
    config = load_config(write_wiki_config(tmp_path, info))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    async with client_for(info, "target") as target:
        await target.create_dictionary_value(
            "priorities", {"key": "afterTheLoad", "name": "Added after the load", "order": 99}
        )
    before = _checksums(config.staging_path)

    result = await verify(config, all_services(), environ=environ(info))

    assert result.ok
    checked = {verdict.entity for verdict in result.entities if verdict.checked}
    assert {"issue", "comment", "wiki_page", "wiki_attachment"} <= checked
    assert _checksums(config.staging_path) == before


async def test_verify_before_any_load_compares_nothing_and_is_stopped_by_no_preflight(
    sandbox: Any, tmp_path: Path
) -> None:
    """Extracted, never loaded, with a queue the target lacks and `create_missing = false`:
    verify finds nothing loaded to compare and does not stop at the load's preflight (it
    writes nothing, so there is nothing to guard), and the store is as the extract left it."""
    info = sandbox.info
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        queues=source_queues(info),
        queue_mapping={"TEST": "NOPE"},
        mapping_extra={"default_user": "robot", "create_missing": False},
    )
    config = load_config(write_sandbox_config(tmp_path, info, options))
    await extract(config, all_services(), environ=environ(info))
    before = _checksums(config.staging_path)

    result = await verify(config, all_services(), environ=environ(info))

    assert result.ok and sum(verdict.checked for verdict in result.entities) == 0
    assert _checksums(config.staging_path) == before


async def test_check_stages_the_targets_dictionaries_once(sandbox: Any, tmp_path: Path) -> None:
    """With issues staged and entities in scope, `haul check` compares both with one staging
    of the target's dictionaries (one listing of its statuses), and the staged records hold
    the target's statuses after it."""
    info = sandbox.info
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues, scope={"entities": "all"}))
    await extract(config, all_services(), environ=environ(info))
    before = sandbox.stats()["by_route"].get(STATUSES, 0)

    findings = await run_check(config, all_services(), environ(info))

    assert not [finding for finding in findings if finding.level == "error"]
    assert sandbox.stats()["by_route"].get(STATUSES, 0) - before == 1
    with StagingStore.open(config.staging_path) as store:
        assert store.count_records().get("target.status", 0) > 0
