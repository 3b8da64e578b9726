"""A page's attachments: uploaded with their staged bytes, all at once and beside the pages
under their page; found again by (page, name, size), verify adding the bytes' sha256."""

from __future__ import annotations

from haul.pipelines.specs import EntitySpec, RecordFailure, each_record, staged_bytes
from haul.pipelines.wiki.load import BESIDE_SUBPAGES, WikiLoad, created, page_of
from haul.state.store import StagedRecord

PLAN_ATTACHMENTS = each_record("wiki_attachment", parent=page_of, sort_key=created)
PLANS = {"wiki_attachment": PLAN_ATTACHMENTS}


class Attachments:
    """Uploads attachments into one target org."""

    def __init__(self, load: WikiLoad) -> None:
        self.load = load

    def specs(self) -> list[EntitySpec]:
        printed = self.load.attachment()
        return [
            EntitySpec("wiki_attachment", "wiki_attachment", PLAN_ATTACHMENTS, self.send,
                       printed.find, order=BESIDE_SUBPAGES, fingerprint=printed),
        ]  # fmt: skip

    async def send(self, record: StagedRecord, page: str | None) -> str:
        if page is None:
            raise RecordFailure(f"the page of attachment {record.source_id} is not loaded")
        path = await staged_bytes(self.load.store, record, drained="wiki_page")
        attached = await self.load.client.upload(
            int(page), file_name=str(record.raw["name"]), path=path
        )
        return self.load.made("wiki_attachment", str(attached["id"]))


def specs(load: WikiLoad) -> list[EntitySpec]:
    """The attachments' spec."""
    return Attachments(load).specs()
