"""The fixed vocabulary every generated tracker organisation shares: dictionaries, link types,
queues, sizes (the people, shared by all three services, are in :mod:`sandbox.people`).

Organisations differ in numeric ids (dictionary ids, queue ids), never in keys,
so a loader has to map by key, as it must against the real service.
"""

from __future__ import annotations

from haul.sandbox.tracker.model import LinkType

# key, English name, Russian name, status type
STATUSES = (
    ("open", "Open", "Открыт", "new"),
    ("inProgress", "In progress", "В работе", "inProgress"),
    ("needInfo", "Need info", "Требуется информация", "paused"),
    ("resolved", "Resolved", "Решён", "done"),
    ("closed", "Closed", "Закрыт", "done"),
)
ISSUE_TYPES = (
    ("bug", "Bug", "Ошибка"),
    ("task", "Task", "Задача"),
    ("epic", "Epic", "Эпик"),
    ("story", "Story", "История"),
)
PRIORITIES = (
    ("blocker", "Blocker", "Блокер"),
    ("critical", "Critical", "Критичный"),
    ("normal", "Normal", "Средний"),
    ("minor", "Minor", "Низкий"),
    ("trivial", "Trivial", "Незначительный"),
)
RESOLUTIONS = (
    ("fixed", "Fixed", "Решён"),
    ("wontFix", "Won't fix", "Не будет исправлено"),
    ("duplicate", "Duplicate", "Дубликат"),
    ("invalid", "Invalid", "Некорректный"),
    ("later", "Later", "Отложено"),
)
# values an organisation's admins added; a freshly created organisation lacks them
CUSTOM_STATUSES = (
    ("inReview", "In review", "На ревью", "inProgress"),
    ("cancelled", "Cancelled", "Отменён", "cancelled"),  # seeded histories cancel and reopen
)
CUSTOM_ISSUE_TYPES = (("incident", "Incident", "Инцидент"),)
CUSTOM_RESOLUTIONS = (("cantReproduce", "Can't reproduce", "Не воспроизводится"),)
LINK_TYPES = {
    lt.id: lt
    for lt in (
        LinkType("relates", "relates", "relates"),
        LinkType("depends", "is dependent by", "depends on"),
        LinkType("subtask", "is subtask for", "is parent task for"),
        LinkType("duplicates", "duplicates", "is duplicated by"),
        LinkType("epic", "is epic of", "has epic"),
        LinkType("clone", "original", "clone"),
    )
}
# relationship verb of the link import -> (link type, direction as seen from the importing issue)
RELATIONSHIPS = {
    "relates": ("relates", "outward"),
    "depends on": ("depends", "outward"),
    "is dependent by": ("depends", "inward"),
    "is parent task for": ("subtask", "outward"),
    "is subtask for": ("subtask", "inward"),
    "is duplicated by": ("duplicates", "outward"),
    "duplicates": ("duplicates", "inward"),
    "has epic": ("epic", "outward"),
    "is epic of": ("epic", "inward"),
    "clone": ("clone", "outward"),
    "original": ("clone", "inward"),
}
# key, name, default issue type; the first three exist in every size
QUEUES = (
    ("TEST", "Testing", "task"),
    ("DEV", "Development", "bug"),
    ("OPS", "Операции", "task"),
    ("SUP", "Support", "bug"),
    ("DOC", "Documentation", "task"),
    ("WEB", "Web", "story"),
    ("DATA", "Data", "task"),
    ("INFRA", "Infrastructure", "task"),
)
EXTRA_TARGET_QUEUE = ("NEW", "New home", "task")
SIZES = {"tiny": (50, 3), "small": (1_000, 5), "medium": (10_000, 8), "large": (100_000, 8)}
BIG_ATTACHMENTS = {"tiny": 1, "small": 4, "medium": 8, "large": 16}
