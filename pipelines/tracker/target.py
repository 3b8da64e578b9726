"""What the tracker's load, plan, verify and check need of a target org, built from the store.

The target's dictionaries, queues and users are staged under `target.` (`stage_target`), and
the target token's own user (`target.myself`): the default user when `mapping.default_user`
is not set, so that a record whose user has no target user still loads. The
`Transform` is built from both orgs' staged dictionaries and users; the preflight stops before
any write when the target lacks a queue or a dictionary key the staged issues need.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from haul.connectors.errors import HaulError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.mapping_files import read_users_csv
from haul.pipelines.streams import Extractor
from haul.pipelines.tracker.organisation.streams import dictionary_streams, tracker_list
from haul.pipelines.tracker.transform import (
    DictionaryMap,
    MissingDictionaryValues,
    QueueMap,
    Transform,
    UserMap,
)
from haul.state.store import StagingStore

DICTIONARY_KINDS = ("status", "issuetype", "priority", "resolution", "linktype")


class PreflightError(HaulError):
    """The load cannot start: the target lacks something the staged data needs."""


async def stage_target(client: TrackerClient, store: StagingStore) -> None:
    """Stage the target org's dictionaries, queues, users and fields under `target.`."""
    fields = tracker_list("target.field", client.list_fields)

    async def myself() -> list[dict[str, Any]]:
        return [await client.myself()]

    me = tracker_list("target.myself", myself, id_key="login")
    await Extractor(store, [*dictionary_streams(client, prefix="target."), fields, me]).run()


def default_user(store: StagingStore, config: Config) -> str | None:
    """`mapping.default_user`, else the target token's own login (staged by `stage_target`)."""
    if config.mapping.default_user:
        return config.mapping.default_user
    return next((row.source_id for row in store.iter_records("target.myself")), None)


def build_transform(store: StagingStore, config: Config) -> Transform:
    """The maps the load needs, from the staged dictionaries and users of both orgs."""
    source_logins = {row.source_id: row.raw["login"] for row in store.iter_records("user")}
    target_logins = {row.raw["login"] for row in store.iter_records("target.user")}
    explicit = read_users_csv(config.mapping.users_file) if config.mapping.users_file else {}
    source_keys = {
        kind: {row.source_id: row.raw.get("key", row.source_id) for row in store.iter_records(kind)}
        for kind in DICTIONARY_KINDS
    }
    target_ids = {
        kind: {
            row.raw.get("key", row.source_id): row.raw["id"]
            for row in store.iter_records(f"target.{kind}")
        }
        for kind in DICTIONARY_KINDS
    }
    return Transform(
        queues=QueueMap(dict(config.mapping.queues)),
        users=UserMap(source_logins, target_logins, explicit, default_user(store, config)),
        dictionaries=DictionaryMap(source_keys, target_ids, made=lambda k, i: loaded(store, k, i)),
        unique_prefix=f"haul:{config.source.org}",
    )


def loaded(store: StagingStore, entity: str, source_id: str) -> str | None:
    """The target id of an organisation object this migration loaded (done), else None."""
    row = store.ledger.get(entity, source_id)
    return row.target_id if row is not None and row.status == "done" else None


def target_uids(store: StagingStore) -> dict[str, str]:
    """Target login -> target uid, from the target's staged users."""
    return {row.raw["login"]: str(row.raw["uid"]) for row in store.iter_records("target.user")}


def missing_queues(store: StagingStore, wanted: Iterable[str]) -> list[str]:
    """The queues of `wanted` the target org does not have."""
    have = {row.source_id for row in store.iter_records("target.queue")}
    return sorted(set(wanted) - have)


def wanted_queues(transform: Transform, config: Config) -> set[str]:
    """The target queues the load writes into: the mapped scope, and the back-fills'."""
    wanted = {transform.queues.queue(queue) for queue in config.scope.queues}
    return wanted | {str(rule.queue) for rule in config.backfill if rule.into == "tracker"}


def preflight(store: StagingStore, transform: Transform, config: Config) -> None:
    """Stop before any write when the target lacks a queue or a dictionary key we need and
    `[mapping] create_missing` is false (by default the load makes them first)."""
    if config.mapping.create_missing:
        return
    if missing := missing_queues(store, wanted_queues(transform, config)):
        raise PreflightError(
            f"cannot load: the target org has no queue {', '.join(missing)}: create it, "
            "or map the queue elsewhere"
        )
    absent = transform.dictionaries.missing(row.raw for row in store.iter_records("issue"))
    if absent:
        raise MissingDictionaryValues(absent)
