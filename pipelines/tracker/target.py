"""What the tracker's load, plan, verify and check need of a target org, built once per command.

`TrackerTarget.of` is the one place the target context is built: the target's dictionaries,
queues, fields and users are staged under `target.` (`stage_target`; a command that only reads,
`haul verify`, uses what the last load or plan staged and writes nothing), with the target
token's own user (`target.myself`): the default user when `mapping.default_user` is not set, so
that a record whose user has no target user still loads. The `Transform` is built from both
orgs' staged dictionaries, users and fields (`build_transform`, with the `StructureMap` of the
organisation objects); the key map (`TargetKeys`) says where each source issue is in the target.
The preflight stops before any write when the target lacks a queue or a dictionary key the
staged issues need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

from haul.connectors.errors import HaulError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.config.mapping_files import read_users_csv
from haul.pipelines.forms.staged import rules
from haul.pipelines.specs import RecordWaiting
from haul.pipelines.sync.references import (
    References,
    SourceScan,
    mention_login,
    moved_slug,
    web_hosts,
)
from haul.pipelines.tracker.transform import (
    DictionaryMap,
    MissingDictionaryValues,
    QueueMap,
    StructureMap,
    Transform,
    UserMap,
)
from haul.state.store import StagingStore

DICTIONARY_KINDS = ("status", "issuetype", "priority", "resolution", "linktype")
FILE_ENTITIES = ("attachment", "comment_attachment")  # the ledger's rows of an issue's files


class PreflightError(HaulError):
    """The load cannot start: the target lacks something the staged data needs."""


@dataclass(frozen=True)
class TrackerTarget:
    """One target org as every tracker command sees it: built once per command (`of`), then
    handed to each part that loads, plans, verifies or checks against it."""

    client: TrackerClient
    store: StagingStore
    config: Config
    transform: Transform  # dictionaries, users, queues and the organisation objects, mapped
    keys: TargetKeys  # a source issue key -> where it is (or will be) in the target
    uids: dict[str, str]  # a target login -> its uid
    myself: str | None  # the target token's own login (staged as `target.myself`)
    read_only: bool = False  # the command writes to neither the target nor the store (verify)
    # what the layers build once per target and share, by its type (the trees' `TreeLoad`)
    parts: dict[type, object] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    async def of(
        cls, config: Config, client: TrackerClient, store: StagingStore, *, read_only: bool = False
    ) -> TrackerTarget:
        """The target context; `read_only` takes the target as the store holds it (staged by
        the last load or plan) and writes nothing to the store."""
        transform = build_transform(store, config)
        keys = TargetKeys(store, transform.queues)
        transform.references = tracker_references(
            store, config, mentions(transform, config), keys.key
        )
        myself = next((row.source_id for row in store.iter_records("target.myself")), None)
        return cls(client, store, config, transform, keys, target_uids(store), myself, read_only)

    def preflight(self) -> None:
        """Stop before any write when the target lacks what the staged issues need (a
        read-only command writes nothing, so nothing stops it)."""
        if not self.read_only:
            preflight(self.store, self.transform, self.config)


def mentions(transform: Transform, config: Config) -> Callable[[str], str | None]:
    """A mentioned source login's target login (`references.mention_login`)."""
    users = transform.users
    return mention_login(users.explicit, users.target_logins, config.mapping.default_user)


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
        structure=structure_map(store, config),
    )


def structure_map(store: StagingStore, config: Config) -> StructureMap:
    """How the issues' structure references map to the target: through the ledger's target ids
    of the organisation objects (done rows only), the custom fields by key."""
    local: dict[str, set[str]] = {}
    for record in store.iter_records("local_field"):
        local.setdefault(record.parent or "", set()).add(str(record.raw.get("key")))
    renamed = dict(config.mapping.fields)
    target_types = {
        record.source_id: str(record.raw.get("fieldType"))
        for record in store.iter_records("target.field")
    }
    clashes = {  # source key -> the type of the target field of its key, where they differ
        record.source_id: target_types[target]
        for record in store.iter_records("field")
        if record.raw.get("type") == "global"
        and (target := renamed.get(record.source_id, record.source_id)) in target_types
        and target_types[target] != record.raw.get("fieldType")
    }
    return StructureMap(partial(loaded, store), custom_field_keys(store), local, renamed, clashes)


def custom_field_keys(store: StagingStore) -> set[str]:
    """The keys of the source's global custom fields."""
    return {r.source_id for r in store.iter_records("field") if r.raw.get("type") == "global"}


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


class LinkWaits(RecordWaiting):
    """A link to an issue outside the migration's scope so far that the target does not have
    either: it waits, and the run that migrates the issue's queue makes it."""

    def __init__(self, other: str) -> None:
        super().__init__(
            f"waits for issue {other}, outside the migration's scope so far and not in the "
            "target: the run that migrates its queue makes the link"
        )


# -- references in text (`pipelines.sync.references`): files by the ledger, users by the mapping --


def file_index(store: StagingStore) -> dict[str, str]:
    """A source file id -> the source id of its staged record (`<issue key>/<file id>`)."""
    return {source_id.rpartition("/")[2]: source_id for source_id in store.source_ids("attachment")}


def carried_file(
    store: StagingStore, key_of: Callable[[str], str]
) -> Callable[[str], tuple[str, str] | None]:
    """A source file id -> (its issue's target key, its target id), once it is in the target."""
    index: dict[str, str] | None = None

    def carried(file_id: str) -> tuple[str, str] | None:
        nonlocal index
        if index is None:
            index = file_index(store)
        source_id = index.get(file_id)
        if source_id is None:
            return None
        for entity in FILE_ENTITIES:
            row = store.ledger.get(entity, source_id)
            if row is not None and row.status == "done" and row.target_id:
                return key_of(source_id.rpartition("/")[0]), row.target_id
        return None

    return carried


def tracker_references(
    store: StagingStore,
    config: Config,
    logins: Callable[[str], str | None],
    key_of: Callable[[str], str],
) -> References:
    """The references of tracker texts, rewritten with this run's maps."""
    tracker, wiki = web_hosts(config)
    return References(
        logins={row.raw["login"] for row in store.iter_records("user")},
        attachment=carried_file(store, key_of),
        login=logins,
        page=moved_slug(config.scope.wiki_roots, dict(config.mapping.wiki_roots)),
        tracker=tracker,
        wiki=wiki,
    )


def source_scan(
    store: StagingStore, config: Config, logins: Callable[[str], str | None]
) -> SourceScan:
    """What verify looks for: the source's file ids that are not the target's own ids, its web
    hosts, and the source logins a mention would not keep (mapped to another login)."""
    targets = {
        row.target_id for entity in FILE_ENTITIES for row in store.ledger.iter_rows(entity=entity)
    }
    files = set(file_index(store)) - targets
    source_logins = {row.raw["login"] for row in store.iter_records("user")}
    away = {login for login in source_logins if logins(login) not in (login,)}
    hosts = tuple(hosts for hosts in web_hosts(config) if hosts is not None)
    return SourceScan(files, hosts, away)


def moved_issues(store: StagingStore) -> dict[str, str]:
    """Every old key a staged issue had -> its key now."""
    return {
        alias: key
        for _, key, aliases in store.iter_lists("issue", "aliases")
        for alias in aliases
        if isinstance(alias, str)
    }


@dataclass
class TargetKeys:
    """The target key of a source issue: followed through its moves, then the key its loaded
    ledger row holds (a moved issue's new one), else the queue mapping's."""

    store: StagingStore
    queues: QueueMap
    _moved: dict[str, str] | None = field(default=None, repr=False)

    def current(self, source_key: str) -> str:
        """The source key the issue has now."""
        if self._moved is None:
            self._moved = moved_issues(self.store)
        return self._moved.get(source_key, source_key)

    def key(self, source_key: str) -> str:
        """Where the issue is (or will be) in the target."""
        current = self.current(source_key)
        row = self.store.ledger.get("issue", current)
        if row is not None and row.status == "done" and row.target_id:
            return row.target_id
        return self.queues.key(current)


def issues_staged(config: Config, store: StagingStore) -> bool:
    """Issues, or answers a back-fill makes into issues, are staged."""
    staged = store.count_records()
    return bool(staged.get("issue") or (rules(config, "tracker") and staged.get("survey_answer")))
