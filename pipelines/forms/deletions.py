"""Survey answers deleted at the source (a person may restore them): found and listed.

An answer stream reads only answers after its checkpoint, so a deleted one would go unseen.
At the end of each survey's answers, the survey's own count (one read) is compared with the
answers staged and not known deleted; only when they differ are the survey's answer ids
listed: each staged answer missing there becomes a `survey_answer_deleted` record, and one
listed again (restored) loses its record. The staged answer itself stays (exports keep the
history; a tracker back-fill reads it as before). `haul status` and the run report list the
deletions; with `[sync] deletions = "mirror"` a wiki grid back-fill leaves their rows out
(`answers_of(..., without_deleted=True)`). The tracker's API deletes no issue, so an issue
back-filled from a deleted answer stays, listed.
"""

from __future__ import annotations

from datetime import UTC, datetime

import structlog

from haul.connectors.forms import FormsClient
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

DELETED = "survey_answer_deleted"  # the staged entity, keyed "survey_answer:<answer id>"


def deleted_answers(store: StagingStore, survey: str) -> set[str]:
    """The staged ids (``<survey>/<answer>``) of the survey's answers deleted at the source."""
    return {str(record.raw["source_id"]) for record in store.iter_records(DELETED, parent=survey)}


async def find_deleted_answers(client: FormsClient, store: StagingStore, survey: str) -> int:
    """Stage what the source deleted of a survey's answers (and forget what it restored);
    return how many are deleted now."""
    staged = {record.source_id for record in store.iter_records("survey_answer", parent=survey)}
    gone = deleted_answers(store, survey)
    count = int((await client.get_survey(survey)).get("answers") or 0)
    if count == len(staged - gone):
        return len(gone)
    listed = {
        f"{survey}/{answer['id']}"
        async for page in client.iter_answer_pages(survey)
        for answer in page.answers
    }
    now = sorted(staged - listed)
    detected = datetime.now(UTC).isoformat(timespec="seconds")
    rows = [
        {"source_id": f"survey_answer:{answer}", "parent": survey,
         "raw": {"entity": "survey_answer", "source_id": answer, "survey": survey,
                 "reason": "deleted at the source", "detected_at": detected}}
        for answer in now if answer not in gone
    ]  # fmt: skip
    with store.transaction():
        store.upsert_records(DELETED, rows)
        for answer in gone & listed:
            store.delete_record(DELETED, f"survey_answer:{answer}")
    log.info("survey_answers_deleted", survey=survey, deleted=len(now), restored=len(gone & listed))
    return len(now)
