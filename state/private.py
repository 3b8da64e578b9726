"""Files private to the user who runs haul: 0600 files, 0700 folders.

The staging store, its WAL and shared memory, its blobs, the log and the reports beside them
hold restricted records (a wiki page few may read, an issue's comments), so nobody else on
the host may read them, whatever the umask. A file haul made wider before is narrowed when
haul opens it again; a folder that already exists is left as it is (it may be a shared
parent the user chose), a folder haul makes is 0700.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from pathlib import Path
from typing import IO, Any

FILE_MODE = 0o600
FOLDER_MODE = 0o700
_OPEN_FLAGS = {
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
}


def make_private_folder(path: Path) -> None:
    """Create `path` and its missing parents, each 0700; existing folders stay as they are."""
    missing = []
    # looked for from `path` up, not from the root down: a new blob folder's parent is there
    for folder in itertools.chain((path,), path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):  # the outermost first
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            if not folder.is_dir():  # a file is in the way (a folder made meanwhile is not)
                raise


def open_private(path: Path, mode: str = "w", **text: Any) -> IO[Any]:
    """Open `path` for writing ("w", "a", "wb", "ab") as a file only the user can read:
    created 0600, narrowed to it if it was wider. `text`: encoding, newline."""
    fd = os.open(path, _OPEN_FLAGS[mode[0]], FILE_MODE)
    try:
        _narrow(fd)
        return os.fdopen(fd, mode, **text)
    except BaseException:
        os.close(fd)
        raise


def create_private_file(path: Path) -> None:
    """Make sure `path` exists as a private file (empty if new) before another library opens
    it with the umask's permissions: SQLite gives its WAL and shared memory the mode of the
    database file."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        _narrow(fd)
    finally:
        os.close(fd)


def narrow_if_present(path: Path) -> None:
    """Make an existing regular file at `path` private (a WAL left by an older haul)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode) and stat.S_IMODE(mode) & 0o077:
        with contextlib.suppress(PermissionError):  # another user's file: not haul's to change
            os.chmod(path, stat.S_IMODE(mode) & ~0o077)


def _narrow(fd: int) -> None:
    mode = os.fstat(fd).st_mode
    # a device (/dev/full, /dev/null) or a pipe named as a file is the user's choice
    if stat.S_ISREG(mode) and stat.S_IMODE(mode) & 0o077:
        with contextlib.suppress(PermissionError):
            os.fchmod(fd, stat.S_IMODE(mode) & ~0o077)
