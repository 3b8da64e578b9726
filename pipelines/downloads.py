"""A file's bytes into the blob store, whole or not at all: what every drain downloads with.

`download_checked` runs a service client's download into a fresh blob writer and checks the
size the listing gave. A body that came short or long (a cut connection, a wrong length) is
thrown away and fetched again, a few times; a download the service refuses is this record's
problem (`DownloadProblem`), never the run's.

`intact` is the check before a staged blob is used again (a drain that would download it
anew, the load that sends it): blob files are not fsynced, so after a power cut one can be
short; only bytes that still hash to their name are used. `staged_or_fetched` is the one way
every drain decides between the bytes it staged before and a new download.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from haul.connectors.errors import BodyMismatch, RecordError
from haul.connectors.http import Sink
from haul.state.blobs import BlobStore
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

ATTEMPTS = 3
# a blob bigger than this is re-hashed in a worker thread, not on the event loop
HASH_INLINE_LIMIT = 1024 * 1024


class HashSink:
    """A download sink that keeps only the sha256 and the size of what it is given: verify
    reads a target's bytes back without storing them."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        """Take one chunk."""
        self._hash.update(data)
        self.size += len(data)
        return len(data)

    def hexdigest(self) -> str:
        """The sha256 of everything written, in hex."""
        return self._hash.hexdigest()


class DownloadProblem(Exception):
    """A file's bytes could not be had whole; the message says why."""


class _WrongSize(Exception):
    pass


async def download_checked(
    blobs: BlobStore,
    fetch: Callable[[Sink], Awaitable[Any]],
    *,
    name: str,
    expected: int | None,
    attempts: int = ATTEMPTS,
) -> tuple[str, int]:
    """`fetch(sink)` into the blob store; (sha256, size) once the size is the `expected` one."""
    problem = ""
    for _ in range(attempts):
        try:
            with blobs.writer() as sink:
                await fetch(sink)
                if expected is not None and sink.size != expected:
                    # raised inside the writer's block: the short file is discarded
                    raise _WrongSize(f"expected {expected} bytes, got {sink.size}")
        except (_WrongSize, BodyMismatch) as exc:  # a fresh file, a fresh try
            problem = f"download of {name!r} came short or long: {exc}"
            log.warning("download_wrong_size", file=name, error=str(exc))
            continue
        except RecordError as exc:
            raise DownloadProblem(f"download of {name!r} failed: {exc}") from exc
        return sink.sha256, sink.size
    raise DownloadProblem(f"{problem} ({attempts} attempts)")


async def intact(blobs: BlobStore, sha256: str | None) -> bool:
    """True if the blob is stored and its bytes still hash to `sha256`."""
    if not sha256:
        return False
    try:
        size = blobs.path(sha256).stat().st_size
    except FileNotFoundError:
        return False
    if size <= HASH_INLINE_LIMIT:
        return blobs.intact(sha256)
    return await asyncio.to_thread(blobs.intact, sha256)


async def staged_or_fetched(
    store: StagingStore,
    entity: str,
    source_id: str,
    size: Any,
    download: Callable[[], Awaitable[str]],
) -> tuple[str | None, str | None]:
    """The sha256 of one file's bytes, and None; or None and why they could not be had whole.

    The bytes a staged record of `entity` already holds are used again while it is the same
    file (the same listed `size`) and they still hash to their name; else `download()` fetches
    them anew (a `DownloadProblem` is the record's problem, not the drain's).
    """
    staged = store.get_record(entity, source_id)
    if (
        staged is not None
        and staged.blob
        and staged.raw.get("size") == size
        and await intact(store.blobs, staged.blob)
    ):
        return staged.blob, None
    try:
        return await download(), None
    except DownloadProblem as exc:
        return None, str(exc)
