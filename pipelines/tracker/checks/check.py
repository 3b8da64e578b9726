"""What `haul check` finds for the tracker beyond the token probe.

For a target org: whether the token may use the admin import endpoints (`_findByUnique` with a
value nobody uses: the sandbox, like the admin import endpoints, refuses it to a non-admin; the
real service's docs do not say, so a refusal is certain and a pass is likely), and, once
something is staged, whether the target has the queues and dictionary keys the mapping needs,
whether every staged user maps and whether it has the applications remote links point into, and
whether the staged texts link to the source's web hosts that no `*_web_url` lets haul rewrite. For a source org: whether every queue of `scope.queues`
exists (the extract stops at one it lacks with a config error). On the target,
before anything is staged too: whether every target login of `mapping.users_file` and the
`default_user` exist there, and who the default user is (the target token's own user when
`default_user` is not set). Across the two orgs, where a migrated queue's permissions for
the mapped users and groups differ in the target, is the organisation layer's
(`pipelines.tracker.organisation.queue_permissions`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haul.connectors.errors import AuthError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.config.mapping_files import read_users_csv
from haul.pipelines.findings import Finding, nothing_staged
from haul.pipelines.forms.staged import rules
from haul.pipelines.sync.references import SourcePaths, unset_web_hosts
from haul.pipelines.tracker.issue_access import access_findings
from haul.pipelines.tracker.target import (
    TrackerTarget,
    issues_staged,
    missing_queues,
    wanted_queues,
)
from haul.pipelines.tracker.transform import TransformError, user_refs
from haul.state.store import StagingStore

USER_ENTITIES = ("issue", "comment", "worklog", "attachment", "link", "checklist")
EVERY_KEY = Finding("ok", "the target has every queue and dictionary key the mapping needs")


async def tracker_checks(
    config: Config,
    client: TrackerClient,
    store: StagingStore | None,
    side: str,
    target: TrackerTarget | None,
) -> list[Finding]:
    """The tracker's findings on one side: the source's queues; the target's admin rights,
    users and, once something is staged, what the mapping needs (against `target`, from
    `organisation.streams.checked_target`)."""
    if side != "target":
        return await _source_queues(config, client)
    found = [await _admin(client, f"tracker target org {config.require_target('check').org}")]
    found += await _target_users(config, client)
    if store is None or target is None or not issues_staged(config, store):
        return [*found, nothing_staged("queues, dictionaries and users are")]
    found += web_host_findings(config, store)
    return found + _mapping(config, target)


def web_host_findings(config: Config, store: StagingStore) -> list[Finding]:
    """A warning per web address not set on both sides while staged issue descriptions and
    comments link to the source on it (`references.unset_web_hosts`)."""
    paths = SourcePaths(
        queues=config.scope.queues,
        keys=set(store.source_ids("issue")),
        files={source_id.rpartition("/")[2] for source_id in store.source_ids("attachment")},
        roots=config.scope.wiki_roots,
    )

    def texts() -> Iterator[str | None]:
        for entity, name in (("issue", "description"), ("comment", "text")):
            for record in store.iter_records(entity):
                yield record.raw.get(name)

    return unset_web_hosts(config, paths, texts, "tracker")


async def source_queue_problems(config: Config, client: TrackerClient) -> list[tuple[str, str]]:
    """(key path, problem) for each queue of `scope.queues` the source org does not have."""
    if not config.scope.queues:
        return []
    have = sorted([str(queue["key"]) async for queue in client.iter_queues()])
    return [
        ("scope.queues", f"{queue} is not a queue of the tracker source org {config.source.org}"
                         f" (its queues: {', '.join(have) or 'none'})")
        for queue in config.scope.queues
        if queue not in have
    ]  # fmt: skip


async def _source_queues(config: Config, client: TrackerClient) -> list[Finding]:
    problems = await source_queue_problems(config, client)
    if not config.scope.queues:
        return []
    if not problems:
        return [Finding("ok", "the tracker source has every queue of scope.queues")]
    return [Finding("error", what, "correct scope.queues") for _, what in problems]


async def _target_users(config: Config, client: TrackerClient) -> list[Finding]:
    """The users-file rows and default_user against the target's logins, and who the default
    user is (the back-fills whose survey's author falls to it: the back-fill layer's check)."""
    users = [user async for user in client.iter_users()]
    have = {str(user.get("login")) for user in users}
    found = []
    explicit = read_users_csv(config.mapping.users_file) if config.mapping.users_file else {}
    for source, target in sorted(explicit.items()):
        if target not in have:
            found.append(Finding(
                "error",
                f"mapping.users_file maps {source} to {target}, and the target has no user {target}",
                "correct the row, or create the user in the target",
            ))  # fmt: skip
    default = config.mapping.default_user
    if default is not None and default not in have:
        found.append(Finding("error", f"mapping.default_user {default} is not a user of the target",
                             "name a login the target has, or leave default_user out"))  # fmt: skip
    elif default is None:
        default = str((await client.myself()).get("login"))
        found.append(Finding("ok", f"the default user is {default}, the target token's own user: "
                                   "records whose user has no target user are loaded as it"))  # fmt: skip
    return found


async def _admin(client: TrackerClient, name: str) -> Finding:
    try:
        await client.find_by_unique("haul-check:no-such-unique")
    except AuthError:
        return Finding("error", f"{name}: the token may not use the admin import endpoints",
                       "use an org administrator's token for the target")  # fmt: skip
    return Finding("ok", f"{name}: the token may use the admin endpoints (read-only probe)")


def _mapping(config: Config, target: TrackerTarget) -> list[Finding]:
    store, transform = target.store, target.transform
    lacking = [
        f"queue {queue}{_backfills_of(config, queue)}"
        for queue in missing_queues(store, wanted_queues(transform, config))
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
    return found + _users(transform, store) + access_findings(store, transform.access)


def _backfills_of(config: Config, queue: str) -> str:
    """The back-fill rules that write into `queue`, named for the finding ("" for none)."""
    named = [
        f"backfill[{index}]" for index, rule in rules(config, "tracker") if rule.queue == queue
    ]
    return f" (the queue of {', '.join(named)})" if named else ""


def _users(transform: Any, store: StagingStore) -> list[Finding]:
    refused: set[str] = set()
    for entity in USER_ENTITIES:
        for record in store.iter_records(entity):
            # an access list's holders never fall to the default user (`access_findings`)
            fields = {name: value for name, value in record.raw.items() if name != "access"}
            for ref in user_refs(fields):
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
