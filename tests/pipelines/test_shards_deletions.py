"""A record deleted at the source after a sharded migration, then a second pass of every part
(`[sync] deletions = "mirror"`): the shard that holds it deletes it in the target, and verify
over the manifest, which reads the last part's union of the stores, agrees."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.helpers.haul_fixtures import TOKEN_ENV, client_for, source_queues, write_config
from tests.helpers.shard_runs import haul_manifest, plan, run_ok
from tests.helpers.sync_changes import MIRROR, holding
from tests.helpers.twin_snapshots import MAPPING


def delete_a_comment(info: dict[str, object]) -> str:
    """Delete one comment of an issue at the source; the issue's key."""

    async def delete() -> str:
        async with client_for(info, "source") as source:
            talk = (await holding(source, "TEST", "comments", 2))[0]
            comments = await source.core.get_json(f"/issues/{talk}/comments")
            plain = [c for c in comments if not c.get("attachments")]
            await source.core.request("DELETE", f"/issues/{talk}/comments/{plain[-1]['id']}")
            return talk

    return asyncio.run(delete())


@pytest.mark.slow  # every part run twice; the kill test in test_shards.py is the default run's
def test_a_source_deletion_mirrored_by_a_shard_leaves_verify_clean(tmp_path: Path) -> None:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as sandbox:
        info = sandbox.info
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        config = write_config(
            tmp_path, info, queues=source_queues(info), mapping=MAPPING, extra=MIRROR
        )
        manifest = tmp_path / "manifest.json"
        plan(config, manifest, 2, env)
        parts = ("first", "1", "2", "last")
        for part in parts:
            run_ok(manifest, "run", "--part", part, env=env)
        delete_a_comment(info)
        for part in parts:
            run_ok(manifest, "run", "--part", part, env=env)
        verified = haul_manifest(manifest, "verify", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
