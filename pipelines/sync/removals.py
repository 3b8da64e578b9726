"""Removals: how `haul undo` takes back one kind of record the load wrote.

A service gives one `Removal` per ledger entity it loads (`TargetParts.removals`); `haul undo`
(`pipelines.commands.undo`) runs them over the ledger and names none::

    delete(row)   -> Removed: the record deleted from the target (`deleted` False: the
                     target answered 404, it was gone already), with the recovery token the
                     target answered, if any
    by_hand       -> no deletion exists for it (an issue, a dashboard, a queue): what a person
                     can do instead, said beside each record kept
    with_parent   -> it lives in the record its row loads under (an issue's status, a page's
                     access, a grid's rows): gone when that one is, kept when it is kept;
                     `lives_in(row)` names that record when it is not the row's parent (a
                     comment's text written again loads under its issue, lives in the comment)
    in_use(row)   -> why the record stays although it could be deleted (a component that
                     issues which stay still name), or None, optional
    changed(row)  -> what a person changed in the target since haul wrote the record (its
                     base, `state.written`), or None, optional: the base decides, so undo
                     keeps such a record, counted and named, unless told to include changed
                     records (`haul undo --include-changed`)
    delete_unchanged(row) -> for a record of parts kept as changed (a checklist's items):
                     delete the parts still as haul wrote them, optional

An entity with none of them is kept and named as such. A record the target held before the
load found it (`found`) is never deleted: it was not haul's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from haul.state.ledger import LedgerRow


class Removed(NamedTuple):
    """What a deletion did: `deleted` False when the target answered 404 (gone already)."""

    deleted: bool
    recovery_token: str | None = None


@dataclass(frozen=True)
class Removal:
    """How one kind of loaded record is taken back; see the module docstring."""

    delete: Callable[[LedgerRow], Awaitable[Removed]] | None = None
    by_hand: str = ""
    with_parent: bool = False
    lives_in: Callable[[LedgerRow], tuple[str, str]] | None = None  # (entity, source id)
    in_use: Callable[[LedgerRow], str | None] | None = None
    changed: Callable[[LedgerRow], Awaitable[str | None]] | None = None
    delete_unchanged: Callable[[LedgerRow], Awaitable[None]] | None = None


def deleted_by(
    delete: Callable[[LedgerRow], Awaitable[bool]],
    in_use: Callable[[LedgerRow], str | None] | None = None,
    changed: Callable[[LedgerRow], Awaitable[str | None]] | None = None,
) -> Removal:
    """A removal whose call answers True when it deleted, False on a 404 (no token)."""

    async def removed(row: LedgerRow) -> Removed:
        return Removed(await delete(row))

    return Removal(delete=removed, in_use=in_use, changed=changed)


def changed_since(
    base: Mapping[str, Any] | None,
    found: Mapping[str, Any],
    same: Callable[[Any, Any], bool] = lambda wrote, held: wrote == held,
) -> str | None:
    """What a person changed of a record haul wrote, in words ("its text"): the fields of the
    base whose value in the target (`found`) is not the one haul wrote; None when none. No
    base (a store older than three-way sync) tells nothing: None, as three-way sync reads it."""
    if base is None:
        return None
    names = [name for name, wrote in base.items() if not same(wrote, found.get(name))]
    if not names:
        return None
    return f"a person changed its {' and '.join(names)} in the target since haul wrote it"


WITH_PARENT = Removal(with_parent=True)


def with_record(lives_in: Callable[[LedgerRow], tuple[str, str]]) -> Removal:
    """A removal for what goes, or stays, with the record `lives_in(row)` names (entity,
    source id) rather than with the row's parent."""
    return Removal(with_parent=True, lives_in=lives_in)
