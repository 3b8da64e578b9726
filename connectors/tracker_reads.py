"""Issues read ahead, a hundred at a time, for a caller that knows which it will ask for next.

A sync refreshes every loaded issue whose staged record changed, and each refresh judges the
target's fields three ways: it needs the issue as the target holds it. Read one by one, that
is a GET per changed issue. The search takes a list of keys (`{"keys": [...]}`, documented),
so the first refresh that asks reads its issue together with the next ones it will ask for (the
order the load walks them, by source key), and the refreshes after it find theirs read.

A read is handed out once: a refresh judged again (its edit refused as stale, the API's
version lock) reads the issue by itself, as does one not in the list (an issue moved to
another key by its refresh) or one the search did not answer. A read taken ahead may be older
than a GET would have been; the edit names the version it was judged against, so a person's
edit in between is seen, never overwritten.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import structlog

from haul.connectors.errors import BadReplyError, PaginationError, RecordError, TransientError
from haul.connectors.tracker import Record, TrackerClient

log = structlog.get_logger(__name__)

CHUNK = 100  # keys a search asks for: one page of the search


class IssueReads:
    """The target's issues for the refreshes of one run, read `CHUNK` at a time."""

    def __init__(self, client: TrackerClient, refreshed: Callable[[], list[str]]) -> None:
        self.client = client
        self._refreshed = refreshed  # the target keys the run will refresh, in its order
        self._place: dict[str, int] | None = None
        self._keys: list[str] = []
        self._asked: set[str] = set()
        self._reads: dict[str, asyncio.Task[dict[str, Record]]] = {}

    async def issue(self, key: str) -> Record | None:
        """The target issue `key` (None when the target lacks it)."""
        if self._place is None:
            self._keys = self._refreshed()
            self._place = {k: place for place, k in enumerate(self._keys)}
        if key in self._place and key not in self._asked:
            self._ask_from(self._place[key])
        read = self._reads.pop(key, None)
        found = (await read).get(key) if read is not None else None
        return found if found is not None else await self.client.find_issue(key)

    def _ask_from(self, place: int) -> None:
        """One search for the key at `place` and the next ones not asked for yet."""
        keys: list[str] = []
        for key in itertools.islice(self._keys, place, None):
            if key not in self._asked:
                keys.append(key)
                self._asked.add(key)
            if len(keys) == CHUNK:
                break
        read = asyncio.ensure_future(self._search(keys))
        for key in keys:
            self._reads[key] = read

    async def _search(self, keys: list[str]) -> dict[str, Record]:
        """The issues of `keys` by their key; none when the search failed or answered what is
        not its list (said once: each of them is then read by itself; a refused token stops the
        run, as it would on the next read)."""
        try:
            found = await self.client.issues_by_keys(keys)
        except (RecordError, TransientError, BadReplyError, PaginationError) as exc:
            log.info("issue_reads_failed", keys=len(keys), error=str(exc))
            return {}
        return {str(issue.get("key")): issue for issue in found}
