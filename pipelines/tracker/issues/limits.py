"""The target tracker's hard limits (`[limits]`), met before the load instead of by a write
failing hours in: a file over the size limit, a comment text over the length limit, and the
comments of an issue past the count limit (the oldest are kept, as the target would keep them).

`haul check` names every record over a limit, `haul plan` decides it a conflict, and the load
fails it with the same reason without sending it. A file's reason says where its bytes are
staged, so a person can still carry them by hand.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.pipelines.config import Limits
from haul.pipelines.findings import Finding
from haul.pipelines.planner import Decision, Planner
from haul.pipelines.specs import EntitySpec, RecordFailure, Ref
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore


class OverLimit(RecordFailure):
    """A record the target would refuse for one of its hard limits; never sent."""


@dataclass
class TargetLimits:
    """The reason each staged record over a limit has, read from the staging store."""

    store: StagingStore
    limits: Limits
    # the text a staged comment is written with (its references rewritten): what the
    # target measures
    written_text: Callable[[dict[str, Any]], str]
    _past_count: dict[str, str] | None = field(default=None, init=False)

    def reason(self, record: StagedRecord) -> str | None:
        """Why the target would refuse `record`, or None when it fits every limit."""
        if record.entity == "attachment":
            return self._file_size(record)
        if record.entity == "comment":
            return self._comment_length(record) or self._comment_count(record)
        return None

    def check(self, record: StagedRecord) -> None:
        """Fail the record (OverLimit) before its send when it is over a limit."""
        if why := self.reason(record):
            raise OverLimit(why)

    def over(self) -> Iterator[tuple[Ref, str]]:
        """Every staged record over a limit, with its reason."""
        for entity in ("attachment", "comment"):
            for record in self.store.iter_records(entity):
                if why := self.reason(record):
                    yield Ref(entity, record.source_id), why

    def _file_size(self, record: StagedRecord) -> str | None:
        size, most = record.raw.get("size"), self.limits.attachment_max_bytes
        if not isinstance(size, int) or size <= most:
            return None
        where = self.store.blobs.path(record.blob) if record.blob else "nowhere (not downloaded)"
        return (
            f"file {record.raw.get('name')!r} is {size} bytes, over the target's limit of {most}"
            f" bytes ([limits] attachment_max_bytes); its bytes are staged at {where}"
        )

    def _comment_length(self, record: StagedRecord) -> str | None:
        length, most = len(self.written_text(record.raw)), self.limits.comment_max_chars
        if length <= most:
            return None
        return (
            f"comment text is {length} characters, over the target's limit of {most}"
            " ([limits] comment_max_chars)"
        )

    def _comment_count(self, record: StagedRecord) -> str | None:
        if self._past_count is None:
            self._past_count = dict(self._comments_past_count())
        return self._past_count.get(record.source_id)

    def _comments_past_count(self) -> Iterator[tuple[str, str]]:
        """The comments of each issue after its first `comments_per_issue`, oldest first."""
        most = self.limits.comments_per_issue
        by_issue: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for record in self.store.iter_records("comment"):
            created = str(record.raw.get("createdAt") or "")
            by_issue[record.parent or ""].append((created, record.source_id))
        for issue, comments in by_issue.items():
            why = (
                f"issue {issue} has {len(comments)} comments, over the target's limit of"
                f" {most} per issue ([limits] comments_per_issue): the oldest {most} load"
            )
            for _, source_id in sorted(comments)[most:]:
                yield source_id, why


def limit_findings(limits: TargetLimits) -> list[Finding]:
    """`haul check`'s findings: a warning per record over a limit (the rest can still be
    migrated: the load fails just these, and exits 3), or one ok."""
    found = [
        Finding("warning", f"{ref.entity} {ref.source_id}: {why}", _FIX)
        for ref, why in limits.over()
    ]
    return found or [Finding("ok", "every staged file and comment is within the target's limits")]


_FIX = (
    "it cannot be loaded: haul load fails it with this reason; carry it another way, or raise"
    " [limits] if the target's limit is higher"
)


@dataclass
class LimitPlanner:
    """`haul plan`: a record over a target limit is a conflict with its reason; everything
    else as `rest` decides."""

    limits: TargetLimits
    rest: Planner

    @property
    def specs(self) -> dict[str, EntitySpec]:
        return self.rest.specs

    async def decide(self, row: LedgerRow, record: StagedRecord) -> Decision:
        if why := self.limits.reason(record):
            return "conflict", why
        return await self.rest.decide(row, record)
