"""The SQLite staging store: staged records, checkpoints, the load ledger, runs and blobs."""

from state.blobs import BlobStore, BlobWriter
from state.hashing import canonical_json, content_hash
from state.ledger import (
    Ledger,
    LedgerError,
    LedgerRow,
    LedgerRowNotFound,
    LedgerTransitionError,
)
from state.runs import RunHandle, RunLockedError
from state.schema import SchemaTooNewError
from state.store import StagingStore

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
    "canonical_json",
    "content_hash",
]
