"""What can stop an export, by what the person at the console should do::

    HaulError (connectors.errors)
    ├── ExportOptionError   exit 2: an option, the config or the store named is wrong
    ├── ExportWriteError    exit 1: a file or folder could not be written (a full disk, a
    │                       folder haul may not write); nothing partial was kept
    └── ExportBusyError     exit 1: another export is writing into the same folder

A store that cannot be read is the runner's StorageError, as for every command. One table
that cannot be written is not an error here: the others are written and the export exits 3.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import ClassVar

from haul.connectors.errors import HaulError


class ExportOptionError(HaulError):
    """The export cannot start as asked: the message names the option and the way out."""

    exit_code: ClassVar[int] = 2


# what stops every table, not one: the disk, the quota, the folder's permissions, a file size
# limit the kernel sets for every file
_EVERY_TABLE = frozenset({
    errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EPERM, errno.EROFS,
})  # fmt: skip


def stops_every_table(exc: BaseException) -> bool:
    """Whether `exc`, raised writing one table, would stop any other table as well."""
    return isinstance(exc, OSError) and exc.errno in _EVERY_TABLE


class ExportWriteError(HaulError):
    """A file or folder of the export could not be written; nothing of this run was kept."""

    @classmethod
    def from_os_error(cls, exc: OSError, out: Path) -> ExportWriteError:
        """The error for `exc` raised while writing under `out`, said so a person can act."""
        where = exc.filename or out
        if exc.errno == errno.ENOSPC:
            cause = f"the disk under {out} is full"
        elif exc.errno == errno.EFBIG:
            cause = f"{where} grew past the largest file allowed here"
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            cause = f"haul may not write {where}"
        else:
            cause = f"cannot write {where}: {exc.strerror or exc}"
        return cls(
            f"export failed: {cause}; nothing of this run was kept (earlier exports are "
            "untouched): fix that, then run the same command"
        )


class ExportBusyError(HaulError):
    """Another `haul export` holds the output folder."""

    def __init__(self, out: Path) -> None:
        super().__init__(
            f"another haul export is writing into {out}: wait for it to end, or give another --out"
        )
