"""The staging store's errors: what went wrong with the file, said so a person can act.

The store may not import connectors (DESIGN.md's arrows), so it has its own small tree;
the runner turns any of these into the command line's `StorageError` (exit 1). `sqlite3`
and `OSError` failures are translated here, where they happen, by `store_errors`::

    StoreError                  the store cannot be used; `path` names the file
    ├── SchemaTooNewError       written by a newer haul
    ├── NotAStoreError          the file is not a SQLite database
    ├── StoreLockedError        another program holds a lock on the file
    ├── StoreFullError          the disk is full (nothing committed was lost)
    ├── StoreAccessError        a folder or file haul may not create or write
    └── RunLockedError          another haul run holds the store (state.runs)
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class StoreError(Exception):
    """The staging store cannot be used; the message names the file and the way out."""

    exit_code = 1

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


class SchemaTooNewError(StoreError):
    """The store was written by a newer haul: its schema version is beyond the known steps."""


class NotAStoreError(StoreError):
    """The file at the staging path is not a SQLite database."""


class StoreLockedError(StoreError):
    """Another program (not haul's run lock) keeps the database locked."""


class StoreFullError(StoreError):
    """The disk under the store (or its blob folder) is full."""


class StoreAccessError(StoreError):
    """A folder or file of the store cannot be created, opened or written."""


def translate(exc: BaseException, path: Path) -> StoreError | None:
    """The store's own error for a `sqlite3` or `OSError` failure on `path`, else None."""
    text = str(exc).lower()
    if isinstance(exc, StoreError):
        return exc
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "disk is full" in text:
        return StoreFullError(
            path,
            f"the disk under {path} is full; nothing committed was lost: free space, then "
            "run the same command to resume",
        )
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
        return NotAStoreError(
            path,
            f"{path} is not a haul staging store (not a SQLite database): point [staging] "
            "path at another file, or move this one away",
        )
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return StoreLockedError(
            path,
            f"{path} is locked by another program (a SQLite browser, a backup?): close it, "
            "then run the same command again",
        )
    if isinstance(exc, sqlite3.OperationalError) and (
        "readonly" in text or "unable to open" in text
    ):
        return StoreAccessError(
            path,
            f"cannot write the staging store {path} ({exc}): check the folder's permissions, "
            "or point [staging] path somewhere writable",
        )
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return StoreAccessError(
            path,
            f"cannot create the staging folder for {path}: a file is in the way "
            f"({exc.filename}); point [staging] path elsewhere",
        )
    if isinstance(exc, PermissionError):
        return StoreAccessError(
            path,
            f"permission denied for {exc.filename or path}: make the folder writable, or "
            "point [staging] path somewhere writable",
        )
    return None


@contextmanager
def store_errors(path: Path) -> Iterator[None]:
    """Re-raise `sqlite3` and `OSError` failures about the store as its StoreError."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        translated = translate(exc, path)
        if translated is None:
            raise
        raise translated from exc
