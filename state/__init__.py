"""The SQLite staging store: staged records, checkpoints, the load ledger, runs and blobs."""

from haul.state import _imports  # noqa: F401  # first: sqlite-utils without pandas
from haul.state.blobs import BlobStore, BlobWriter
from haul.state.errors import SchemaTooNewError, StoreError
from haul.state.hashing import canonical_json, content_hash
from haul.state.ledger import (
    Ledger,
    LedgerError,
    LedgerRow,
    LedgerRowNotFound,
    LedgerTransitionError,
)
from haul.state.runs import RunHandle, RunLockedError
from haul.state.store import StagingStore

__all__ = [
    "BlobStore",
    "BlobWriter",
    "Ledger",
    "LedgerError",
    "LedgerRow",
    "LedgerRowNotFound",
    "LedgerTransitionError",
    "RunHandle",
    "RunLockedError",
    "SchemaTooNewError",
    "StagingStore",
    "StoreError",
    "canonical_json",
    "content_hash",
]
