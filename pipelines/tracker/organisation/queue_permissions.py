"""`haul check`'s read-only look at queue permissions: for each migrated queue, each mapped
user and group whose permissions in the target queue differ from those in the source queue.

A queue the target already had keeps its own permission scheme (the load sets only the
schemes of the queues it creates: `configuration`), so haul names the differences (warnings:
they never fail a run) and writes nothing here. It asks each side once per holder and
queue (`GET /queues/{id}/permissions/users/{user}` or `.../groups/{group}`), about:

- the users who appear on the queue's staged issues (author, assignee, followers, ...), at
  most `MAX_USERS` a queue, the most frequent first (the rest are counted, not asked): theirs
  is the work that moves, and asking about a whole directory costs a request a person;
- every group of the source that maps to a target group (`mapping.groups_file`, else the same
  name; the group of every person by its id: `all_staff`): an organisation has few, and a group's grant reaches members no issue names.

A user maps through `mapping.users_file`, else the same login; one the target does not know
is not compared (the load gives its records to the default user, whose permissions are not
its own): it is counted in the summary line. A group whose target group the target lacks is
not compared either: a warning names that target group and the source group it maps from.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass

from haul.connectors.errors import AuthError, NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.config.mapping_files import read_groups_csv, read_users_csv
from haul.pipelines.findings import Finding, nothing_staged
from haul.pipelines.tracker.transform import ALL_STAFF_ID, is_all_staff, user_refs
from haul.state.store import StagingStore

MAX_USERS = 30  # per queue: at most 2 * (30 + groups) requests a queue
CODES = ("READ", "CREATE", "WRITE", "GRANT")
FIX = "a queue's permissions are its organisation's to set; haul changes none"


@dataclass(frozen=True)
class Holder:
    """A user or group as each side names it in the permission paths."""

    kind: str  # "users" or "groups"
    source: str  # a uid or group id at the source
    target: str  # a login or group id at the target
    shown: str  # "alice", or "alice (bob in the target)"

    def describe(self) -> str:
        return f"{self.kind.removesuffix('s')} {self.shown}"


@dataclass(frozen=True)
class Difference:
    """What one holder may do in a source queue and in its target queue, unalike."""

    source_queue: str
    target_queue: str
    holder: Holder
    source: frozenset[str]
    target: frozenset[str]

    def what(self) -> str:
        return (
            f"queue {self.source_queue} -> {self.target_queue}: {self.holder.describe()} may"
            f" {_codes(self.source)} in the source, {_codes(self.target)} in the target"
        )


def _codes(codes: frozenset[str]) -> str:
    return ",".join(code.lower() for code in CODES if code in codes) or "nothing"


async def queue_permission_findings(
    config: Config, source: TrackerClient, target: TrackerClient, store: StagingStore | None
) -> list[Finding]:
    """One warning per difference, then one line of what was compared (and what not)."""
    if store is None or not store.count_records().get("issue"):
        return [nothing_staged("queue permissions are")]
    try:
        return await _findings(config, source, target, store)
    except AuthError as exc:
        return [Finding("warning", f"queue permissions not compared: {exc}",
                        "use an org administrator's token on both sides")]  # fmt: skip


async def _findings(
    config: Config, source: TrackerClient, target: TrackerClient, store: StagingStore
) -> list[Finding]:
    people = issue_people(store)
    users = _user_holders(config, store)
    groups, ungrouped, missing = await _group_holders(config, source, target)
    found, skipped, compared, absent = [*missing], 0, 0, set()
    for queue in sorted(people):
        to = config.mapping.queues.get(queue, queue)
        if await _missing_queue(target, to):
            found.append(Finding("warning", f"queue {queue} -> {to}: the target has no queue {to}"
                                 " yet: its permissions are not compared",
                                 "run haul check again after the load made it"))  # fmt: skip
            continue
        ranked = [uid for uid, _ in people[queue].most_common() if uid in users]
        skipped += max(0, len(ranked) - MAX_USERS)
        holders = [users[uid] for uid in ranked[:MAX_USERS]] + groups
        pairs = await asyncio.gather(*(_compare(source, target, queue, to, h) for h in holders))
        for holder, pair in zip(holders, pairs, strict=True):
            if pair is None:
                absent.add(holder.describe())
                continue
            compared += 1
            if pair[0] != pair[1]:
                found.append(Finding("warning", Difference(queue, to, holder, *pair).what(), FIX))
    return [*found, _summary(len(found), compared, skipped, sorted(absent | ungrouped))]


def _summary(differences: int, compared: int, skipped: int, absent: list[str]) -> Finding:
    what = f"queue permissions: {compared} user and group permissions compared"
    what += f", {differences} differ" if differences else ", all alike"
    if skipped:
        what += f"; {skipped} users past the first {MAX_USERS} of a queue not compared"
    if absent:
        what += f"; unknown on one side, not compared: {', '.join(absent)}"
    return Finding("ok", what)


async def _missing_queue(client: TrackerClient, queue: str) -> bool:
    try:
        await client.get_queue(queue)
    except NotFoundError:
        return True
    return False


async def _compare(
    source: TrackerClient, target: TrackerClient, queue: str, to: str, holder: Holder
) -> tuple[frozenset[str], frozenset[str]] | None:
    """The codes the holder has in the source queue and in the target one; None when the
    target does not know the holder."""
    mine = await _held(source, queue, holder.kind, holder.source)
    theirs = await _held(target, to, holder.kind, holder.target)
    if mine is None or theirs is None:
        return None
    return mine, theirs


async def _held(client: TrackerClient, queue: str, kind: str, who: str) -> frozenset[str] | None:
    try:
        reply = await client.get_queue_permissions(queue, kind, who)
    except NotFoundError:
        return None
    permissions = reply.get("permissions") if isinstance(reply, dict) else None
    return frozenset(str(code).upper() for code in permissions or {})


def issue_people(store: StagingStore) -> dict[str, Counter[str]]:
    """Staged queue -> how often each source uid appears on its issues."""
    people: dict[str, Counter[str]] = {}
    for record in store.iter_records("issue"):
        queue = str(record.source_id).rpartition("-")[0]
        counted = people.setdefault(queue, Counter())
        counted.update({str(ref.get("id")) for ref in user_refs(record.raw)})
    return people


def _user_holders(config: Config, store: StagingStore) -> dict[str, Holder]:
    """Source uid -> the user as each side is asked about it."""
    explicit = read_users_csv(config.mapping.users_file) if config.mapping.users_file else {}
    holders = {}
    for record in store.iter_records("user"):
        login = str(record.raw.get("login") or record.source_id)
        there = explicit.get(login, login)
        shown = login if there == login else f"{login} ({there} in the target)"
        holders[record.source_id] = Holder("users", record.source_id, there, shown)
    return holders


async def _group_holders(
    config: Config, source: TrackerClient, target: TrackerClient
) -> tuple[list[Holder], set[str], list[Finding]]:
    """Every source group that maps to a target group; what the summary names as not compared
    (a service that lists no groups: `/groups` is the official SDK's, not the spec's); and a
    warning for each source group whose target group the target lacks."""
    explicit = read_groups_csv(config.mapping.groups_file) if config.mapping.groups_file else {}
    try:
        mine, listed = await source.list_groups(), await target.list_groups()
    except NotFoundError:
        return [], {"groups (the service lists none)"}, []
    theirs = {str(group.get("name")): str(group["id"]) for group in listed}
    holders, missing = [], []
    for group in sorted(mine, key=lambda g: str(g.get("name"))):
        name = str(group.get("name"))
        there = explicit.get(name, name)
        found = there.removeprefix("dir:") if there.startswith("dir:") else theirs.get(there)
        if is_all_staff(str(group["id"]), name, explicit):  # by its id, whatever its name
            there, found = name, ALL_STAFF_ID
        shown = name if there == name else f"{name} ({there} in the target)"
        if found is None:
            missing.append(_missing_group(name, there))
        else:
            holders.append(Holder("groups", str(group["id"]), found, shown))
    return holders, set(), missing


def _missing_group(source: str, there: str) -> Finding:
    """A warning naming the target group the target lacks, and the source group it maps from."""
    mapped = f" (source group {source} maps to it" + (
        " in mapping.groups_file)" if there != source else " by its name)"
    )
    return Finding(
        "warning",
        f"group {there} is missing in the target{mapped}: its queue permissions are not compared",
        f"create group {there} in the target, or map {source} to a group the target has in"
        " mapping.groups_file",
    )
