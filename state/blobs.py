"""Content-addressed attachment bytes in a folder beside the database.

A blob is stored under its sha256: ``root/ab/abcd...``, one folder level (at most 256
folders). A store written before kept its blobs two levels down, ``root/ab/cd/abcd...``: such a
blob is found there and read in place; a new one goes to one level. Each file or folder made is
an inode the filesystem allocates, and on ext4 that allocation was about a quarter of the
small org's extract CPU (perf: `find_inode_bit`, `recently_deleted`) when the second level
made a folder for nearly every blob (1 776 folders for 1 542 blobs; one level: 256, and the
extract's CPU 4.0-4.2 s instead of 5.2-5.5, interleaved A/B runs). Bytes are hashed as they
come and go to a temp file in ``root``, which is renamed into place once whole, so a blob path
either holds the complete bytes or does not exist, even after a SIGKILL.

A blob is as durable as the staging database beside it (WAL, synchronous NORMAL): whole after
a killed process, not promised after a power cut, which can also take the database's latest
commits. Blob files are not fsynced one by one: the fsync, and the worker thread that kept it
off the event loop, were a tenth of the extract's CPU (interleaved A/B runs of the small
org). What a power cut could leave, a file shorter than or different from its name, is caught
by `intact`, asked before a staged blob is used again: by a drain before it skips the
download, by the load before it sends the bytes.
"""

import errno
import hashlib
import itertools
import os
import re
import shutil
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

from haul.state.private import make_private_folder

_SHA256 = re.compile(r"[0-9a-f]{64}")
_TEMP_PREFIX = ".incoming-"
_TEMP_NUMBERS = itertools.count()


def blob_root(database: Path) -> Path:
    """The blob folder beside the staging database at `database`."""
    return database.with_name(database.name + ".blobs")


class BlobStore:
    """The folder of blobs; create writers, find and open finished blobs."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._root_made = False

    def writer(self) -> "BlobWriter":
        """Return a context manager that streams one blob in; see BlobWriter."""
        return BlobWriter(self)

    def make_root(self) -> None:
        """Create the blob folder (once per store)."""
        if not self._root_made:
            make_private_folder(self.root)
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
        """Where the blob with this hex sha256 lives: where an earlier store put it two levels
        down, if it is there; else its place (whether or not it exists yet)."""
        return self._stored(sha256) or self.placed(sha256)

    def placed(self, sha256: str) -> Path:
        """Where a blob with this hex sha256 is written: ``root/ab/abcd...``."""
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a lowercase hex sha256: {sha256!r}")
        return self.root / sha256[:2] / sha256

    def exists(self, sha256: str) -> bool:
        """True if the blob's bytes are stored (one look where it is placed, a second where an
        earlier store kept it)."""
        return self._stored(sha256) is not None

    def _stored(self, sha256: str) -> Path | None:
        """Where the blob's bytes are: its place, else where an earlier store kept them."""
        for where in (self.placed(sha256), _earlier(self.root, sha256)):
            if where.is_file():
                return where
        return None

    def open(self, sha256: str) -> BinaryIO:
        """Open the blob for binary reading; FileNotFoundError if it is not stored."""
        return self.path(sha256).open("rb")

    def intact(self, sha256: str) -> bool:
        """True if the blob is stored and its bytes still hash to its name."""
        try:
            with self.path(sha256).open("rb", buffering=0) as stored:
                return hashlib.file_digest(stored, "sha256").hexdigest() == sha256
        except FileNotFoundError:
            return False

    def adopt(self, other: "BlobStore", sha256: str) -> str:
        """Make `other`'s blob `sha256` one of this store's: "held" if it already was,
        "linked" (a hard link: no bytes copied), "copied" where the two folders cannot share
        a file (another filesystem, or one without hard links), "missing" if `other` lacks it.

        The link or copy is made under a temp name and renamed into place, as a download is:
        a blob path holds the whole bytes or nothing, even after a SIGKILL.
        """
        if self.exists(sha256):
            return "held"
        source = other.path(sha256)
        if not source.is_file():
            return "missing"
        temp, fd = self.new_temp()  # a name no other writer holds; a link needs it absent
        os.close(fd)
        temp.unlink()
        try:
            how = _link_or_copy(source, temp)
            final = self.placed(sha256)
            make_private_folder(final.parent)
            os.replace(temp, final)
        finally:
            temp.unlink(missing_ok=True)
        return how

    def discard(self, sha256: str) -> None:
        """Delete the blob, if it is stored (where an earlier store kept it too)."""
        self.placed(sha256).unlink(missing_ok=True)
        _earlier(self.root, sha256).unlink(missing_ok=True)


def _earlier(root: Path, sha256: str) -> Path:
    """Where a store written before kept the blob: two folder levels down."""
    return root / sha256[:2] / sha256[2:4] / sha256


def _link_or_copy(source: Path, to: Path) -> str:
    """Hard-link `source` as `to`, else copy it there (0600); "linked" or "copied"."""
    try:
        os.link(source, to)
        return "linked"
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES):
            raise
    with source.open("rb") as bytes_in, open(os.open(to, _NEW_FILE, 0o600), "wb") as bytes_out:
        shutil.copyfileobj(bytes_in, bytes_out)
    return "copied"


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL


class BlobWriter:
    """File-like sink for one blob: ``with store.writer() as w: w.write(chunk)``.

    On a clean exit the bytes are renamed to their sha256 name (a blob already
    stored under it is replaced by its equal: one copy stays), and ``sha256`` and ``size``
    are set. On an exception the temp file is removed and nothing is stored.
    """

    def __init__(self, store: BlobStore) -> None:
        self._store = store
        self._hash = hashlib.sha256()
        self._size = 0
        self._open = False
        self._file: BinaryIO | None = None
        self._temp: Path | None = None
        self._sha256: str | None = None

    def __enter__(self) -> Self:
        self._temp, fd = self._store.new_temp()
        self._file = os.fdopen(fd, "wb")
        self._open = True
        return self

    def write(self, data: bytes) -> int:
        """Hash and append `data` to the blob; return its length."""
        if not self._open:
            raise ValueError("BlobWriter.write outside its with-block")
        assert self._file is not None
        self._hash.update(data)
        self._size += len(data)
        return self._file.write(data)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._open = False
        try:
            if exc_type is None:
                assert self._file is not None and self._temp is not None
                self._file.close()
                self._place(self._temp)
        finally:
            if self._file is not None:
                self._file.close()
                self._file = None
            if self._sha256 is None and self._temp is not None:  # failed or abandoned
                self._temp.unlink(missing_ok=True)

    def _place(self, temp: Path) -> None:
        """Rename the complete temp file to its sha256 name (the same bytes stored before are
        replaced by their equal: one copy stays)."""
        digest = self._hash.hexdigest()
        final = self._store.placed(digest)
        try:
            os.replace(temp, final)
        except FileNotFoundError:  # the first blob of its folder
            make_private_folder(final.parent)
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
