"""The system fields and categories every organisation comes with, as ``GET /fields`` lists them.

Ids and keys are the service's; category ids are fixed and the same in every organisation.
Types are the service's as its own export gives them (the vendor's importer's sample
``global_fields.yaml``): a moment (``createdAt``, ``updatedAt``, ``resolvedAt``, ...) is a
``datetime``, a day (``deadline``, ``start``, ``end``) a ``date``, ``description`` a ``text``.
"""

from __future__ import annotations

from haul.sandbox.tracker.structure.structure import Field, FieldCategory

SYSTEM = "0000000000000001aaaa0001"
TIME = "0000000000000002aaaa0002"
AGILE = "0000000000000003aaaa0003"
EMAIL = "0000000000000004aaaa0004"
CATEGORIES = (
    FieldCategory(SYSTEM, "System", "Системные", "Fields every issue has", 100),
    FieldCategory(TIME, "Time tracking", "Учёт времени", "Estimates and time spent", 200),
    FieldCategory(AGILE, "Agile", "Agile", "Boards, sprints and points", 300),
    FieldCategory(EMAIL, "Email", "Почтовые", "Mail the issue came from", 400),
)

# id, English name, Russian name, schema type, array item type, readonly, category
_ROWS = (
    ("summary", "Summary", "Задача", "string", None, False, SYSTEM),
    ("description", "Description", "Описание", "text", None, False, SYSTEM),
    ("key", "Key", "Ключ", "string", None, True, SYSTEM),
    ("queue", "Queue", "Очередь", "queue", None, False, SYSTEM),
    ("status", "Status", "Статус", "status", None, True, SYSTEM),
    ("previousStatus", "Previous status", "Предыдущий статус", "status", None, True, SYSTEM),
    ("statusStartTime", "Status start time", "Начало статуса", "datetime", None, True, SYSTEM),
    ("statusType", "Status type", "Тип статуса", "statusType", None, True, SYSTEM),
    ("type", "Type", "Тип", "issuetype", None, False, SYSTEM),
    ("priority", "Priority", "Приоритет", "priority", None, False, SYSTEM),
    ("resolution", "Resolution", "Резолюция", "resolution", None, True, SYSTEM),
    ("resolvedAt", "Resolved", "Решена", "datetime", None, True, SYSTEM),
    ("resolvedBy", "Resolved by", "Кем решена", "user", None, True, SYSTEM),
    ("assignee", "Assignee", "Исполнитель", "user", None, False, SYSTEM),
    ("author", "Reporter", "Автор", "user", None, False, SYSTEM),
    ("createdBy", "Created by", "Создатель", "user", None, True, SYSTEM),
    ("createdAt", "Created", "Создана", "datetime", None, True, SYSTEM),
    ("updatedBy", "Updated by", "Изменил", "user", None, True, SYSTEM),
    ("updatedAt", "Updated", "Обновлена", "datetime", None, True, SYSTEM),
    ("followers", "Followers", "Наблюдатели", "array", "user", False, SYSTEM),
    ("access", "Access", "Доступ", "array", "user", False, SYSTEM),
    ("tags", "Tags", "Теги", "array", "string", False, SYSTEM),
    ("components", "Components", "Компоненты", "array", "component", False, SYSTEM),
    ("fixVersions", "Fix versions", "Исправить в версиях", "array", "version", False, SYSTEM),
    (
        "affectedVersions",
        "Affected versions",
        "Затронутые версии",
        "array",
        "version",
        False,
        SYSTEM,
    ),
    ("parent", "Parent issue", "Родительская задача", "issue", None, False, SYSTEM),
    ("epic", "Epic", "Эпик", "issue", None, False, AGILE),
    ("aliases", "Aliases", "Алиасы", "array", "string", False, SYSTEM),
    ("unique", "Unique", "Уникальный ключ", "string", None, True, SYSTEM),
    ("votes", "Votes", "Голоса", "integer", None, True, SYSTEM),
    ("votedBy", "Voted by", "Проголосовали", "array", "user", True, SYSTEM),
    ("favoritedBy", "Favorited by", "В избранном у", "array", "user", True, SYSTEM),
    ("deadline", "Deadline", "Дедлайн", "date", None, False, SYSTEM),
    ("start", "Start", "Начало", "date", None, False, SYSTEM),
    ("end", "End", "Конец", "date", None, False, SYSTEM),
    ("lastCommentUpdatedAt", "Commented", "Прокомментирована", "datetime", None, True, SYSTEM),
    (
        "commentWithoutExternalMessageCount",
        "Comments",
        "Комментарии",
        "integer",
        None,
        True,
        SYSTEM,
    ),
    ("commentWithExternalMessageCount", "Mail comments", "Письма", "integer", None, True, EMAIL),
    (
        "descriptionRenderType",
        "Description markup",
        "Разметка описания",
        "string",
        None,
        False,
        SYSTEM,
    ),
    ("pendingReplyFrom", "Pending reply from", "Ожидает ответа от", "array", "user", False, SYSTEM),
    (
        "originalEstimation",
        "Original estimate",
        "Первоначальная оценка",
        "duration",
        None,
        False,
        TIME,
    ),
    ("estimation", "Estimate", "Оценка", "duration", None, False, TIME),
    ("spent", "Time spent", "Затраченное время", "duration", None, True, TIME),
    ("storyPoints", "Story points", "Story Points", "float", None, False, AGILE),
    ("sprint", "Sprint", "Спринт", "array", "sprint", False, AGILE),
    ("boards", "Boards", "Доски", "array", "board", True, AGILE),
    ("emailFrom", "Email from", "Письмо от", "string", None, True, EMAIL),
    ("emailTo", "Email to", "Письмо кому", "array", "string", True, EMAIL),
    ("emailCc", "Email copy", "Копия", "array", "string", True, EMAIL),
    ("emailCreatedBy", "Created by email", "Создана письмом", "string", None, True, EMAIL),
    ("followingMaillists", "Following mail lists", "Рассылки", "array", "string", False, EMAIL),
    # read by real clients (tracker-exporter asks for them; an importer sends them back)
    ("qaEngineer", "QA engineer", "QA-инженер", "user", None, False, SYSTEM),
    ("project", "Project", "Проект", "project", None, False, SYSTEM),
    ("checklistItems", "Checklist", "Чеклист", "array", "checklistItem", False, SYSTEM),
    ("checklistDone", "Checklist items done", "Выполнено пунктов", "integer", None, True, SYSTEM),
    ("checklistTotal", "Checklist items", "Всего пунктов", "integer", None, True, SYSTEM),
)


REQUIRED = frozenset({"summary", "queue"})  # what an issue cannot be made without


def system_fields() -> list[Field]:
    """A fresh list of the system fields, in their display order."""
    return [
        Field(
            id=row[0],
            key=row[0],
            name_en=row[1],
            name_ru=row[2],
            category=row[6],
            kind=row[3],
            items=row[4],
            readonly=row[5],
            required=row[0] in REQUIRED,
            order=order,
            system=True,
        )
        for order, row in enumerate(_ROWS, start=1)
    ]


SYSTEM_FIELD_IDS = frozenset(row[0] for row in _ROWS)
