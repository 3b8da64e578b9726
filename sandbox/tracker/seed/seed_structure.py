"""Seed an organisation's structure (see :mod:`sandbox.tracker.structure.structure`) deterministically.

Every org gets the system fields and categories.  The source gets custom global fields of every
value kind, local fields per queue, components and versions per queue, and a board with
sprints for its first queues.  The target gets the same global custom fields by key (its
categories have other ids), the local fields of its first queue, and only some of the source's
components and versions, by name under other ids; no boards and no sprints.  An "empty" org
(freshly created) gets the system fields only.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from haul.sandbox.timefmt import format_ms
from haul.sandbox.tracker import system_fields
from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.structure.structure import (
    Board,
    Column,
    Component,
    Field,
    FieldCategory,
    Sprint,
    Structure,
    Version,
)

DAY = 86_400_000
SPRINT_DAYS = 14
BOARD_QUEUES = 3  # the first queues of the source have a board each
ID_BAND = 100_000  # numeric ids of each org's structure start at 1 + band * ID_BAND

# category key, English and Russian names
_CATEGORIES = (("product", "Product", "Продукт"), ("customer", "Customer", "Клиент"))
# key, English name, Russian name, value kind, options (a drop-down when given), category
_GLOBAL_FIELDS = (
    ("customerName", "Customer", "Клиент", "string", (), "customer"),
    ("releaseNotes", "Release notes", "Заметки к релизу", "text", (), "product"),
    ("ticketCount", "Tickets", "Обращений", "integer", (), "customer"),
    ("businessValue", "Business value", "Ценность", "float", (), "product"),
    ("reviewDate", "Review date", "Дата ревью", "date", (), "product"),
    ("deployedAt", "Deployed at", "Выкачено", "datetime", (), "product"),
    ("reviewer", "Reviewer", "Ревьюер", "user", (), "product"),
    ("severity", "Severity", "Серьёзность", "string", ("S1", "S2", "S3", "S4"), "customer"),
)
_LOCAL_FIELDS = (
    ("environment", "Environment", "Окружение", "string", ("prod", "staging", "dev"), "product"),
    ("budget", "Budget", "Бюджет", "float", (), "customer"),
)
_COMPONENTS = ("Backend", "Frontend", "API", "Mobile", "Infra")
_VERSIONS = (("1.0", 0), ("1.1", 240), ("2.0", 480), ("2.1", 720), ("3.0", 960))  # days from start


def seed_structure(org: Org, rng: random.Random, band: int, history_start: int) -> None:
    """Fill ``org.structure`` for its role; ``band`` keeps numeric ids apart across orgs."""
    structure = Structure()
    org.structure = structure
    for kind in ("component", "version", "board", "column", "sprint"):
        structure.next_ids[kind] = 1 + band * ID_BAND
    for system in system_fields.CATEGORIES:
        structure.categories[system.id] = replace(system)
    for field in system_fields.system_fields():
        structure.fields[field.id] = field
    if org.role == "empty":
        return
    _custom_fields(org, structure, rng)
    # the target has every other component and version of the source's, by name
    keep = (lambda n: True) if org.role == "source" else (lambda n: n % 2 == 0)
    lead = org.find_user("alice")
    for queue in org.queues:
        _components(structure, queue, lead.uid if lead else None, keep)
        _versions(structure, queue, history_start, keep)
    if org.role == "source":
        creator = lead.uid if lead else next(iter(org.users))
        for queue in list(org.queues)[:BOARD_QUEUES]:
            _board(org, structure, queue, creator, history_start)


def _custom_fields(org: Org, structure: Structure, rng: random.Random) -> None:
    """The global custom fields (same keys in source and target), and local fields: on every
    queue of the source, on the first queue of the target."""
    categories = _categories(structure, rng)
    first = len(structure.fields) + 1
    for order, (key, en, ru, kind, options, category) in enumerate(_GLOBAL_FIELDS, first):
        field = Field(key, key, en, ru, categories[category], kind, order, options=options)
        structure.fields[key] = field
    queues = list(org.queues) if org.role == "source" else list(org.queues)[:1]
    for queue in queues:
        _local_fields(structure, queue, categories, rng)


def _categories(structure: Structure, rng: random.Random) -> dict[str, str]:
    found = {}
    for order, (key, en, ru) in enumerate(_CATEGORIES, start=10):
        category = FieldCategory(f"{rng.getrandbits(96):024x}", en, ru, f"{en} fields", order * 100)
        structure.categories[category.id] = category
        found[key] = category.id
    return found


def _local_fields(
    structure: Structure, queue: str, categories: dict[str, str], rng: random.Random
) -> None:
    prefix = f"{rng.getrandbits(96):024x}"
    for order, (key, en, ru, kind, options, category) in enumerate(_LOCAL_FIELDS, start=1):
        field_id = f"{prefix}--{key}"
        structure.local_fields[field_id] = Field(
            field_id, key, en, ru, categories[category], kind, order, options=options, queue=queue
        )


def _components(
    structure: Structure, queue: str, lead: int | None, keep: Callable[[int], bool]
) -> None:
    for n, name in enumerate(_COMPONENTS):
        component_id = structure.take("component")
        if keep(n):
            description = f"{name} of {queue}"
            component = Component(component_id, name, queue, description, lead if n == 0 else None)
            structure.components[component_id] = component


def _versions(
    structure: Structure, queue: str, history_start: int, keep: Callable[[int], bool]
) -> None:
    for n, (name, offset) in enumerate(_VERSIONS):
        version_id = structure.take("version")
        if not keep(n):
            continue
        start = history_start + offset * DAY
        structure.versions[version_id] = Version(
            id=version_id,
            queue=queue,
            name=name,
            description=f"{queue} {name}",
            start_date=_day(start),
            due_date=_day(start + 200 * DAY),
            released=n < len(_VERSIONS) - 1,
        )


def _board(org: Org, structure: Structure, queue: str, creator: int, history_start: int) -> None:
    board_id = structure.take("board")
    columns = [
        Column(structure.take("column"), name, statuses)
        for name, statuses in (
            ("Open", ["open"]),
            ("In progress", ["inProgress", "needInfo"]),
            ("Done", ["resolved", "closed"]),
        )
    ]
    name = f"{org.queues[queue].name} board"
    structure.boards[board_id] = Board(
        board_id, name, queue, creator, history_start, history_start, columns
    )
    count = 3 * 365 // SPRINT_DAYS  # the generated history spans three years
    for n in range(count):
        start = history_start + n * SPRINT_DAYS * DAY
        sprint_id = structure.take("sprint")
        structure.sprints[sprint_id] = Sprint(
            id=sprint_id,
            board=board_id,
            name=f"{queue} sprint {n + 1}",
            status="released" if n < count - 1 else "in_progress",
            start_date=_day(start),
            end_date=_day(start + (SPRINT_DAYS - 1) * DAY),
            created_by=creator,
            created_at=start - DAY,
            archived=n < count - 10,
        )


def _day(ms: int) -> str:
    return format_ms(ms)[:10]
