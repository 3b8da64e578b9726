"""Scroll sessions: a frozen list of hits served page by page, each page under its own id.

A session holds references to the issue headers it matched; headers are immutable, so later
edits never change what the scroll serves.  Every reply names the scroll id of the NEXT page,
so a client that repeats a request (after a dropped reply) gets the same page again instead of
silently skipping one.  Each request refreshes the session's TTL; ``_clear`` drops sessions.
A session lives until its TTL runs out or it is cleared (also after its last page, so a retried
last request still works).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.model import Issue

_INDEX_DIGITS = 6  # a scroll id is 18 hex digits of session plus 6 of page index


@dataclass
class ScrollSession:
    id: str
    org_id: str
    hits: list[Issue]
    per_scroll: int
    ttl_ms: int
    expires_at: int
    scroll_type: str


@dataclass(frozen=True, slots=True)
class ScrollPage:
    hits: list[Issue]
    total: int
    next_id: str | None  # None on the last page
    next_token: str | None
    session: ScrollSession


class ScrollStore:
    """Open sessions of all organisations, expired lazily against an injectable clock."""

    def __init__(self, clock: Callable[[], int] = now_ms) -> None:
        self._clock = clock
        self._sessions: dict[str, ScrollSession] = {}

    def open(
        self, org_id: str, hits: list[Issue], *, per_scroll: int, ttl_ms: int, scroll_type: str
    ) -> ScrollPage:
        """Start a session over ``hits`` and return its first page."""
        self._expire()
        session_id = secrets.token_hex(9)
        expires = self._clock() + ttl_ms
        session = ScrollSession(session_id, org_id, hits, per_scroll, ttl_ms, expires, scroll_type)
        self._sessions[session_id] = session
        return self._page(session, 0)

    def page(self, org_id: str, scroll_id: str, ttl_ms: int | None) -> ScrollPage | None:
        """The page a scroll id names, refreshing the TTL; None if unknown or expired."""
        self._expire()
        session = self._sessions.get(scroll_id[:-_INDEX_DIGITS])
        index = _index(scroll_id)
        if session is None or session.org_id != org_id or index is None:
            return None
        if ttl_ms is not None:
            session.ttl_ms = ttl_ms
        session.expires_at = self._clock() + session.ttl_ms
        return self._page(session, index)

    def clear(self, scroll_ids: list[str]) -> int:
        """Drop the sessions the ids belong to; return how many were open."""
        dropped = [self._sessions.pop(s[:-_INDEX_DIGITS], None) for s in scroll_ids]
        return sum(session is not None for session in dropped)

    def __len__(self) -> int:
        self._expire()
        return len(self._sessions)

    def _page(self, session: ScrollSession, index: int) -> ScrollPage:
        start = index * session.per_scroll
        hits = session.hits[start : start + session.per_scroll]
        more = start + session.per_scroll < len(session.hits)
        next_id = f"{session.id}{index + 1:0{_INDEX_DIGITS}x}" if more else None
        token = scroll_token(next_id) if next_id else None
        return ScrollPage(hits, len(session.hits), next_id, token, session)

    def _expire(self) -> None:
        now = self._clock()
        for session_id in [s.id for s in self._sessions.values() if s.expires_at <= now]:
            del self._sessions[session_id]


def scroll_token(scroll_id: str | None) -> str:
    return hashlib.sha256(f"token:{scroll_id}".encode()).hexdigest()[:32]


def _index(scroll_id: str) -> int | None:
    digits = scroll_id[-_INDEX_DIGITS:]
    if len(scroll_id) <= _INDEX_DIGITS:
        return None
    try:
        return int(digits, 16)
    except ValueError:
        return None


def scrolls_of(request: Request) -> ScrollStore:
    """The app's scroll sessions (one store per tracker app)."""
    return request.app.state.scrolls
