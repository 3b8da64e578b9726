"""A worklog: imported under its issue in start order, refreshed three ways.

Found again by its fingerprint (`issues.fingerprints`); a worklog edited at the source has its
duration and note settled three ways by a later run. Durations compare in milliseconds: both
sides may spell one duration differently.
"""

from __future__ import annotations

from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Fields, Sent, each_record
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad, issue_of
from haul.pipelines.tracker.transform import milliseconds
from haul.state.store import StagedRecord

PLAN_WORKLOGS = each_record(
    "worklog", parent=issue_of, sort_key=lambda r: str(r.raw.get("start") or "")
)


def worklog_fields(worklog: Fields) -> Fields:
    """A worklog's fields a sync compares: its duration (in milliseconds) and its note."""
    return {
        "duration": milliseconds(worklog.get("duration")),
        "comment": worklog.get("comment") or "",
    }


class Worklogs:
    """Sends and refreshes worklogs in one target org."""

    def __init__(self, load: TreeLoad) -> None:
        self.load = load

    def spec(self) -> EntitySpec:
        prints = self.load.prints.worklog()
        return EntitySpec("worklog", "worklog", PLAN_WORKLOGS, self.send, prints.find,
                          refresh=self.refresh, fingerprint=prints)  # fmt: skip

    async def send(self, record: StagedRecord, parent: str | None) -> Sent:
        load = self.load
        body = load.transform.worklog_body(record.raw)
        reply = await load.client.import_worklog(load.parent_key(record, parent), body)
        return Sent(load.made("worklog", str(reply[0]["id"])), written=worklog_fields(body))

    async def refresh(self, record: StagedRecord, target_id: str) -> Fields:
        """A worklog edited at the source: its duration and note, three ways."""
        load = self.load
        key, body = load.issue_key(record), load.transform.worklog_body(record.raw)
        found = await load.target_record(load.client.iter_worklogs(key), target_id)

        async def edit(names: list[str]) -> None:
            edit = {"duration": body["duration"], "comment": body.get("comment") or ""}
            await load.client.update_worklog(key, target_id, {n: edit[n] for n in names})

        compared = (worklog_fields(body), worklog_fields(found))
        return await load.three_way.settle("worklog", record.source_id, compared, edit)


WORKLOG = Kind(
    Entity("worklog"),
    PLAN_WORKLOGS,
    lambda load: Worklogs(load).spec(),
    preview=lambda load: KindPreview(refreshed=("duration", "comment")),  # what its refresh edits
)
