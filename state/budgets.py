"""What each service's rate budgets found, kept between runs: a command against the same
service starts where the last one left it, not at a cold start.

One row per service URL (normalised, as `targets` spells it), org and direction (read,
write); its value is the plain figures a budget hands back (requests per second: the rate it
ended at, the limit it found, the limit the service stated), whatever they are. No token,
nor anything of one, is kept: a budget's figures are the service's, not a credential's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.targets import normalised_url
from haul.state.transactions import atomic

Figures = Mapping[str, float]


class Budgets:
    """The budgets table of one store: (url, org, direction) -> what the budget found."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    def remember(self, url: str, org: str, found: Mapping[str, Figures]) -> None:
        """Keep, for each direction in `found`, its figures in place of the last run's."""
        now = self._clock()
        rows = [
            (normalised_url(url), org, direction, json.dumps(dict(figures)), now)
            for direction, figures in found.items()
        ]
        with atomic(self._db):
            self._db.conn.executemany(
                "INSERT OR REPLACE INTO budgets (url, org, direction, found, updated_at)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def recalled(self, url: str, org: str) -> dict[str, dict[str, float]]:
        """direction -> what the last run against this service and org found (none kept:
        an empty mapping)."""
        rows = self._db.query(
            "SELECT direction, found FROM budgets WHERE url = ? AND org = ?",
            [normalised_url(url), org],
        )
        return {row["direction"]: json.loads(row["found"]) for row in rows}
