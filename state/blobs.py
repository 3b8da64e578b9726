"""Content-addressed attachment bytes in a folder beside the database.

A blob is stored under its sha256: ``root/ab/cd/abcd...``. Bytes are hashed as they come
and go to a temp file in ``root`` (a small blob of announced size is gathered in memory
first), which is fsynced and renamed into place, so a blob path either holds the complete
bytes or does not exist, even after a SIGKILL.
"""

import asyncio
import hashlib
import itertools
import os
import re
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

_SHA256 = re.compile(r"[0-9a-f]{64}")
_TEMP_PREFIX = ".incoming-"
_TEMP_NUMBERS = itertools.count()


# A blob announced at most this big is gathered in memory and written, fsynced and renamed in
# one trip to a worker thread; a bigger one, or one of unknown size, streams to its temp file
# (a trip to make it, another to finish it). The trip saved is about a quarter of a small
# blob's CPU (bench/blobs.py).
IN_MEMORY_LIMIT = 1024 * 1024


class BlobStore:
    """The folder of blobs; create writers, find and open finished blobs."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._root_made = False

    def writer(self, *, expected_size: int | None = None) -> "BlobWriter":
        """Return a context manager that streams one blob in; see BlobWriter.

        `expected_size` (the size the listing gave, if any) lets a small blob be gathered in
        memory and written in one go; more bytes than that are still taken, on disk.
        """
        return BlobWriter(
            self, in_memory=expected_size is not None and expected_size <= IN_MEMORY_LIMIT
        )

    def make_root(self) -> None:
        """Create the blob folder (once per store)."""
        if not self._root_made:
            self.root.mkdir(parents=True, exist_ok=True)
            self._root_made = True

    def new_temp(self) -> tuple[Path, int]:
        """A new temp file in the blob folder, open for writing: (its path, its descriptor).

        Named by this process and a counter, created exclusively: no two writers share one.
        """
        self.make_root()
        while True:
            temp = self.root / f"{_TEMP_PREFIX}{os.getpid()}-{next(_TEMP_NUMBERS)}.part"
            try:
                return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # left by a killed process that had the same pid
                continue

    def remove_leftovers(self) -> int:
        """Delete the temp files of writers that never finished (a killed run's downloads);
        return how many. Only for the holder of the store's run lock: no other writer runs."""
        removed = 0
        for leftover in self.root.glob(f"{_TEMP_PREFIX}*.part"):
            leftover.unlink(missing_ok=True)
            removed += 1
        return removed

    def path(self, sha256: str) -> Path:
        """Where the blob with this hex sha256 lives (whether or not it exists yet)."""
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a lowercase hex sha256: {sha256!r}")
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def exists(self, sha256: str) -> bool:
        """True if the blob's bytes are stored."""
        return self.path(sha256).is_file()

    def open(self, sha256: str) -> BinaryIO:
        """Open the blob for binary reading; FileNotFoundError if it is not stored."""
        return self.path(sha256).open("rb")


class BlobWriter:
    """File-like sink for one blob: ``with store.writer() as w: w.write(chunk)``.

    On a clean exit the bytes are fsynced and renamed to their sha256 name (a blob already
    stored under it is replaced by its equal: one copy stays), and ``sha256`` and ``size``
    are set. On an exception the temp file is removed and nothing is stored. An in-memory
    writer keeps the bytes until its exit (or until they pass IN_MEMORY_LIMIT) and only then
    makes its file.
    """

    def __init__(self, store: BlobStore, *, in_memory: bool = False) -> None:
        self._store = store
        self._hash = hashlib.sha256()
        self._size = 0
        self._open = False
        self._buffer: bytearray | None = bytearray() if in_memory else None
        self._file: BinaryIO | None = None
        self._temp: Path | None = None
        self._sha256: str | None = None

    def __enter__(self) -> Self:
        self._open = True
        if self._buffer is None:
            self._make_temp()
        return self

    # In async code: the temp file's creation and the fsync that makes the blob durable
    # block for milliseconds each, so they run in a thread, not on the event loop; an
    # in-memory writer needs the thread once, at its exit.
    async def __aenter__(self) -> Self:
        if self._buffer is not None:
            return self.__enter__()
        return await asyncio.to_thread(self.__enter__)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self._file is None:  # nothing on disk: nothing to block on
            self.__exit__(exc_type, exc, tb)
            return
        await asyncio.to_thread(self.__exit__, exc_type, exc, tb)

    def _make_temp(self) -> None:
        self._temp, fd = self._store.new_temp()
        self._file = os.fdopen(fd, "wb")

    def _spill(self) -> None:
        """Move the gathered bytes to a temp file; the rest of the blob goes there too."""
        assert self._buffer is not None
        buffer, self._buffer = self._buffer, None
        self._make_temp()
        assert self._file is not None
        self._file.write(buffer)

    def write(self, data: bytes) -> int:
        """Hash and append `data` to the blob; return its length."""
        if not self._open:
            raise ValueError("BlobWriter.write outside its with-block")
        self._hash.update(data)
        self._size += len(data)
        if self._buffer is None:
            assert self._file is not None
            return self._file.write(data)
        self._buffer += data
        if len(self._buffer) > IN_MEMORY_LIMIT:  # more than announced: on to disk after all
            self._spill()
        return len(data)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._open = False
        try:
            if exc_type is None:
                if self._buffer is not None:  # gathered in memory: its file is made now
                    self._spill()
                assert self._file is not None and self._temp is not None
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                self._place(self._temp)
        finally:
            self._buffer = None
            if self._file is not None:
                self._file.close()
                self._file = None
            if self._sha256 is None and self._temp is not None:  # failed or abandoned
                self._temp.unlink(missing_ok=True)

    def _place(self, temp: Path) -> None:
        """Rename the complete temp file to its sha256 name (the same bytes stored before are
        replaced by their equal: one copy stays)."""
        digest = self._hash.hexdigest()
        final = self._store.path(digest)
        try:
            os.replace(temp, final)
        except FileNotFoundError:  # the first blob of its folder
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(temp, final)
        self._sha256 = digest

    @property
    def sha256(self) -> str:
        """Hex sha256 of the bytes written; available after a clean exit."""
        if self._sha256 is None:
            raise ValueError("the blob is not finished: sha256 is known after a clean exit")
        return self._sha256

    @property
    def size(self) -> int:
        """Number of bytes written so far."""
        return self._size
