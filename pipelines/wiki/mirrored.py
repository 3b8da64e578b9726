"""Records deleted at the source, deleted in the target when `[sync] deletions = "mirror"`,
and a replaced file's old copy (deleted whatever the setting: the person meant one file under
that name). One `wiki_deletion` row each, loaded in their own phase once everything else is
(`deletions` finds them and says what may go)."""

from __future__ import annotations

from haul.pipelines.specs import EntitySpec, Order, Phase, Sent
from haul.pipelines.wiki.deletions import DELETED, WikiDeletions, deletion_plan
from haul.pipelines.wiki.load import WikiLoad
from haul.state.store import StagedRecord


def specs(load: WikiLoad) -> list[EntitySpec]:
    """Deleting in the target: when mirroring, or when a replaced file's old copy waits."""
    waiting = next(load.store.ledger.iter_rows(entity="wiki_deletion"), None)
    if not load.mirror and waiting is None:
        return []
    wins = load.conflicts == "source-wins"
    deletions = WikiDeletions(load.client, load.store, load.page_target, wins)

    async def send(record: StagedRecord, parent: str | None) -> str | Sent:
        done = await deletions.send(record, parent)
        what = "replaced" if record.raw.get("replaced") else "deleted"
        load.changes[(str(record.raw["entity"]), what)] += 1
        return done

    return [
        EntitySpec("wiki_deletion", DELETED, deletion_plan(load.mirror), send, deletions.find,
                   order=Order(Phase.DELETIONS, find_first=True)),
    ]  # fmt: skip
