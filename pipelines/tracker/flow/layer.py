"""The analysts' model of how work flowed, derived from the staged issues and their changelog:
status intervals, field history, a daily snapshot, cycle times (`tables`, over the per-issue
model of `model`) and weekly flow metrics (`weekly`). Export tables only: it loads nothing.
"""

from __future__ import annotations

from dataclasses import replace

from haul.pipelines.tracker.flow.forecast import FLOW_FORECAST
from haul.pipelines.tracker.flow.info import MODEL_INFO
from haul.pipelines.tracker.flow.report import FLOW_PAGE
from haul.pipelines.tracker.flow.settings_check import model_findings, model_problems
from haul.pipelines.tracker.flow.sprints import SPRINT_ISSUE_HISTORY, SPRINT_SUMMARY
from haul.pipelines.tracker.flow.tables import (
    CYCLE_TIMES,
    ISSUE_DAILY,
    ISSUE_FIELD_HISTORY,
    STATUS_INTERVALS,
)
from haul.pipelines.tracker.flow.weekly import FLOW_WEEKLY
from haul.pipelines.tracker.layer import Layer

TABLES = tuple(
    replace(table, settings_check=model_problems)  # each follows [model]'s definitions
    for table in (
        STATUS_INTERVALS, ISSUE_FIELD_HISTORY, ISSUE_DAILY, CYCLE_TIMES, FLOW_WEEKLY, MODEL_INFO,
        SPRINT_ISSUE_HISTORY, SPRINT_SUMMARY, FLOW_FORECAST,
    )
)  # fmt: skip

FLOW = Layer(
    "flow", tables=TABLES, checks=model_findings, pages=(FLOW_PAGE,)
)  # flow.html beside the tables
