"""Content-addressed attachment bytes in a folder beside the database.

A blob is stored under its sha256: ``root/ab/cd/abcd...``. Bytes are streamed to a temp
file in ``root`` while they are hashed, then fsynced and renamed into place, so a blob
path either holds the complete bytes or does not exist, even after a SIGKILL.
"""

import asyncio
import hashlib
import os
import re
import tempfile
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

_SHA256 = re.compile(r"[0-9a-f]{64}")
_TEMP_PREFIX = ".incoming-"


class BlobStore:
    """The folder of blobs; create writers, find and open finished blobs."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def writer(self) -> "BlobWriter":
        """Return a context manager that streams one blob in; see BlobWriter."""
        return BlobWriter(self)

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

    On a clean exit the bytes are fsynced and renamed to their sha256 name (if that blob
    already exists the new copy is dropped), and ``sha256`` and ``size`` are set. On an
    exception the temp file is removed and nothing is stored.
    """

    def __init__(self, store: BlobStore) -> None:
        self._store = store
        self._hash = hashlib.sha256()
        self._size = 0
        self._file: BinaryIO | None = None
        self._temp: Path | None = None
        self._sha256: str | None = None

    def __enter__(self) -> Self:
        self._store.root.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self._store.root, prefix=_TEMP_PREFIX, suffix=".part")
        self._temp = Path(name)
        self._file = os.fdopen(fd, "wb")
        return self

    # In async code: the temp file's creation and the fsync that makes the blob durable
    # block for milliseconds each, so they run in a thread, not on the event loop.
    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.__enter__)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.__exit__, exc_type, exc, tb)

    def write(self, data: bytes) -> int:
        """Hash and append `data` to the temp file; return its length."""
        if self._file is None:
            raise ValueError("BlobWriter.write outside its with-block")
        self._hash.update(data)
        self._size += len(data)
        return self._file.write(data)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._file is not None and self._temp is not None
        file, temp, self._file = self._file, self._temp, None
        try:
            if exc_type is None:
                self._finish(file, temp)
        finally:
            file.close()
            if self._sha256 is None:  # failed or abandoned: the temp file is ours to remove
                temp.unlink(missing_ok=True)

    def _finish(self, file: BinaryIO, temp: Path) -> None:
        file.flush()
        os.fsync(file.fileno())
        file.close()
        digest = self._hash.hexdigest()
        final = self._store.path(digest)
        if final.exists():
            temp.unlink()  # same bytes already stored: keep one copy
        else:
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
