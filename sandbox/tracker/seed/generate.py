"""Build the sandbox's organisations deterministically from ``(seed, size)``.

The source organisation gets queues, users, dictionaries, issue headers and links, all drawn
eagerly from one RNG in a fixed order; each issue's sub-records are drawn later, on first
access, from that issue's own RNG (:mod:`sandbox.tracker.seed.records`).  Its structure (fields,
components, versions, boards, sprints: :mod:`sandbox.tracker.seed.seed_structure`) comes from an RNG
of its own, and each issue's values for it (:mod:`sandbox.tracker.seed.seed_values`) are drawn on
first access from the issue's own RNG, like its sub-records.  The target
organisation has the same queues plus ``NEW``, the same logins and dictionary keys under
different numeric ids, part of the source's structure, and no issues.  The "empty"
organisation is a freshly created one: the same users, the dictionary values and fields every
new organisation comes with, no queues, no custom values.

The history runs from 2022 to the end of 2024, except its last part: of the issues created in
the last `RECENT_DAYS` of the creation window (chosen by sequence number, never by the date),
those linked to none that stays move, with everything drawn from their times, to end the day
before `today`, so a team's recent throughput (and a forecast from it) is there however late
the sandbox runs.  The move is whole days and comes after every draw: the same issues, links
and records at any date, only their times later.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace

from haul.sandbox import people
from haul.sandbox.people import User
from haul.sandbox.timefmt import now_ms, parse_instant
from haul.sandbox.tracker import catalog
from haul.sandbox.tracker.model import (
    Counters,
    Dictionary,
    Entry,
    Issue,
    Link,
    Org,
    Queue,
)
from haul.sandbox.tracker.seed import text
from haul.sandbox.tracker.seed.records import SLOT, generate_records
from haul.sandbox.tracker.seed.references import refer_in_descriptions
from haul.sandbox.tracker.seed.seed_planning import seed_planning
from haul.sandbox.tracker.seed.seed_structure import seed_structure
from haul.sandbox.tracker.seed.seed_values import IssueValues
from haul.sandbox.world import World

HISTORY_END = parse_instant("2025-01-01T00:00:00.000+0000") or 0  # every generated time is before
HISTORY_START = parse_instant("2022-01-01T00:00:00.000+0000") or 0
DAY = 86_400_000
RECENT_DAYS = 365  # the issues created in the last year move to end the day before today


_STATUS_WEIGHTS = {"open": 30, "inProgress": 20, "needInfo": 8, "resolved": 22, "closed": 20}
_TYPE_WEIGHTS = {"bug": 32, "task": 40, "epic": 8, "story": 20}
_PRIORITY_WEIGHTS = {"blocker": 3, "critical": 10, "normal": 60, "minor": 20, "trivial": 7}
_RESOLUTION_WEIGHTS = {"fixed": 70, "wontFix": 10, "duplicate": 8, "invalid": 7, "later": 5}
_TAGS = ("backend", "frontend", "urgent", "tech-debt", "ux", "релиз", "数据", "security")


def build_world(
    seed: int, size: str, *, admin_token: str, user_token: str, today: int | None = None
) -> World:
    """The source and target organisations for ``seed`` and ``size`` plus the two tokens;
    the recent issues end the day before ``today`` (ms; now when not given)."""
    if size not in catalog.SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {', '.join(catalog.SIZES)}")
    rng = random.Random(f"world:{seed}")
    source_id, target_id = (str(n) for n in rng.sample(range(1_000_000, 9_999_999), 2))
    empty_id = _third_id(seed, {source_id, target_id})
    issue_count, queue_count = catalog.SIZES[size]
    queue_specs = catalog.QUEUES[:queue_count]
    source = _org(source_id, "source", seed, queue_specs, random.Random(f"source:{seed}"), 0)
    target_specs = (*queue_specs, catalog.EXTRA_TARGET_QUEUE)
    target = _org(target_id, "target", seed, target_specs, random.Random(f"target:{seed}"), 1)
    empty = _org(empty_id, "empty", seed, (), random.Random(f"empty:{seed}"), 2)
    for band, org in enumerate((source, target, empty)):
        seed_structure(org, random.Random(f"structure:{org.role}:{seed}"), band, HISTORY_START)
    source.values_factory = IssueValues(source).for_issue
    shift = recent_shift(now_ms() if today is None else today)
    _populate(source, issue_count, catalog.BIG_ATTACHMENTS[size], rng, shift)
    seed_planning(source)  # drawn on first access: projects, goals, filters, ...
    return World(
        orgs={source.id: source, target.id: target, empty.id: empty},
        admin_token=admin_token,
        user_token=user_token,
        seed=seed,
        size=size,
    )


def _third_id(seed: int, taken: set[str]) -> str:
    """The empty org's id, from an RNG of its own so the other two ids stay as they were."""
    rng = random.Random(f"empty-id:{seed}")
    while (found := str(rng.randrange(1_000_000, 9_999_999))) in taken:
        pass
    return found


def _org(
    org_id: str, role: str, seed: int, queue_specs: tuple, rng: random.Random, band: int
) -> Org:
    """An org without issues; ``band`` keeps its numeric ids apart from the other org's, so an
    id copied across organisations is always unknown rather than silently another value."""
    users = _users(rng, band)
    custom = _Custom(role != "empty")
    uids = {user.login: user.uid for user in users.values()}
    queue_ids = rng.sample(range(1 + 100 * band, 100 * (band + 1)), len(queue_specs))
    queues = {
        key: Queue(qid, key, name, f"{name} queue", uids["alice"], default_type, "normal")
        for qid, (key, name, default_type) in zip(queue_ids, queue_specs, strict=True)
    }
    return Org(
        id=org_id,
        role=role,
        seed=seed,
        users=users,
        statuses=_dictionary("statuses", catalog.STATUSES, rng, band, custom.statuses),
        issue_types=_dictionary("issuetypes", catalog.ISSUE_TYPES, rng, band, custom.types),
        priorities=_dictionary("priorities", catalog.PRIORITIES, rng, band, ()),
        resolutions=_dictionary("resolutions", catalog.RESOLUTIONS, rng, band, custom.resolutions),
        link_types=dict(catalog.LINK_TYPES),
        queues=queues,
        counters=Counters(comment=1, worklog=1, link=1, attachment=1, changelog=1, issue=0),
        records_factory=generate_records,
    )


def _users(rng: random.Random, band: int) -> dict[int, User]:
    uids = rng.sample(range(band * 10**9, (band + 1) * 10**9), len(people.PEOPLE))
    users = {}
    for offset, (login, first, last) in zip(uids, people.PEOPLE, strict=True):
        uid = 1_130_000_000_000_000 + offset
        cloud_uid = hashlib.sha256(f"{uid}".encode()).hexdigest()[:20]
        users[uid] = User(uid, login, first, last, cloud_uid)
    return users


class _Custom:
    """The custom dictionary values an org has (none in a freshly created one)."""

    def __init__(self, present: bool) -> None:
        self.statuses = catalog.CUSTOM_STATUSES if present else ()
        self.types = catalog.CUSTOM_ISSUE_TYPES if present else ()
        self.resolutions = catalog.CUSTOM_RESOLUTIONS if present else ()


def _dictionary(path: str, rows: tuple, rng: random.Random, band: int, custom: tuple) -> Dictionary:
    """System values drawn as always, then custom values on the highest free ids of the band
    (so adding custom values moved no id and no draw of the system ones)."""
    ids = rng.sample(range(1 + 100 * band, 100 * (band + 1)), len(rows))
    free = (n for n in range(100 * (band + 1) - 1, 100 * band, -1) if n not in ids)
    ids += [next(free) for _ in custom]
    rows = (*rows, *custom)
    entries = [
        Entry(
            id=entry_id,
            key=row[0],
            name_en=row[1],
            name_ru=row[2],
            order=(index + 1) * 10,
            status_type=row[3] if len(row) > 3 else None,
        )
        for index, (entry_id, row) in enumerate(zip(ids, rows, strict=True))
    ]
    return Dictionary(path, entries)


def recent_shift(today: int) -> int:
    """How far the recent issues move: whole days, from the history's end to `today`'s start
    (UTC), so that each of their times falls before `today`."""
    return max(0, (today // DAY) * DAY - HISTORY_END)


def _populate(org: Org, count: int, big_count: int, rng: random.Random, shift: int) -> None:
    """Generate ``count`` issue headers and their links into ``org``, the recent issues and
    the links between two of them moved `shift` ms later."""
    people = [user.uid for user in org.users.values()]
    issues: list[Issue] = []
    for seq in range(count):
        mentions = [issues[rng.randrange(seq)].key] if seq else []
        issues.append(_issue(org, seq, count, people, mentions, rng))
    links = _links(issues, people, rng)
    moved = _recent(issues, links)
    issues = [_later(issue, shift) if issue.key in moved else issue for issue in issues]
    for issue in issues:
        org.put_issue(issue)
    for link in links:
        later = link.source in moved  # and its other end: see `_recent`
        org.add_link(replace(link, created_at=link.created_at + shift) if later else link)
    org.big_attachment_keys = frozenset(i.key for i in rng.sample(issues, min(big_count, count)))
    refer_in_descriptions(org, issues)
    top = (count + 1) * SLOT
    org.counters = Counters(
        comment=top,
        worklog=top,
        link=len(org.links) + 1,
        attachment=top,
        changelog=top,
        issue=count,
    )


def _recent(issues: list[Issue], links: list[Link]) -> set[str]:
    """The keys of the issues created in the last RECENT_DAYS that move, with no link to an
    issue that stays (a link lies in both its ends' windows)."""
    slot = (HISTORY_END - HISTORY_START - 30 * DAY) // len(issues) if issues else 1
    first = max(0, len(issues) - (RECENT_DAYS * DAY) // max(slot, 1))
    moved = {issue.key for issue in issues[first:]}
    while True:
        staying = {
            end
            for link in links
            if (link.source in moved) != (link.target in moved)
            for end in (link.source, link.target)
        }
        if not staying & moved:
            return moved
        moved -= staying


def _later(issue: Issue, shift: int) -> Issue:
    """The issue with each of its times `shift` later (its records are drawn from them)."""
    return replace(
        issue,
        created_at=issue.created_at + shift,
        updated_at=issue.updated_at + shift,
        status_start=issue.status_start + shift,
        resolved_at=None if issue.resolved_at is None else issue.resolved_at + shift,
        last_comment_at=None if issue.last_comment_at is None else issue.last_comment_at + shift,
    )


def _issue(
    org: Org, seq: int, count: int, people: list[int], mentions: list[str], rng: random.Random
) -> Issue:
    queue = org.queues[rng.choices(list(org.queues), weights=_queue_weights(org))[0]]
    number = queue.next_number
    queue.next_number += 1
    slot = (HISTORY_END - HISTORY_START - 30 * DAY) // count
    created = HISTORY_START + seq * slot + rng.randrange(max(slot, 1))
    kind = _pick(rng, _TYPE_WEIGHTS)
    lifetime = (200 if kind == "epic" else 40) * DAY  # epics stay open for months
    updated = min(HISTORY_END - 1000, created + 60_000 + int(rng.expovariate(1 / lifetime)))
    status = _pick(rng, _STATUS_WEIGHTS)
    resolved = status in ("resolved", "closed")
    resolved_at = rng.randrange(created, updated + 1) if resolved else None
    status_start = _status_start(rng, status, created, updated, resolved_at)
    comment_count = min(30, int(rng.expovariate(1 / 5)))
    key = f"{queue.key}-{number}"
    return Issue(
        seq=seq,
        id=hashlib.sha256(f"{org.id}:{key}".encode()).hexdigest()[:24],
        key=key,
        queue=queue.key,
        number=number,
        summary=text.summary(rng),
        description=text.description(rng, mentions) if rng.random() < 0.7 else None,
        type=kind,
        priority=_pick(rng, _PRIORITY_WEIGHTS),
        status=status,
        previous_status=_PREVIOUS_STATUS[status],
        resolution=_pick(rng, _RESOLUTION_WEIGHTS) if resolved else None,
        created_at=created,
        updated_at=updated,
        status_start=status_start,
        resolved_at=resolved_at,
        created_by=rng.choice(people),
        updated_by=rng.choice(people),
        resolved_by=rng.choice(people) if resolved else None,
        assignee=rng.choice(people) if rng.random() < 0.8 else None,
        followers=tuple(rng.sample(people, rng.randrange(0, 4))),
        tags=tuple(rng.sample(_TAGS, rng.randrange(0, 4))),
        comment_count=comment_count,
        last_comment_at=rng.randrange(created, updated + 1) if comment_count else None,
        generated=True,
    )


# the status each generated issue passed through just before its current one
_PREVIOUS_STATUS = {
    "open": None,
    "inProgress": "open",
    "needInfo": "inProgress",
    "resolved": "inProgress",
    "closed": "resolved",
}


def _status_start(
    rng: random.Random, status: str, created: int, updated: int, resolved_at: int | None
) -> int:
    if status == "open":
        return created
    if status == "resolved":
        return resolved_at or created
    if status == "closed":
        return rng.randrange(resolved_at or created, updated + 1)
    return rng.randrange(created, updated + 1)


def _queue_weights(org: Org) -> list[int]:
    return [3 if key == "TEST" else 1 for key in org.queues]


def _pick(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _links(issues: list[Issue], people: list[int], rng: random.Random) -> list[Link]:
    """Links between issues whose windows overlap, some across queues, each stored once."""
    links: list[Link] = []
    epics: list[Issue] = []
    tasks: list[Issue] = []
    for issue in issues:
        candidates = _link_candidates(issue, epics, tasks, issues, rng)
        for link_type, direction, other in candidates:
            lo = max(issue.created_at, other.created_at)
            hi = min(issue.updated_at, other.updated_at)
            if other.key == issue.key or lo > hi:
                continue
            when = rng.randrange(lo, hi + 1)
            link_id = len(links) + 1
            links.append(
                Link(link_id, link_type, issue.key, other.key, direction, rng.choice(people), when)
            )
        if issue.type == "epic":
            epics = [*epics[-20:], issue]
        if issue.type == "task":
            tasks = [*tasks[-20:], issue]
    return links


def _link_candidates(
    issue: Issue,
    epics: list[Issue],
    tasks: list[Issue],
    issues: list[Issue],
    rng: random.Random,
) -> list[tuple[str, str, Issue]]:
    """Partners among recent issues (any queue) whose windows overlap this one's."""
    recent = issues[max(0, issue.seq - 30) : issue.seq]
    found: list[tuple[str, str, Issue]] = []
    if rng.random() < 0.4:
        found += [("relates", "outward", other) for other in _overlapping(issue, recent, rng)]
    if rng.random() < 0.2:
        direction = rng.choice(("outward", "inward"))
        found += [("depends", direction, other) for other in _overlapping(issue, recent, rng)]
    if rng.random() < 0.05:
        found += [("duplicates", "inward", other) for other in _overlapping(issue, recent, rng)]
    if issue.type == "story" and rng.random() < 0.7:
        found += [("epic", "outward", epic) for epic in _overlapping(issue, epics, rng)]
    if issue.type == "task" and rng.random() < 0.3:
        found += [("subtask", "inward", task) for task in _overlapping(issue, tasks, rng)]
    return found


def _overlapping(issue: Issue, others: list[Issue], rng: random.Random) -> list[Issue]:
    """At most one of ``others`` whose window overlaps the issue's."""
    fits = [other for other in others if other.updated_at >= issue.created_at]
    return [rng.choice(fits)] if fits else []
