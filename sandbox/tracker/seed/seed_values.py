"""The structure-related values of generated issues: components, versions, sprints, custom
field values, planning dates, estimates, story points, votes, favourites, access lists and
mail lists.

Drawn on first access from the issue's own RNG (seed and key), so they cost nothing at start-up
and leave every value drawn for the headers as it was.  A realistic share of issues carries
each; most carry few.
"""

from __future__ import annotations

import random
from bisect import bisect_right

from haul.sandbox.timefmt import format_duration, format_ms, parse_instant
from haul.sandbox.tracker.model import Issue, Org
from haul.sandbox.tracker.structure.structure import Field

HOUR = 3_600_000
DAY = 24 * HOUR
_POINTS = (1.0, 2.0, 3.0, 5.0, 8.0, 13.0)
_MAILLISTS = ("support@example.com", "releases@example.com", "oncall@example.com")
_CUSTOMERS = ("Acme", "Globex", "Initech", "Umbrella", "Ромашка", "株式会社")

Pairs = tuple[tuple[str, object], ...]


class IssueValues:
    """Draws the values for issues of one organisation (indexes its structure once)."""

    def __init__(self, org: Org) -> None:
        self.seed = org.seed
        structure = org.structure
        self.people = sorted(org.users)
        self.components: dict[str, list[int]] = {}
        for component in structure.components.values():
            self.components.setdefault(component.queue, []).append(component.id)
        self.versions: dict[str, list[int]] = {}
        for version in structure.versions.values():
            self.versions.setdefault(version.queue, []).append(version.id)
        self.sprints: dict[str, tuple[list[int], list[int]]] = {}  # queue -> (starts, ids)
        for sprint in structure.sprints.values():
            queue = structure.boards[sprint.board].queue or ""
            starts, ids = self.sprints.setdefault(queue, ([], []))
            starts.append(parse_instant(f"{sprint.start_date}T00:00:00.000+0000") or 0)
            ids.append(sprint.id)
        self.custom = [f for f in structure.fields.values() if not f.system]
        self.local: dict[str, list[Field]] = {}
        for local in structure.local_fields.values():
            self.local.setdefault(local.queue or "", []).append(local)

    def for_issue(self, issue: Issue) -> tuple[Pairs, Pairs]:
        """The values of a generated issue, from its own RNG (so in any order of first reads)."""
        rng = random.Random(f"values:{self.seed}:{issue.key}")
        return self.draw(issue.queue, issue.type, issue.created_at, issue.updated_at, rng)

    def draw(
        self, queue: str, kind: str, created: int, updated: int, rng: random.Random
    ) -> tuple[Pairs, Pairs]:
        """``(extra, refs)`` of one issue: echoed values, and ids rendered as refs on read."""
        extra: list[tuple[str, object]] = []
        refs: list[tuple[str, object]] = []
        if rng.random() < 0.3:
            estimate = rng.randrange(1, 40) * HOUR
            extra.append(("originalEstimation", format_duration(estimate)))
            extra.append(("estimation", format_duration(rng.randrange(0, 2) * estimate)))
        if kind in ("story", "task") and rng.random() < 0.35:
            extra.append(("storyPoints", rng.choice(_POINTS)))
        if rng.random() < 0.25:
            extra.append(("deadline", _day(created + rng.randrange(1, 60) * DAY)))
        if rng.random() < 0.2:
            start = rng.randrange(created, updated + 1)
            extra.append(("start", _day(start)))
            extra.append(("end", _day(start + rng.randrange(1, 30) * DAY)))
        self._refs(refs, queue, kind, created, rng)
        fields = (*self.custom, *self.local.get(queue, ()))
        bits = rng.getrandbits(4 * len(fields))  # one draw: 4 bits a field, 5 in 16 (~30%) set
        for field in fields:
            if bits & 15 < 5:
                refs.append((field.id, self._value(field, created, updated, rng)))
            bits >>= 4
        if rng.random() < 0.05:  # drawn last, so every value above stays as it was
            extra.append(("followingMaillists", tuple(rng.sample(_MAILLISTS, rng.randrange(1, 3)))))
        return tuple(extra), tuple(refs)

    def _refs(self, refs: list, queue: str, kind: str, created: int, rng: random.Random) -> None:
        components = self.components.get(queue)
        if components and rng.random() < 0.4:
            refs.append(("components", tuple(rng.sample(components, rng.randrange(1, 3)))))
        versions = self.versions.get(queue)
        if versions and rng.random() < 0.3:
            refs.append(("fixVersions", (rng.choice(versions),)))
        if versions and kind == "bug" and rng.random() < 0.4:
            refs.append(("affectedVersions", (rng.choice(versions),)))
        sprints = self.sprints.get(queue)
        if sprints and rng.random() < 0.35:
            starts, ids = sprints
            index = max(0, bisect_right(starts, created) - 1)
            refs.append(("sprint", (ids[min(index + rng.randrange(0, 2), len(ids) - 1)],)))
        for name, share in (("votedBy", 0.15), ("favoritedBy", 0.1), ("access", 0.05)):
            if rng.random() < share:
                refs.append((name, tuple(rng.sample(self.people, rng.randrange(1, 4)))))

    def _value(self, field: Field, created: int, updated: int, rng: random.Random) -> object:
        kind = field.kind
        if field.options:
            return rng.choice(field.options)
        if kind == "string":
            return rng.choice(_CUSTOMERS)
        if kind == "text":
            return f"Shipped in build {rng.randrange(100, 999)}.\n\n- fixes\n- notes"
        if kind == "integer":
            return rng.randrange(0, 500)
        if kind == "float":
            return round(rng.uniform(0, 10_000), 2)
        if kind == "user":
            return rng.choice(self.people)
        moment = rng.randrange(created, updated + 1)
        return _day(moment) if kind == "date" else format_ms(moment)


_DAYS: dict[int, str] = {}


def _day(ms: int) -> str:
    """The UTC date of ``ms``, cached: a few years of history are a few thousand dates."""
    day = ms // DAY
    found = _DAYS.get(day)
    if found is None:
        found = _DAYS[day] = format_ms(day * DAY)[:10]
    return found
