"""Historic form answers as tracker issues with their original dates (`answers`), their files
under them; each rule's author named by a login or an address (`addresses`), each issue found
again by its `unique` and verified by its fingerprint (`prints`).

The answers are staged by the forms service's extract; this layer plans and loads them.
"""

from __future__ import annotations

from haul.pipelines.services import Entity
from haul.pipelines.tracker.backfill.answers import tracker_plans
from haul.pipelines.tracker.layer import Layer

BACKFILL = Layer(
    "backfill",
    entities=(
        Entity("backfill_queue", staged="survey", optional=True),
        Entity("backfill_issue", staged="survey_answer", optional=True),
        Entity("backfill_attachment", staged="survey_file", optional=True),
    ),
    plans=tracker_plans,
)
