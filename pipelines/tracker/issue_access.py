"""Whom an issue's `access` list opens it to in the target: the source's list, people mapped.

An issue's `access` names people granted it beside its queue's permissions: each of them reads
it. So its holders map strictly (`[mapping] users_file`, or the same login, and only to a login
the target has), never to `default_user`, which would open the issue to an account the source
never gave it; and the list **fails closed**: a holder with no target account is left out
(narrower, never wider) and named in `unmapped`.

The issue's import already carries the narrowed list, so at no moment of the load does the
target show it to anyone more. Its `issue_access` ledger row (one per issue whose source lists
anyone, or ever did) then brings the target's list to the source's, removals too (an edit
replaces the list), and fails naming the holders left out: `haul plan` marks it a conflict,
`haul check` warns, `haul failures`, `haul status` and the report count and name it, and
`haul verify` sees the holder missing. A later run does the same when the list changes at the
source, three ways (`settle_access`): haul keeps the list it wrote (the base); a list changed
only at the source is carried, one changed only in the target is kept, and one changed on
both sides is a conflict that never widens access: the target gets the narrower of the two (the
holders both lists name), whatever `[sync] conflicts` says, and the conflict is reported with
both lists (under "source-wins" only when the source's list could not be written whole, and
what it replaced is recorded).

Plain dicts in, plain values out: no I/O here (`specs` does the writes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from haul.pipelines.findings import Finding
from haul.pipelines.specs import Planned, Ref
from haul.state.store import StagingStore

ENTITY = "issue_access"
SHOWN = 5  # issues named per holder by `haul check`; the rest are counted


@dataclass(frozen=True)
class IssueAccess:
    """An issue's access list in the target: target logins, and the holders left out."""

    logins: tuple[str, ...]
    unmapped: tuple[str, ...] = ()  # "user zed": no target account, so not on the list


def wanted(
    issue: dict[str, Any],
    holder: Callable[[Any], str | None],
    name: Callable[[Any], str],
) -> IssueAccess:
    """The target access list of a staged issue: each holder's target login (`holder`: None
    when it has none), the ones without named by `name`."""
    logins, unmapped = set(), set()
    for ref in issue.get("access") or []:
        login = holder(ref)
        if login is None:
            unmapped.add(f"user {name(ref)}")
        else:
            logins.add(login)
    return IssueAccess(tuple(sorted(logins)), tuple(sorted(unmapped)))


@dataclass(frozen=True)
class AccessSettling:
    """What a run writes of an access list (`write`: uids, None for nothing), the base it
    leaves, whether the target's list is replaced by a conflict's settling (`overwritten`)
    and whether the conflict is reported (`conflict`: (the source's, the target's) list)."""

    write: list[str] | None
    base: list[str]
    overwritten: bool = False
    conflict: tuple[list[str], list[str]] | None = None


def settle_access(
    source: list[str], base: list[str] | None, target: list[str], rule: str
) -> AccessSettling:
    """The source's access list (uids) against the base and the target's, three ways."""
    if source == target:
        return AccessSettling(None, source)
    if base is None or target == base:
        return AccessSettling(source, source)  # changed at the source only: carried
    if source == base:
        return AccessSettling(None, base)  # changed in the target only: kept
    narrower = sorted(set(source) & set(target))
    wins = rule == "source-wins"
    reported = None if wins and narrower == source else (source, target)
    return AccessSettling(
        None if narrower == target else narrower,
        source if wins else base,  # keep-target: stays a conflict until a person settles it
        overwritten=wins and narrower != target,
        conflict=reported,
    )


def held(issue: dict[str, Any]) -> list[str]:
    """A target issue's access list as uids (the target's references)."""
    refs: Iterable[Any] = issue.get("access") or []
    return sorted(str(ref.get("id")) if isinstance(ref, dict) else str(ref) for ref in refs)


def plan_issue_access(store: StagingStore) -> Iterator[Planned]:
    """A row under each issue whose source lists anyone on its access list, and under each
    that had one (a list emptied at the source empties the target's)."""
    had = {row.source_id for row in store.ledger.iter_rows(entity=ENTITY)}
    for record in store.iter_records("issue"):
        if record.raw.get("access") or record.source_id in had:
            yield Planned(record, Ref("issue", record.source_id))


def access_findings(
    store: StagingStore, access: Callable[[dict[str, Any]], IssueAccess]
) -> list[Finding]:
    """`haul check`'s warning per holder an issue's access list leaves out, naming issues."""
    by_holder: dict[str, list[str]] = {}
    for record in store.iter_records("issue"):
        for holder in access(record.raw).unmapped:
            by_holder.setdefault(holder, []).append(record.source_id)
    return [
        Finding(
            "warning",
            f"issue access: {holder} has no target account: left out of the access list of"
            f" {len(keys)} issue(s), never given to the default user ({_some(keys)})",
            "map it in mapping.users_file, then check again",
        )
        for holder, keys in sorted(by_holder.items())
    ]


def _some(keys: list[str]) -> str:
    more = f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(sorted(keys)[:SHOWN]) + more


def failure(source_key: str, access: IssueAccess) -> str:
    """Why an issue's access row fails: whom its list leaves out, and what to do."""
    return (
        f"issue {source_key}: {', '.join(access.unmapped)} has no target account"
        " (mapping.users_file): left out of its access list, never given to the default user;"
        " map them, then haul load --retry-failed"
    )
