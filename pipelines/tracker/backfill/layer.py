"""Historic form answers as tracker issues with their original dates (`answers`), their files
under them; each rule's author named by a login or an address (`addresses`: also what `haul
check` warns of, an author who falls to the default user); each issue found again by its
`unique` and verified by its fingerprint (`prints`).

The answers are staged by the forms service's extract; this layer plans and loads them.
"""

from __future__ import annotations

from haul.pipelines.services import Entity
from haul.pipelines.tracker.backfill.addresses import backfill_authors
from haul.pipelines.tracker.backfill.answers import TrackerBackfill, tracker_plans
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.target import TrackerTarget


async def backfill_target(target: TrackerTarget) -> TargetPart:
    """The back-fills into the tracker, their preflight passed (before any write); the
    authors that fell back to the default user are named with the unmapped users."""
    users, dictionaries = target.transform.users, target.transform.dictionaries
    backfill = TrackerBackfill(target.client, target.store, target.config,
                               users.target_logins, dictionaries.target_ids)  # fmt: skip
    if not target.read_only:
        backfill.preflight()
    return TargetPart(backfill.specs(), unmapped_users=lambda: backfill.defaulted)


BACKFILL = Layer(
    "backfill",
    entities=(
        Entity("backfill_queue", staged="survey", optional=True),
        Entity("backfill_issue", staged="survey_answer", optional=True),
        Entity("backfill_attachment", staged="survey_file", optional=True),
    ),
    plans=tracker_plans,
    checks=backfill_authors,
    target=backfill_target,
)
