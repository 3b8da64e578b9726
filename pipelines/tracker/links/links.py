"""Links between issues: loaded after every tree, from one side only, once both ends exist.

A link shows on both of its issues with one id: the outward side loads (or the only side
staged, when the other end is not migrated yet); its row `requires` the other issue, so it waits
for just that tree (`Order.needs_named`). An end not in this migration yet makes the link wait
(`LinkWaits`) for a later run that brings it; an end deleted in the target fails the link,
named (`LinkEndMissing`).
"""

from __future__ import annotations

from collections.abc import Iterator

from haul.connectors.errors import NotFoundError
from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Order, Phase, Planned, RecordFailure, Ref
from haul.pipelines.tracker.changes.deletions import vanished_issues
from haul.pipelines.tracker.issues.kinds import Kind, TreeLoad, issue_of
from haul.pipelines.tracker.target import LinkWaits, moved_issues
from haul.state.store import StagedRecord, StagingStore


class LinkEndMissing(RecordFailure):
    """A link between two issues of the migration that the target does not hold both of."""

    def __init__(self, issue: str, other: str) -> None:
        super().__init__(
            f"the target does not hold issue {issue} or {other} (deleted there?): run haul"
            " verify, then haul load --retry-failed"
        )


def plan_links(store: StagingStore) -> Iterator[Planned]:
    """A link shows on both issues: load the outward side, or the only side staged (the other
    end known under its key now, if it moved; one gone from the source was staged). A side
    planned by an earlier run, when it was the only one staged (a link waiting for the queue
    of its other end), stays the link's one row when the other side comes."""
    staged, moved = store.source_ids("issue") | vanished_issues(store), moved_issues(store)
    for record in store.iter_records("link"):
        other = moved.get(record.raw["object"]["key"], record.raw["object"]["key"])
        this_side = record.raw.get("direction") == "outward" or other not in staged
        if this_side and not _other_side_planned(store, record, other):
            yield Planned(record, issue_of(record))


def _other_side_planned(store: StagingStore, link: StagedRecord, other: str) -> bool:
    """Whether the ledger holds the same link staged under its other end (`other`): a link
    keeps its id on both issues, so that side is `other/<id>`."""
    return store.ledger.get("link", f"{other}/{link.raw['id']}") is not None


class Links:
    """Imports links in one target org."""

    def __init__(self, load: TreeLoad) -> None:
        self.load = load

    def spec(self) -> EntitySpec:
        prints, keys = self.load.prints.link(), self.load.keys
        return EntitySpec(
            "link", "link", plan_links, self.send, prints.find,
            requires=lambda r: [Ref("issue", keys.current(r.raw["object"]["key"]))],
            order=Order(Phase.LINKS, needs_named=True), fingerprint=prints,
        )  # fmt: skip

    async def send(self, record: StagedRecord, parent: str | None) -> str:
        load = self.load
        body = load.transform.link_body(record.raw)
        body["issue"] = load.keys.key(record.raw["object"]["key"])  # a moved issue's new key
        try:
            reply = await load.client.import_link(load.parent_key(record, parent), body)
        except NotFoundError as exc:
            other = load.keys.current(record.raw["object"]["key"])
            if load.store.ledger.get("issue", other) is None:  # not in this migration yet
                raise LinkWaits(other) from exc
            raise LinkEndMissing(load.parent_key(record, parent), body["issue"]) from exc
        return load.made("link", str(reply["id"]))


LINK = Kind(Entity("link"), plan_links, lambda load: Links(load).spec())
