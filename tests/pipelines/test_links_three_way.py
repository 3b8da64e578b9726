"""Links follow the three-way rule at their grain: a link has no field to edit, so it is only
added or removed. A link a person removed in the target stays removed, and one a person added
there is the target's, on a later run that re-reads the issue, even when deletions are
mirrored; a link the source removed is mirrored only when asked, and only the one haul made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haul.pipelines.commands.run import run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config
from tests.helpers.sync_changes import MIRROR


async def _links(info: dict[str, Any], org: str, key: str) -> list[tuple[str, str]]:
    async with client_for(info, org) as client:
        return sorted(
            (str(link["type"]["id"]), str(link["object"]["key"]))
            for link in await client.list_links(key)
        )


async def _linked_issue(info: dict[str, Any]) -> str:
    """A DEV issue (DEV keeps its keys in the target) with two links or more."""
    async with client_for(info, "source") as source:
        for number in range(1, 40):
            key = f"DEV-{number}"
            if len(await source.list_links(key)) >= 2:
                return key
    raise AssertionError("no DEV issue with two links")


async def test_a_link_removed_or_added_by_a_person_in_the_target_stays_so(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=source_queues(info), extra=MIRROR))
    assert (await run_all(config, all_services(), environ=environ(info))).complete
    key = await _linked_issue(info)
    linked = {other for _, other in await _links(info, "target", key)}
    other = next(f"DEV-{n}" for n in range(1, 20) if f"DEV-{n}" not in linked | {key})
    async with client_for(info, "target") as target:
        removed = (await target.list_links(key))[0]
        await target.delete_record(key, "links", str(removed["id"]))
        await target.core.post_json(
            f"/issues/{key}/links", json={"relationship": "relates", "issue": other}
        )
    kept = await _links(info, "target", key)
    async with client_for(info, "source") as source:
        await source.update_issue(key, {"summary": "Re-read on the next run"})

    second = await run_all(config, all_services(), environ=environ(info))

    assert second.complete and second.failed == 0
    assert await _links(info, "target", key) == kept
    assert other in [end for _, end in kept]
    assert len(kept) == len(await _links(info, "source", key))  # one removed, one added
