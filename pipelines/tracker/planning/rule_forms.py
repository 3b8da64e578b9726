"""How a trigger or macro is written, as the tracker's v3 reference writes it, and read back.

A macro's field changes are read as ``fieldChanges``, a list of ``{field, set | add |
remove}`` (or ``value``, as older replies name a set), and written as the v3 reference writes
them (yandex.ru/support/tracker/en/post-macros): ``issueUpdate``, one object of field changes,
each field's operators under its id. A service that follows that page drops or refuses the
list form.

A ``Transition`` action names its status by key: a read gives the status's reference
(``{self, id, key, display}``), whose id is the source's own.
"""

from __future__ import annotations

from typing import Any

Record = dict[str, Any]
VERBS = ("set", "add", "remove")


def written(entity: str, settings: Record) -> Record:
    """The body that writes `settings` (as a read gives them): a macro's field changes as
    `issueUpdate`; a trigger as it is."""
    if entity != "macro" or "fieldChanges" not in settings:
        return settings
    body = {name: value for name, value in settings.items() if name != "fieldChanges"}
    body["issueUpdate"] = issue_update(settings["fieldChanges"] or [])
    return body


def issue_update(changes: list[Any]) -> Record:
    """`fieldChanges` as `issueUpdate`: ``[{"field": "tags", "add": ["x"]}]`` is
    ``{"tags": {"add": ["x"]}}``; a field named twice keeps every operator."""
    update: Record = {}
    for change in changes:
        if not isinstance(change, dict) or not isinstance(change.get("field"), str):
            continue
        operators = {verb: change[verb] for verb in VERBS if verb in change}
        if "value" in change and "set" not in operators:
            operators["set"] = change["value"]
        update.setdefault(change["field"], {}).update(operators)
    return update


def status_by_key(item: Any) -> Any:
    """A `Transition` action with its status as a key (a reference's ``key``)."""
    if not isinstance(item, dict) or item.get("type") != "Transition":
        return item
    status = item.get("status")
    if isinstance(status, dict) and status.get("key"):
        return {**item, "status": status["key"]}
    return item
