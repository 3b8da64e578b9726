"""In-memory state of an organisation's planning layer: entities (projects, portfolios, goals)
with their comments, checklists, attachments, links, permissions and history; saved filters;
dashboards with widgets; remote links on issues; queue autoactions; temporary uploads.

It rides on the :class:`~sandbox.tracker.model.Org` it belongs to (see :func:`planning_of`), so
the issue model knows nothing of it.  A seeded organisation's planning layer is drawn on first
access (:mod:`sandbox.tracker.seed.seed_planning`); an issue's remote links are drawn on the first
read of that issue's list, from the issue's own RNG, as its other records are.  Numeric ids
start at ``1 + band * ID_BAND`` so an id copied across organisations is unknown there.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from haul.sandbox.tracker.blobs import Blob
from haul.sandbox.tracker.model import Org

ID_BAND = 10_000_000  # above every id drawn for a generated record (remote links: 4 per issue)
BANDS = {"source": 0, "target": 1, "empty": 2}
ENTITY_TYPES = ("project", "portfolio", "goal")
LEVELS = ("READ", "WRITE", "GRANT")
ROLES = ("AUTHOR", "OWNER", "CLIENT", "FOLLOWER", "MEMBER")


@dataclass(slots=True)
class Holders:
    """Who holds one access level: users (uids), groups (ids) and roles."""

    users: set[int] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    roles: set[str] = field(default_factory=set)


def default_acl() -> dict[str, Holders]:
    return {
        "READ": Holders(roles={"AUTHOR", "OWNER", "CLIENT", "FOLLOWER", "MEMBER"}),
        "WRITE": Holders(roles={"AUTHOR", "OWNER", "MEMBER"}),
        "GRANT": Holders(roles={"AUTHOR", "OWNER"}),
    }


@dataclass(slots=True)
class EntityComment:
    id: int
    long_id: str
    text: str
    created_by: int
    created_at: int
    updated_by: int
    updated_at: int
    summonees: tuple[int, ...] = ()
    version: int = 1


@dataclass(slots=True)
class EntityChecklistItem:
    id: str
    text: str
    checked: bool = False
    assignee: int | None = None
    deadline: int | None = None


@dataclass(slots=True)
class StoredFile:
    """A file: a temporary upload until attached, then one of an entity's attachments."""

    id: str
    name: str
    mimetype: str
    blob: Blob
    created_by: int
    created_at: int

    @property
    def size(self) -> int:
        return self.blob.size


@dataclass(frozen=True, slots=True)
class EntityLink:
    """A link stored once, as created from ``source`` (an entity id) to an entity or issue."""

    id: int
    source: str
    relationship: str  # as seen from the source
    target: str  # an entity id, or an issue key when ``to_issue``
    to_issue: bool
    created_by: int
    created_at: int


@dataclass(frozen=True, slots=True)
class Change:
    field: str
    diff: str


@dataclass(frozen=True, slots=True)
class EntityEvent:
    id: str
    kind: str  # display: "Entity created", "Entity updated", "Comment added", ...
    author: int
    at: int
    changes: tuple[Change, ...] = ()


@dataclass(slots=True)
class Entity:
    id: str
    short_id: int
    type: str
    summary: str
    created_by: int
    created_at: int
    updated_at: int
    author: int
    status: str
    description: str | None = None
    lead: int | None = None
    start: int | None = None
    end: int | None = None
    parent: str | None = None  # primary parent: a portfolio (projects, portfolios) or a goal
    secondary: tuple[str, ...] = ()  # further portfolios of a project or portfolio
    team: tuple[int, ...] = ()
    clients: tuple[int, ...] = ()
    followers: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    team_access: bool = False
    key_results: tuple[dict, ...] = ()  # a goal's keyResultItems, as given
    version: int = 1
    comments: list[EntityComment] = field(default_factory=list)
    checklist: list[EntityChecklistItem] = field(default_factory=list)
    attachments: list[StoredFile] = field(default_factory=list)
    events: list[EntityEvent] = field(default_factory=list)
    acl: dict[str, Holders] = field(default_factory=default_acl)


@dataclass(slots=True)
class SavedFilter:
    id: int
    name: str
    owner: int
    created_at: int
    query: str | None = None
    filter: dict | None = None


@dataclass(slots=True)
class Widget:
    id: int
    dashboard: int
    description: str
    query: str | None
    from_statuses: tuple[str, ...]
    to_statuses: tuple[str, ...]
    mode: str | None
    created_by: int
    created_at: int
    extra: dict = field(default_factory=dict)  # start, end, autoUpdatable, ... echoed
    type: str = "cycleTime"


@dataclass(slots=True)
class Dashboard:
    id: int
    name: str
    layout: str
    owner: int
    created_by: int
    created_at: int
    widgets: list[Widget] = field(default_factory=list)
    version: int = 1


@dataclass(frozen=True, slots=True)
class Application:
    id: str
    name: str
    type: str
    base_url: str  # where an object of the application lives: base_url + key


@dataclass(frozen=True, slots=True)
class RemoteLink:
    id: int
    issue: str
    application: str
    key: str
    type: str  # link type id
    direction: str
    created_by: int
    created_at: int


@dataclass(frozen=True, slots=True)
class RunOutcome:
    issue: str
    status: str  # "success" or "failure"


@dataclass(frozen=True, slots=True)
class AutoActionRun:
    id: str
    launched_at: int
    hits: int
    outcomes: tuple[RunOutcome, ...]


@dataclass(slots=True)
class AutoAction:
    id: int
    queue: str
    name: str
    actions: list
    created_at: int
    updated_at: int
    filter: object = None
    query: str | None = None
    active: bool = True
    enable_notifications: bool = False
    interval_millis: int = 3_600_000
    calendar: dict | None = None
    runs: list[AutoActionRun] = field(default_factory=list)
    version: int = 1


# the external applications every organisation can link issues to
APPLICATIONS = {
    app.id: app
    for app in (
        Application("ru.yandex.github", "GitHub", "github", "https://github.com/"),
        Application("ru.yandex.gitlab", "GitLab", "gitlab", "https://gitlab.example.org/"),
        Application("ru.yandex.jenkins", "Jenkins", "jenkins", "https://ci.example.org/job/"),
        Application("ru.yandex.wiki", "Wiki", "wiki", "https://wiki.example.org/"),
        Application("ru.yandex.forms", "Forms", "forms", "https://forms.example.org/"),
    )
}

RemoteLinksFactory = Callable[[Org, str], list[RemoteLink]]


@dataclass
class Planning:
    """One organisation's planning layer."""

    band: int
    entities: dict[str, Entity] = field(default_factory=dict)
    links: dict[int, EntityLink] = field(default_factory=dict)
    filters: dict[int, SavedFilter] = field(default_factory=dict)
    dashboards: dict[int, Dashboard] = field(default_factory=dict)
    autoactions: dict[int, AutoAction] = field(default_factory=dict)
    temp_files: dict[str, StoredFile] = field(default_factory=dict)
    next_ids: dict[str, int] = field(default_factory=dict)
    remote_links_factory: RemoteLinksFactory | None = None  # a generated issue's, on first read
    id_rng: random.Random | None = None  # set while seeding: hex ids drawn from it, not at random
    _remote_links: dict[str, list[RemoteLink]] = field(default_factory=dict)
    _seeder: Callable[[Org, Planning], None] | None = None

    def take(self, kind: str) -> int:
        value = self.next_ids.get(kind, 1 + self.band * ID_BAND)
        self.next_ids[kind] = value + 1
        return value

    def find_entity(self, kind: str, ref: str) -> Entity | None:
        """An entity of ``kind`` by its id or its shortId."""
        found = self.entities.get(ref)
        if found is None and ref.isdigit():
            found = next(
                (e for e in self.entities.values() if e.type == kind and e.short_id == int(ref)),
                None,
            )
        return found if found is not None and found.type == kind else None

    def links_of(self, entity_id: str) -> list[EntityLink]:
        return [
            link
            for link in self.links.values()
            if link.source == entity_id or (not link.to_issue and link.target == entity_id)
        ]

    def remote_links(self, org: Org, key: str) -> list[RemoteLink]:
        """The issue's remote links: a generated issue's drawn on first read, then as edited."""
        found = self._remote_links.get(key)
        if found is None:
            issue = org.issues.get(key)
            draw = self.remote_links_factory
            generated = issue is not None and issue.generated and draw is not None
            found = draw(org, key) if generated and draw is not None else []
            self._remote_links[key] = found
        return found

    def file(self, file_id: str) -> StoredFile | None:
        """A temporary upload or an attached file, by id."""
        if file_id in self.temp_files:
            return self.temp_files[file_id]
        for entity in self.entities.values():
            for stored in entity.attachments:
                if stored.id == file_id:
                    return stored
        return None


_ATTRIBUTE = "planning"


def planning_of(org: Org) -> Planning:
    """The org's planning layer, seeded on first access if a seeder was attached to it.

    It is kept as an attribute of the org of its own (``Org`` is a plain dataclass), so the
    issue model stays unaware of the planning layer.
    """
    state = vars(org)
    found = state.get(_ATTRIBUTE)
    if found is None:
        found = state[_ATTRIBUTE] = Planning(BANDS.get(org.role, 3))
    if found._seeder is not None:
        seeder, found._seeder = found._seeder, None
        seeder(org, found)
    return found


def attach_seeder(org: Org, seeder: Callable[[Org, Planning], None]) -> None:
    """Draw the org's planning layer with ``seeder`` when it is first asked for."""
    planning = Planning(BANDS.get(org.role, 3))
    planning._seeder = seeder
    vars(org)[_ATTRIBUTE] = planning
