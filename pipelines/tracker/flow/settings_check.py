"""`[model]` statuses and types the staged data does not have: a typo, not a definition.

`start_statuses = ["inProgres"]` would export with no issue ever started (empty cycle times,
exit 0). So before an export writes the flow model, each status key `[model]` lists is looked
for in the staged status dictionary, then (a status since deleted or renamed) in the staged
issues and their changelog; each status type it sets (a default is never questioned) in the
staged dictionary's types. What is found nowhere is named, with the closest staged value
("did you mean"), and the export stops (exit 2); `haul check` says the same as errors. With no status dictionary staged there is
nothing to compare with, and nothing is said.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from haul.pipelines.config import Config
from haul.pipelines.config.model import Model
from haul.pipelines.export.tables import ExportContext
from haul.pipelines.findings import Finding
from haul.state.store import StagingStore

STATUS_KEYS = ("start_statuses", "finish_statuses")
STATUS_TYPES = ("start_types", "finish_types")


def model_problems(context: ExportContext) -> list[str]:
    """One sentence per `[model]` setting that names what the staged data does not have."""
    model = context.config.model if context.config is not None else Model()
    dictionary = context.memo("tracker.model_check.dictionary", _dictionary)
    if not dictionary:
        return []
    problems = []
    for setting in STATUS_KEYS:
        listed: tuple[str, ...] = getattr(model, setting)
        if unknown := [key for key in listed if key not in dictionary]:
            known = context.memo("tracker.model_check.history", _statuses_in_history)
            problems += _named(setting, "status", unknown, {*dictionary, *known})
    types = {kind for kind in dictionary.values() if kind}
    for setting in STATUS_TYPES:
        if setting in model.model_fields_set:
            listed = getattr(model, setting)
            problems += _named(setting, "status type", listed, types)
    return problems


async def model_findings(
    config: Config, client: Any, store: StagingStore | None, side: str, target: Any
) -> list[Finding]:
    """`haul check` on the source, once something is staged: an error per `[model]` value
    the staged data does not have (what would stop `haul export`)."""
    if side != "source" or store is None:
        return []
    return [
        Finding("error", problem, "correct [model] in the config")
        for problem in model_problems(ExportContext(store, config=config))
    ]


def _named(setting: str, what: str, listed: Iterable[str], known: set[str]) -> list[str]:
    missing = [value for value in listed if value not in known]
    return [
        f"[model] {setting}: {value!r} is no {what} of the staged data{_guess(value, known)}"
        f" (the staged ones: {', '.join(sorted(known)) or 'none'})"
        for value in missing
    ]


def _guess(value: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _dictionary(store: StagingStore) -> dict[str, str]:
    """Staged status key -> its type ("" when it has none)."""
    return {
        str(record.raw.get("key")): str(record.raw.get("type") or "")
        for record in store.iter_records("status")
    }


def _statuses_in_history(store: StagingStore) -> frozenset[str]:
    """Every status key a staged issue holds or its changelog moved from or to."""
    found = set()
    for issue in store.iter_records("issue"):
        found.add(_key(issue.raw.get("status")))
    for entry in store.iter_records("changelog"):
        for change in entry.raw.get("fields") or []:
            if isinstance(change, dict) and (change.get("field") or {}).get("id") == "status":
                found.update((_key(change.get("from")), _key(change.get("to"))))
    return frozenset(found - {""})


def _key(ref: object) -> str:
    return str(ref.get("key") or "") if isinstance(ref, dict) else ""
