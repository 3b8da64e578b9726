"""Links by query for a first migration: list the links only of the issues that have some.

Nothing on an issue says whether it has links, but the query language selects those that do:
``"Have Links To Queue": <queues>`` ("issues with links of any type to issues of the given
queues", the service's query-filter documentation). Per queue, on its first issue to drain,
one scroll with that condition naming every queue the organisation lists returns the issues
with links (`QueueSurvey.linked`), and a second, of the whole queue, draws the audit's sample.

The condition cannot see a link to a queue the token may not read (nor, should its index lag,
a fresh one), so it is audited: a sample of the queue's other issues (drawn by a seeded RNG: the
same for the same seed, queue and issues) is listed too, and a single link found there turns
the shortcut off for the queue: each of its issues is listed, and the report warns.

How many (`audit_size`): `sample` when the setting names a number, else 5% of the queue's
issues, at least 20 and at most 200 (never more than the issues the query did not return).
What the sample must catch is a share of hidden links, and a sample of n finds one with
probability 1 - (1 - share)^n whatever the queue's size: 20 finds a share of 14% 19 times in
20, 200 a share of 1.5%. The floor keeps a small queue's audit able to see a queue-wide
blind spot; the share grows it with the queue, since a larger queue holds more to lose;
the cap bounds what a large queue pays (200 listings against thousands). An issue the survey did not see (created or updated since it began, less `margin` for
two machines' clocks) is always listed.

An issue the survey's search lists without its key cannot be told linked or not (the scroll
names it as a problem, `scroll.KEYLESS`): the survey has not seen the whole queue, so the
shortcut is off for it and each of its issues is listed, with a warning.

Remote links have no such condition (the documentation's list of filter parameters has none),
so they stay listed per issue (see `drain.Applications`). A later run (a sync) drains only
changed issues and lists their links as before: a survey would read the whole queue for few.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from haul.connectors.errors import RecordError, ScrollExpiredError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.concurrency import gather_all
from haul.pipelines.tracker.issues.scroll import keyless_name
from haul.pipelines.tracker.timefmt import parse_time

log = structlog.get_logger(__name__)

Record = dict[str, Any]
AUDIT_AT_ONCE = 8  # sampled listings in flight while the queue's drains wait
AUDIT_SHARE = 0.05  # of the queue's issues, when `[tuning] link_audit_sample` is not set
AUDIT_FLOOR = 20
AUDIT_CAP = 200


def audit_size(queue_issues: int, fixed: int | None = None) -> int:
    """How many of a queue's issues the audit lists (see the module docstring): `fixed`
    when the setting names it, else a share of the queue with a floor and a cap."""
    if fixed is not None:
        return fixed
    return min(AUDIT_CAP, max(AUDIT_FLOOR, math.ceil(AUDIT_SHARE * queue_issues)))


@dataclass
class QueueSurvey:
    """What one queue's survey found."""

    began: datetime
    linked: set[str]
    audited: dict[str, list[Record]]  # a sampled issue's links, handed to its drain once
    shortcut: bool  # False: a sampled issue had links the condition did not find


@dataclass
class LinkSurvey:
    """The links shortcut of a run, queue by queue (see the module docstring)."""

    client: TrackerClient
    sample: int | None = None  # [tuning] link_audit_sample (None: `audit_size`'s share)
    seed: int = 0  # [tuning] link_audit_seed
    per_scroll: int = 1000
    margin: timedelta = timedelta(minutes=10)
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    requests: int = 0  # the survey's own: scroll pages and sampled listings
    skipped: int = 0  # link listings not asked
    audited_listings: int = 0  # the sampled issues listed
    warnings: list[str] = field(default_factory=list)
    _queues: list[str] | None = None
    _surveys: dict[str, QueueSurvey] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def links_of(self, issue: Record) -> list[Record]:
        """The issue's links: from its listing, or none without asking when the survey
        shows it has none."""
        key = str(issue["key"])
        survey = await self._survey(_queue_of(issue))
        updated = _moment(issue.get("updatedAt"))
        seen = updated is not None and updated < survey.began - self.margin
        audited = survey.audited.pop(key, None)
        if seen and audited is not None:
            return audited
        if seen and survey.shortcut and key not in survey.linked:
            self.skipped += 1
            return []
        return await self.client.list_links(key)

    def figures(self) -> dict[str, Any]:
        off = sorted(queue for queue, survey in self._surveys.items() if not survey.shortcut)
        return {
            "link_survey_requests": self.requests,
            "link_listings_skipped": self.skipped,
            "link_audit_listed": self.audited_listings,
            "link_shortcut_off": off,
            "warnings": list(self.warnings),
        }

    async def _survey(self, queue: str) -> QueueSurvey:
        lock = self._locks.setdefault(queue, asyncio.Lock())
        async with lock:
            if queue not in self._surveys:
                self._surveys[queue] = await self._run_survey(queue)
        return self._surveys[queue]

    async def _run_survey(self, queue: str) -> QueueSurvey:
        began = self.clock()
        try:
            every_queue = ", ".join(await self._every_queue())
            linked = await self._keys(
                queue, f'Queue: {queue} AND "Have Links To Queue": {every_queue}'
            )
            chosen = await self._sample_others(queue, linked)
        except KeylessIssueError as error:  # an issue it cannot name might have links
            self.warnings.append(
                f"links by query off for queue {queue}: the search listed issue {error.name} "
                "without its key; every issue of the queue had its links listed"
            )
            log.warning("link_survey_keyless", queue=queue, issue=error.name)
            return QueueSurvey(began, set(), {}, shortcut=False)
        except (RecordError, ScrollExpiredError) as error:  # refused (too long, say): list all
            self.warnings.append(
                f"links by query off for queue {queue}: the search refused it ({error}); "
                "every issue of the queue had its links listed"
            )
            log.warning("link_survey_refused", queue=queue, error=str(error))
            return QueueSurvey(began, set(), {}, shortcut=False)
        audited = await self._list_sample(chosen)
        hidden = sorted(key for key, links in audited.items() if links)
        if hidden:
            self._warn(queue, hidden)
        log.info("links_surveyed", queue=queue, linked=len(linked), audited=len(audited))
        return QueueSurvey(began, linked, audited, shortcut=not hidden)

    def _warn(self, queue: str, hidden: list[str]) -> None:
        self.warnings.append(
            f"links by query off for queue {queue}: {len(hidden)} sampled issue(s) (first "
            f"{hidden[0]}) have links the search did not find, perhaps to a queue this token "
            "cannot read; every issue of the queue had its links listed, none was lost"
        )
        log.warning("link_shortcut_off", queue=queue, sampled_with_links=len(hidden))

    async def _every_queue(self) -> list[str]:
        if self._queues is None:  # the first survey lists them; later ones wait on its lock
            self._queues = sorted([str(q["key"]) async for q in self.client.iter_queues()])
            self.requests += 1
        return self._queues

    async def _keys(self, queue: str, query: str) -> set[str]:
        keys: set[str] = set()
        async for page in self.client.scroll_issues(query=query, per_scroll=self.per_scroll):
            self.requests += 1
            keys.update(_key(queue, issue) for issue in page)
        return keys

    async def _sample_others(self, queue: str, linked: set[str]) -> list[str]:
        """`audit_size` of the queue's issues the query did not return, drawn as the queue's
        scroll passes (a reservoir as large as the most the audit may list: memory for the
        sample alone, whatever the queue's size), then cut to the size the queue's count
        calls for (a random part of a uniform sample is uniform)."""
        rng = random.Random(f"{self.seed}:{queue}")
        room = AUDIT_CAP if self.sample is None else self.sample
        chosen: list[str] = []
        seen = issues = 0
        query = f"Queue: {queue}"
        async for page in self.client.scroll_issues(query=query, per_scroll=self.per_scroll):
            self.requests += 1
            issues += len(page)
            for key in (_key(queue, issue) for issue in page):
                if key in linked:
                    continue
                seen += 1
                if len(chosen) < room:
                    chosen.append(key)
                elif (slot := rng.randrange(seen)) < room:
                    chosen[slot] = key
        wanted = audit_size(issues, self.sample)
        return chosen if len(chosen) <= wanted else rng.sample(chosen, wanted)

    async def _list_sample(self, keys: list[str]) -> dict[str, list[Record]]:
        audited: dict[str, list[Record]] = {}
        for start in range(0, len(keys), AUDIT_AT_ONCE):
            batch = keys[start : start + AUDIT_AT_ONCE]
            replies = await gather_all([self._listed(key) for key in batch])
            audited.update(
                (key, links) for key, links in zip(batch, replies, strict=True) if links is not None
            )
            self.requests += len(batch)
            self.audited_listings += len(batch)
        return audited

    async def _listed(self, key: str) -> list[Record] | None:
        """A sampled issue's links; None when it cannot be listed (gone since the scroll):
        its own drain will say why."""
        try:
            return await self.client.list_links(key)
        except RecordError as error:
            log.info("link_sample_unlisted", issue=key, error=str(error))
            return None


class KeylessIssueError(Exception):
    """The survey's search listed an issue without its key (see the module docstring)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _key(queue: str, issue: Record) -> str:
    if not issue.get("key"):
        raise KeylessIssueError(keyless_name(queue, issue))
    return str(issue["key"])


def _queue_of(issue: Record) -> str:
    queue = issue.get("queue")
    if isinstance(queue, dict) and queue.get("key"):
        return str(queue["key"])
    return str(issue["key"]).rsplit("-", 1)[0]


def _moment(value: Any) -> datetime | None:
    try:
        return parse_time(str(value)) if value else None
    except ValueError:
        return None
