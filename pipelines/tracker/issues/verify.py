"""How an issue and its checklist are read back from the target and fingerprinted on both sides.

The sub-records with an identity of their own (comments, worklogs, attachments, links) are
compared through their fingerprints (`pipelines.tracker.issues.fingerprints`), the same fields their
`find` matches on; this verifier covers the three that have none: the issue (found by key and
`unique`, compared on its mapped fields), its checklist (the issue's last items) and the status
a later run walked it to (`issue_status`: the status the target issue holds, by key; read once
with the issue when both are verified). Past statuses are not staged any more: only the
current one is compared. The
source side is the staged record through the load's own `Transform`; users compare as target
uids, dictionary values as target ids, times as instants.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.issue_access import held
from haul.pipelines.tracker.issues.fields import (
    COMMENT_TEXT,
    ISSUE_FIELDS,
    ISSUE_TEXT,
    Carry,
    body_key,
    carry_of,
    edit_value,
    updatable,
    why_differs,
)
from haul.pipelines.tracker.issues.fingerprints import TrackerFingerprints
from haul.pipelines.tracker.timefmt import instant
from haul.pipelines.tracker.transform import (
    ESTIMATES,
    PLAIN_FIELDS,
    STRUCTURE_REFS,
    USER_LISTS,
    Transform,
    mail_address,
    milliseconds,
    ref_id,
)
from haul.pipelines.verifying import Fields
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord

KEYED = {  # field -> its dictionary: compared by key, as people name them
    "status": "status",
    "type": "issuetype",
    "priority": "priority",
    "resolution": "resolution",
}
# a text written again with its files: its base is its issue's or comment's
_TEXT_OF = {ISSUE_TEXT: "issue", COMMENT_TEXT: "comment"}


@dataclass
class TrackerVerifier:
    """Fingerprints of loaded issues and checklists, source side and target side."""

    client: TrackerClient
    transform: Transform
    prints: TrackerFingerprints
    # (entity, source id) -> the fields haul last wrote (a three-way sync's base), if kept
    bases: Callable[[str, str], Fields | None] = lambda entity, source_id: None
    _statuses: dict[str, str | None] = field(default_factory=dict)  # target key -> status key

    compares: ClassVar[frozenset[str]] = frozenset(
        ("issue", "checklist", "issue_status", "issue_access", ISSUE_TEXT, COMMENT_TEXT)
    )

    async def compare(self, row: LedgerRow, record: StagedRecord) -> tuple[Fields, Fields | None]:
        """(expected, found) for one done ledger row; found is None when the target lacks it."""
        if row.entity == "checklist":
            return self._checklist(record), await self._target_checklist(record)
        if row.entity == "issue_status":
            return {"status": self._keys(record.raw)["status"]}, await self._target_status(record)
        if row.entity in (ISSUE_TEXT, COMMENT_TEXT):
            return await self._text(row, record)
        if row.entity == "issue_access":
            found = await self.client.find_issue(self.prints.key_of(record.source_id))
            have = None if found is None else {"access": held(found)}
            return {"access": self._access(record.raw)}, have
        expected = self._issue(record)
        return expected, await self._target_issue(row, expected)

    def known(self, row: LedgerRow, name: str, expected: Any, found: Any) -> str:
        """Why an issue's field or a comment's text (or either written again with its files)
        differs, when its base tells: a person's edit in the target, a conflict, or a field
        no update call changes (`fields.why_differs`)."""
        entity = _TEXT_OF.get(row.entity, row.entity)
        if entity not in ("issue", "comment"):
            return ""
        base = self.bases(entity, row.source_id)
        return why_differs(name, expected, base, found, self.transform.references.written_as)

    def issue_fields(self, record: StagedRecord) -> Fields:
        """The staged issue's fields as the load writes them, in the form verify compares."""
        return self._issue(record)

    def target_fields(self, found: Fields, wanted: Fields) -> Fields:
        """The target issue `found`'s fields in the same form (custom fields and estimates:
        those `wanted` names)."""
        return self._target_core(found) | self._target_carried(found, wanted)

    def _issue(self, record: StagedRecord) -> Fields:
        body = self.transform.issue_body(record.raw)
        return self._core(body) | self._keys(record.raw) | self._carried(record.raw)

    def _core(self, body: Fields) -> Fields:
        return {
            "summary": body["summary"],
            "description": body.get("description"),
            "createdAt": instant(body["createdAt"]),
            "createdBy": self.prints.uid(body["createdBy"]),
            "tags": sorted(body.get("tags") or []),
            "assignee": self.prints.uid(body.get("assignee")),
        }

    def _keys(self, raw: Fields) -> Fields:
        """The status, type and priority by key, as people name them (ids differ by org)."""
        dictionaries = self.transform.dictionaries
        return {
            name: dictionaries.key_of(kind, raw[name]) if isinstance(raw.get(name), dict) else None
            for name, kind in KEYED.items()
        }

    def _carried(self, raw: Fields) -> Fields:
        """The fields beyond the core, as people read them: structure by name, estimates in
        milliseconds, people as target uids, custom fields by their target key."""
        fields: Fields = {name: _names(raw.get(name)) for name in STRUCTURE_REFS}
        fields |= {name: raw.get(name) for name in PLAIN_FIELDS}
        fields |= {name: milliseconds(raw.get(name)) for name in ESTIMATES if raw.get(name)}
        fields |= {
            name: sorted(
                str(self.prints.uid(self.transform.users.login(ref))) for ref in raw.get(name) or []
            )
            for name in (*USER_LISTS, "followers")
        }
        fields["access"] = self._access(raw)
        if raw.get("followingMaillists"):
            fields["followingMaillists"] = sorted(map(mail_address, raw["followingMaillists"]))
        structure = self.transform.structure
        if structure is not None:
            queue = str((raw.get("queue") or {}).get("key") or "")
            for key, value in raw.items():
                target_key = structure.custom_key(queue, key)
                if target_key is not None and value is not None:
                    fields[f"field:{target_key}"] = self._value(value)
        return fields

    def _access(self, raw: Fields) -> list[str]:
        """The access list as target uids; a holder left out (no target account) as
        ``unmapped user <login>``, which the target cannot show: verify names it."""
        access = self.transform.access(raw)
        uids = sorted(str(self.prints.uid(login)) for login in access.logins)
        return uids + [f"unmapped {holder}" for holder in access.unmapped]

    def _value(self, value: Any) -> Any:
        if isinstance(value, dict) and "/users/" in str(value.get("self", "")):
            return self.prints.uid(self.transform.users.login(value))
        return value

    def _target_carried(self, found: Fields, expected: Fields) -> Fields:
        fields: Fields = {name: _names(found.get(name)) for name in STRUCTURE_REFS}
        fields |= {name: found.get(name) for name in PLAIN_FIELDS}
        fields |= {name: milliseconds(found.get(name)) for name in ESTIMATES if name in expected}
        fields |= {
            name: sorted(str(ref_id(ref)) for ref in found.get(name) or [])
            for name in (*USER_LISTS, "followers", "access")
        }
        if "followingMaillists" in expected:
            fields["followingMaillists"] = sorted(
                map(mail_address, found.get("followingMaillists") or [])
            )
        for name in expected:
            if name.startswith("field:"):
                key = name.removeprefix("field:")
                value = _local(found, key)
                fields[name] = ref_id(value) if isinstance(value, dict) else value
        return fields

    async def _target_issue(self, row: LedgerRow, expected: Fields) -> Fields | None:
        found = await self.client.find_issue(row.target_id or "")
        if found is None:
            return None
        self._statuses[str(found.get("key"))] = (found.get("status") or {}).get("key")
        return self._target_core(found) | self._target_carried(found, expected)

    async def _target_status(self, record: StagedRecord) -> Fields | None:
        key = self.prints.issue_key(record)
        if key not in self._statuses:
            found = await self.client.find_issue(key)
            if found is None:
                return None
            self._statuses[key] = (found.get("status") or {}).get("key")
        return {"status": self._statuses[key]}

    def _target_core(self, found: Fields) -> Fields:
        return {
            "summary": found.get("summary"),
            "description": found.get("description"),
            "createdAt": instant(found.get("createdAt")),
            "createdBy": ref_id(found.get("createdBy")),
            **{name: (found.get(name) or {}).get("key") for name in KEYED},
            "tags": sorted(found.get("tags") or []),
            "assignee": ref_id(found.get("assignee")),
        }

    async def _text(self, row: LedgerRow, record: StagedRecord) -> tuple[Fields, Fields | None]:
        """A text written again once its files were in: as the transform writes it now."""
        if row.entity == ISSUE_TEXT:
            expected = {"description": self.transform.text(record.raw.get("description"))}
            found = await self.client.find_issue(self.prints.key_of(record.source_id))
            return expected, None if found is None else {"description": found.get("description")}
        expected = {"text": self.transform.comment_text(record.raw)}
        async for comment in self.client.iter_comments(self.prints.issue_key(record), expand=""):
            if str(comment["id"]) == row.target_id:
                return expected, {"text": comment.get("text") or ""}
        return expected, None

    def _checklist(self, record: StagedRecord) -> Fields:
        items = [self.transform.checklist_body(item) for item in record.raw["items"]]
        return {"items": [[item["text"], item["checked"]] for item in items]}

    async def _target_checklist(self, record: StagedRecord) -> Fields | None:
        key = self.prints.issue_key(record)
        items = await self.client.list_checklist(key)
        wanted = len(record.raw["items"])
        listed = [[item.get("text"), bool(item.get("checked"))] for item in items]
        if wanted and not listed:  # none of it there (taken back by haul undo, say)
            return None
        return {"items": listed[-wanted:] if wanted else []}


def _names(refs: Any) -> list[str]:
    """The display names of a list of references (components, versions, sprints), sorted."""
    return sorted(str(ref.get("display")) for ref in refs or [] if isinstance(ref, dict))


def _local(issue: Fields, key: str) -> Any:
    """A custom field's value on an issue: under its key, or a local field's `<id>--<key>`."""
    if key in issue:
        return issue[key]
    return next((v for k, v in issue.items() if k.rpartition("--")[2] == key and "--" in k), None)


# what the edit sends for a dictionary field: its key (ids differ between orgs)
_KEYED = ("type", "priority")
_KEPT = (Carry.UPDATE, Carry.IMPORT_ONLY)


@dataclass(frozen=True)
class IssueForms:
    """The compared form of an issue's fields, on either side, and the edit that carries them."""

    verifier: TrackerVerifier
    transform: Transform

    def source(self, record: StagedRecord) -> Fields:
        """The staged issue's fields that a sync compares, as the load writes them (every
        field of the table present, empty ones as None)."""
        structure = self.transform.structure
        with structure.counting_nothing() if structure is not None else nullcontext():
            fields = self.verifier.issue_fields(record)
        named = {name: None for name, carry in ISSUE_FIELDS.items() if carry in _KEPT}
        return named | {
            name: value for name, value in fields.items() if carry_of(body_key(name)) in _KEPT
        }

    def target(self, found: Fields, wanted: Fields) -> Fields:
        """The target issue `found`'s fields that a sync compares (those `wanted` names)."""
        fields = self.verifier.target_fields(found, wanted)
        return {name: fields.get(name) for name in wanted}

    def edit(self, record: StagedRecord, source: Fields, names: list[str]) -> dict[str, Any]:
        """The edit body that sets the fields `names` to the source's values."""
        body = self.transform.issue_body(record.raw)
        edit: dict[str, Any] = {}
        for name in names:
            if not updatable(name):
                continue
            key = body_key(name)
            if key in _KEYED:
                edit[key] = {"key": source[name]} if source.get(name) else None
            else:
                edit[key] = edit_value(key, body.get(key))
        return edit
