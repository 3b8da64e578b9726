"""The issue's access list: who may read it, brought to the source's (mapped, narrowed).

One ledger row under each issue whose source lists anyone on `access` (`issue_access`), loaded
after the issue's other children. Its send replaces the target's list, naming the holders who
have no target account (the row fails, never given to the default user: `issue_access`); its
find holds only a list that is the source's; its refresh settles a list changed since three
ways, never wider than either side (`issue_access.settle_access`).
"""

from __future__ import annotations

from haul.pipelines.services import Entity
from haul.pipelines.specs import (
    Conflicted,
    EntitySpec,
    Fields,
    Order,
    RecordFailure,
    Sent,
    Unclaimed,
)
from haul.pipelines.sync.preview import Change, how, updated
from haul.pipelines.tracker.issue_access import ENTITY as ISSUE_ACCESS
from haul.pipelines.tracker.issue_access import (
    AccessSettling,
    held,
    plan_issue_access,
    settle_access,
)
from haul.pipelines.tracker.issue_access import failure as access_failure
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord


class IssueAccess:
    """Sends, finds and refreshes issue access lists in one target org."""

    def __init__(self, load: TreeLoad) -> None:
        self.load = load

    def spec(self) -> EntitySpec:
        return EntitySpec(
            ISSUE_ACCESS, "issue", plan_issue_access, self.send, self.find,
            refresh=self.refresh, order=Order(sends_conflicts=True),
        )  # fmt: skip

    async def send(self, record: StagedRecord, issue_key: str | None) -> Sent:
        """Bring the target issue's access list to the source's (mapped, narrowed: see
        `issue_access`); fail, naming them, when holders were left out."""
        if issue_key is None:
            raise RecordFailure(f"issue {record.source_id} is not loaded")
        access = self.load.transform.access(record.raw)
        await self._set(issue_key, access.logins)
        if access.unmapped:
            raise RecordFailure(access_failure(record.source_id, access))
        return Sent(issue_key, written={"access": self._uids(access.logins)})

    async def find(
        self, record: StagedRecord, issue_key: str | None, unclaimed: Unclaimed
    ) -> Sent | None:
        """The issue, once its access list is the source's; never one that leaves a holder out
        (its row stays failed, naming them)."""
        access = self.load.transform.access(record.raw)
        if issue_key is None or access.unmapped:
            return None
        found = await self.load.client.find_issue(issue_key)
        if found is None or held(found) != self._uids(access.logins):
            return None
        return Sent(issue_key, written={"access": held(found)})

    async def refresh(self, record: StagedRecord, target_key: str) -> Fields:
        """The list changed at the source: three ways (`issue_access.settle_access`): carried
        when only the source changed it, kept when only the target did, the narrower of the
        two when both did (a conflict, never wider)."""
        load = self.load
        access, key = load.transform.access(record.raw), load.keys.key(record.source_id)
        found = await load.client.find_issue(key)
        if found is None:
            raise RecordFailure(f"issue {key} is not in the target")
        base = load.store.written.base(ISSUE_ACCESS, record.source_id)
        source, target = self._uids(access.logins), held(found)
        settling = settle_access(
            source, None if base is None else base["access"], target, load.conflicts
        )
        if settling.overwritten:
            load.store.written.overwrote(ISSUE_ACCESS, record.source_id, "access", source, target)
        if settling.write is not None:
            logins = {self._uids((login,))[0]: login for login in access.logins}
            await load.client.update_issue(key, {"access": [logins[u] for u in settling.write]})
            load.changes[(ISSUE_ACCESS, "updated")] += 1
        if access.unmapped:
            raise RecordFailure(access_failure(record.source_id, access))
        return self._settled(settling)

    def _settled(self, settling: AccessSettling) -> Fields:
        """The base a refresh leaves; a conflict reported with both lists, by login."""
        written: Fields = {"access": settling.base}
        if settling.conflict is None:
            return written
        self.load.changes[(ISSUE_ACCESS, "conflict")] += 1
        logins = {uid: login for login, uid in self.load.prints.uids.items()}
        source, target = (
            sorted(logins.get(u, f"uid {u}") for u in side) for side in settling.conflict
        )
        raise Conflicted(
            f"access changed on both sides: source {source}, target {target}; the target keeps"
            " only the holders both name (never wider): make both sides agree, then run haul"
            " load again",
            written,
        )

    async def _set(self, key: str, logins: tuple[str, ...]) -> bool:
        """Replace the issue's access list unless it holds `logins` already; True if edited."""
        found = await self.load.client.find_issue(key)
        if found is None:
            raise RecordFailure(f"issue {key} is not in the target")
        if held(found) == self._uids(logins):
            return False
        await self.load.client.update_issue(key, {"access": list(logins)})
        return True

    def _uids(self, logins: tuple[str, ...]) -> list[str]:
        return sorted(str(self.load.prints.uid(login)) for login in logins)


class AccessPreview(KindPreview):
    """`haul plan`'s preview of a changed access list: an update only when the target's list
    differs (its refresh edits nothing else)."""

    def __init__(self, load: TreeLoad) -> None:
        super().__init__()
        self.compare = load.verifier.compare

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        expected, found = await self.compare(row, record)
        if found == expected:
            return []
        was = (found or {}).get("access")
        return [updated(row, ("access",), how({"access": (was, expected.get("access"))}))]


# an issue whose source lists anyone on `access`
ACCESS = Kind(
    Entity(ISSUE_ACCESS, staged="issue"),
    plan_issue_access,
    lambda load: IssueAccess(load).spec(),
    preview=AccessPreview,
)
