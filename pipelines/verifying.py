"""What a service brings to `haul verify`: both fingerprints of one loaded record.

`compare(row, record)` gives the staged record's mapped fields as the load wrote them, and
the same fields of the target record the ledger names, read back (None when the target no
longer has it). `compares` names the ledger entities it can compare; any other is reported
as not compared, never skipped in silence.
"""

from __future__ import annotations

from typing import Any, Protocol

from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord

Fields = dict[str, Any]


class Verifier(Protocol):
    """Both fingerprints of one loaded record; see the module docstring."""

    @property
    def compares(self) -> frozenset[str]: ...

    async def compare(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[Fields, Fields | None]: ...
