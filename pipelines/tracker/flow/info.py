"""model_info: what the flow model stands as of, and every definition it followed, so a file
read months later says how its figures were made."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import time
from typing import Any

from haul.pipelines.config.types import WEEKDAYS
from haul.pipelines.export.columns import value
from haul.pipelines.export.tables import Derived, ExportContext, Table
from haul.pipelines.tracker.flow.tables import SERVICE, FlowSettings


def model_facts(flow: FlowSettings) -> dict[str, Any]:
    """Setting -> the value the model followed (the calendar as resolved, [export]'s keys
    standing in where [model] says nothing)."""
    calendar, model = flow.calendar, flow.model
    return {
        "as_of": flow.now.isoformat(timespec="milliseconds"),
        "export_day": flow.export_day.isoformat(),
        "timezone": str(calendar.zone),
        "work_days": [WEEKDAYS[day] for day in sorted(calendar.days)],
        "work_hours": f"{calendar.start:%H:%M}-{_end_text(calendar.end)}",
        "holidays": model.holidays,
        "holidays_file": str(model.holidays_file) if model.holidays_file else None,
        "start_statuses": list(model.start_statuses),
        "start_types": list(model.start_types),
        "finish_statuses": list(model.finish_statuses),
        "finish_types": list(model.finish_types),
        "cycle": model.cycle,
        "daily_since": flow.daily_since.isoformat() if flow.daily_since else None,
        "daily_after_end_days": model.daily_after_end_days,
        "forecast_days": model.forecast_days,
        "forecast_items": model.forecast_items,
    }


def derive_model_info(context: ExportContext) -> Iterator[Derived]:
    """One row per setting."""
    facts = model_facts(FlowSettings.of(context))
    rows = [
        {"setting": name, "value": None if data is None else _text(data)}
        for name, data in facts.items()
    ]
    yield Derived("model", context.store.newest_staged_at() or "", rows)


def _end_text(end: time) -> str:
    return "24:00" if end == time.max else f"{end:%H:%M}"


def _text(data: Any) -> str:
    return data if isinstance(data, str) else json.dumps(data)


MODEL_INFO = Table("model_info", "changelog", (
    value("setting", "string", "the setting: as_of, timezone, work_days, work_hours, holidays, "
          "start_statuses, finish_types, cycle, daily_since, ...", "setting"),
    value("value", "string", "its value (a list as JSON; empty: not set)", "value"),
), doc="the instant the model stands as of and every definition it followed ([model], with "
       "[export]'s calendar keys where [model] has none)",
   service=SERVICE, derive=derive_model_info)  # fmt: skip
