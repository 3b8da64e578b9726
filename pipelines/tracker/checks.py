"""What `haul check` finds for the tracker beyond the token probe.

For a target org: whether the token may use the admin import endpoints (`_findByUnique` with a
value nobody uses: the sandbox, like the admin import endpoints, refuses it to a non-admin; the
real service's docs do not say, so a refusal is certain and a pass is likely), and, once
something is staged, whether the target has the queues and dictionary keys the mapping needs
and whether every staged user maps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haul.connectors.errors import AuthError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.findings import Finding, nothing_staged
from haul.pipelines.tracker.target import (
    build_transform,
    missing_queues,
    stage_target,
    wanted_queues,
)
from haul.pipelines.tracker.transform import TransformError
from haul.state.store import StagingStore

USER_ENTITIES = ("issue", "comment", "worklog", "attachment", "link", "checklist")
EVERY_KEY = Finding("ok", "the target has every queue and dictionary key the mapping needs")


async def tracker_checks(
    config: Config, client: TrackerClient, store: StagingStore | None, side: str
) -> list[Finding]:
    """The tracker's findings on one side (none beyond the probe for a source org)."""
    if side != "target":
        return []
    found = [await _admin(client, f"tracker target org {config.require_target('check').org}")]
    if store is None or not store.count_records().get("issue"):
        return [*found, nothing_staged("queues, dictionaries and users are")]
    return found + await _mapping(config, client, store)


async def _admin(client: TrackerClient, name: str) -> Finding:
    try:
        await client.find_by_unique("haul-check:no-such-unique")
    except AuthError:
        return Finding("error", f"{name}: the token may not use the admin import endpoints",
                       "use an org administrator's token for the target")  # fmt: skip
    return Finding("ok", f"{name}: the token may use the admin endpoints (read-only probe)")


def _user_refs(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        for item in value:
            yield from _user_refs(item)
    elif isinstance(value, dict):
        if "/users/" in str(value.get("self", "")):
            yield value
        for item in value.values():
            yield from _user_refs(item)


async def _mapping(config: Config, client: TrackerClient, store: StagingStore) -> list[Finding]:
    await stage_target(client, store)
    transform = build_transform(store, config)
    lacking = [
        f"queue {queue}" for queue in missing_queues(store, wanted_queues(transform, config))
    ]
    lacking += [
        f"{kind} keys {', '.join(keys)}"
        for kind, keys in transform.dictionaries.missing(
            r.raw for r in store.iter_records("issue")
        ).items()
    ]
    if config.mapping.create_missing:
        found = [
            Finding("ok", f"the target lacks {what}: the load creates it first") for what in lacking
        ]
    else:
        found = [
            Finding(
                "error",
                f"the target lacks {what} and [mapping] create_missing is false",
                "create it in the target, map it elsewhere, or set create_missing = true",
            )
            for what in lacking
        ]
    if not found:
        found.append(EVERY_KEY)
    return found + _users(transform, store)


def _users(transform: Any, store: StagingStore) -> list[Finding]:
    refused: set[str] = set()
    for entity in USER_ENTITIES:
        for record in store.iter_records(entity):
            for ref in _user_refs(record.raw):
                try:
                    transform.users.login(ref)
                except TransformError:
                    refused.add(str(ref.get("display") or ref.get("id")))
    if refused:
        return [Finding("error", f"users with no target user: {', '.join(sorted(refused))}",
                        "map them in mapping.users_file or set mapping.default_user")]  # fmt: skip
    if transform.users.unmapped:
        return [Finding("warning", "users that fall to the default user: " + ", ".join(sorted(transform.users.unmapped)),
                        "map them in mapping.users_file if they have target accounts")]  # fmt: skip
    return [Finding("ok", "every staged user maps to a target user")]
