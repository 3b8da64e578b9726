"""The fingerprints of back-filled issues and their files, so `haul verify` compares them.

A back-filled issue has no key of its own at the source: it is found by its `unique` (one
`_findByUnique`), so its place in the target is that `unique` and the listing there is the
one issue, with its key as id. Verify compares what the load wrote, as people read it: the
queue and dictionary values by key, the author by login, times as instants. A file is found
by name (and size, when the answer gave one) in its issue's attachments; verify adds the
sha256 of the bytes it downloads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.downloads import HashSink
from haul.pipelines.specs import Fields, Fingerprint
from haul.pipelines.tracker.timefmt import instant
from haul.pipelines.tracker.transform import ref_id
from haul.state.store import StagedRecord

KEYED = {"priority": "priority", "type": "issuetype"}  # field -> its dictionary


@dataclass
class BackfillPrints:
    """`body` is the import body the load sends for an answer; `logins` target uid -> login;
    `dictionaries` kind -> key -> target id (the back-fill's own maps)."""

    client: TrackerClient
    body: Callable[[StagedRecord], dict[str, Any]]
    logins: dict[str, str]
    dictionaries: dict[str, dict[str, Any]]

    def issue(self) -> Fingerprint:
        """A back-filled issue: found by its `unique`, compared on what the import wrote."""
        return Fingerprint(self._issue, self._unique, self._by_unique, ("unique",))

    def attachment(self) -> Fingerprint:
        """An answer's file in its issue: name and size; verify adds the bytes."""
        return Fingerprint(
            self._attachment, lambda record, key: key, self._attachments, ("name",),
            self._bytes,
        )  # fmt: skip

    # -- the source side ---------------------------------------------------------------------

    def _unique(self, record: StagedRecord, parent: str | None) -> str:
        return str(self.body(record)["unique"])

    def _issue(self, record: StagedRecord) -> Fields:
        body = self.body(record)
        keys = {
            kind: {str(target): key for key, target in values.items()}
            for kind, values in self.dictionaries.items()
        }
        fields = {name: body.get(name) for name in body if name not in _WRITTEN_ONLY}
        fields |= {
            name: keys.get(kind, {}).get(str(body[name]), body[name])
            for name, kind in KEYED.items()
            if name in body
        }
        return fields | {"createdAt": instant(body["createdAt"])}

    @staticmethod
    def _attachment(record: StagedRecord) -> Fields:
        """Name and bytes; the size too when the answer gave one (the bytes tell it anyway)."""
        raw = record.raw
        size = {} if raw.get("size") is None else {"size": int(raw["size"])}
        return {"name": raw["name"], **size, "sha256": record.blob}

    # -- the target side -----------------------------------------------------------------------

    async def _by_unique(self, unique: str) -> list[Fields]:
        found = await self.client.find_by_unique(unique)
        if found is None:
            return []
        return [
            {
                **found,
                "id": found.get("key"),
                "queue": (found.get("queue") or {}).get("key"),
                "createdAt": instant(found.get("createdAt")),
                "createdBy": self._login(found.get("createdBy")),
                **{name: (found.get(name) or {}).get("key") for name in KEYED},
            }
        ]

    def _login(self, ref: Any) -> str | None:
        uid = ref_id(ref)
        return None if uid is None else self.logins.get(uid, uid)

    async def _attachments(self, key: str) -> list[Fields]:
        return [
            {"id": a["id"], "name": a.get("name"), "size": int(a.get("size") or 0)}
            for a in await self.client.list_attachments(key)
        ]

    async def _bytes(self, key: str, found: Fields) -> Fields:
        sink = HashSink()
        await self.client.download_attachment(key, found["id"], found["name"], sink)
        return {"sha256": sink.hexdigest()}


# what the import body carries that the target shows otherwise (or not at all): its own
# bookkeeping of who edited last and when, which the import sets to the creation
_WRITTEN_ONLY = frozenset(("updatedAt", "updatedBy"))
