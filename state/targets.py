"""The target a store loaded: each service's API root and org, recorded by the first command
that writes to it (before its first write), so that no command sends this store's records, or
its undo, to another org.

A store's ledger holds target ids that mean something in one org only: loaded again into
another, its `done` rows would be skipped there; undone in another, every DELETE would find
nothing and count as gone. `claim` is asked before a command writes: the first claim records
the target (a store written before targets were recorded adopts the one it is next written
with), a later one with another target is refused (the caller says so and stops).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from sqlite_utils import Database

from haul.state.clock import Clock, utc_now
from haul.state.transactions import atomic

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Target:
    """One service of a target org: its API root, the org setting's name and its value."""

    url: str
    org_key: str  # org_id or cloud_org_id: the header the org travels in
    org: str

    def normalised(self) -> Target:
        """The same target spelled one way: scheme and host in lower case, no default port,
        no trailing slash."""
        return Target(normalised_url(self.url), self.org_key, self.org)

    def __str__(self) -> str:
        return f"{self.url} with {self.org_key} {self.org}"


def normalised_url(url: str) -> str:
    """`url` as one spelling: `HTTP://Host:80/v3/` and `http://host/v3` are one target."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{parts.port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), parts.query, ""))


Mismatch = tuple[Target, Target]  # (recorded, wanted)


class Targets:
    """The targets table of one store: service -> the target it loaded."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    def recorded(self) -> dict[str, Target]:
        """service -> the target the store recorded for it."""
        rows = self._db.query("SELECT service, url, org_key, org FROM targets ORDER BY service")
        return {row["service"]: Target(row["url"], row["org_key"], row["org"]) for row in rows}

    def claim(self, wanted: Mapping[str, Target], *, record: bool = True) -> dict[str, Mismatch]:
        """Record each service's target the store does not know yet, and return {}; or, when
        a service's recorded target is another, record nothing and return, for each such
        service, (recorded, wanted). `record` False only compares (a dry run)."""
        asked = {service: target.normalised() for service, target in wanted.items()}
        with atomic(self._db):
            known = self.recorded()
            differ = {
                service: (known[service], target)
                for service, target in asked.items()
                if service in known and known[service] != target
            }
            if differ or not record:
                return differ
            now = self._clock()
            self._db.conn.executemany(
                "INSERT INTO targets (service, url, org_key, org, recorded_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (service, target.url, target.org_key, target.org, now)
                    for service, target in asked.items()
                    if service not in known
                ],
            )
        return {}
