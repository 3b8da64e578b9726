"""Where an export's files go: dated folders under one output folder, `latest`, `--keep`.

    OUT/
      2024-05-01/              the first export of a day (the date in UTC)
        issues.parquet  ...    one file per table
        manifest.json          every file with its rows, bytes and sha256; the run, watermark
      2024-05-01T183012/       a second export the same day: the time (UTC) is added
      latest -> 2024-05-01T183012   a symlink; a text file holding the name where links fail
      .haul-export.lock        one export at a time per OUT

`--keep` removes only folders that are haul's: a dated name with haul's manifest inside;
anything else in OUT (a person's own `2024-01-01` folder) is left alone. A table's name too
long for a file name is cut, with a digest of the whole name to keep it apart (`file_name`).

Nothing appears half-written: each file is written under a temporary name in its folder and
renamed when complete; the dated folder is built under a hidden temporary name in OUT and
renamed when every file and the manifest are in it; only then does `latest` move (replaced
by a rename, too). A run that fails removes its temporary folder; one that was killed leaves
it hidden, and the next export (holding the lock, so no other is writing) sweeps it away.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from haul.pipelines.export.errors import ExportBusyError, ExportOptionError

MANIFEST = "manifest.json"
LATEST = "latest"
LOCK = ".haul-export.lock"
TEMP_PREFIX = ".incoming-"
NAME_MAX_BYTES = 255  # one name's limit on ext4, XFS, btrfs, APFS and NTFS
DATED = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{6})?(-\d+)?")


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold OUT's export lock (created with OUT as needed); ExportBusyError if another has it.

    The kernel drops an flock when its process ends, however it ends: a lock is never stale.
    """
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ExportBusyError(out) from None
        yield
    finally:
        os.close(fd)


def sweep(out: Path) -> list[Path]:
    """Remove the temporary folders of exports that were killed (call it holding the lock)."""
    stale = [path for path in out.glob(TEMP_PREFIX + "*") if path.is_dir()]
    for path in stale:
        shutil.rmtree(path)
    return stale


@contextmanager
def building(out: Path) -> Iterator[Path]:
    """A hidden temporary folder in OUT to build one export in; removed if the block fails."""
    folder = out / f"{TEMP_PREFIX}{secrets.token_hex(6)}"
    folder.mkdir()  # with the umask's permissions, unlike mkdtemp's private 0700
    try:
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # our own half-built folder, whatever is in it
        raise


@contextmanager
def atomic_file(final: Path) -> Iterator[Path]:
    """A temporary path beside `final` to write; renamed to `final` (after an fsync) if the
    block ends well, removed if it fails."""
    partial = final.with_name(f".{final.name}.part")
    try:
        yield partial
        _fsync(partial)
        os.replace(partial, final)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_json(path: Path, document: dict[str, Any]) -> None:
    """`document` as indented JSON at `path`, atomically."""
    with atomic_file(path) as partial:
        partial.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")


def publish(out: Path, built: Path, now: datetime) -> Path:
    """Rename the built folder to its dated name in OUT, then point `latest` at it."""
    final = out / dated_name(now, {path.name for path in out.iterdir()})
    _fsync_folder(built)
    os.rename(built, final)
    _fsync_folder(out)
    point_latest(out, final.name)
    return final


def dated_name(now: datetime, taken: set[str]) -> str:
    """`YYYY-MM-DD` of `now` (UTC); `YYYY-MM-DDTHHMMSS` if that is taken; then `-2`, `-3`..."""
    day = now.strftime("%Y-%m-%d")
    if day not in taken:
        return day
    stamp = now.strftime("%Y-%m-%dT%H%M%S")
    name, count = stamp, 1
    while name in taken:
        count += 1
        name = f"{stamp}-{count}"
    return name


def point_latest(out: Path, name: str) -> None:
    """Make OUT/latest name the folder `name`: a relative symlink, replaced atomically; a text
    file holding the name where the file system has no symlinks."""
    temporary = out / f".{LATEST}.part"
    temporary.unlink(missing_ok=True)
    try:
        os.symlink(name, temporary)
    except (NotImplementedError, OSError):
        with atomic_file(out / LATEST) as partial:
            partial.write_text(name + "\n", encoding="utf-8")
        return
    os.replace(temporary, out / LATEST)
    _fsync_folder(out)


def latest(out: Path) -> Path | None:
    """The folder OUT/latest names (a symlink or a text file), if it exists."""
    pointer = out / LATEST
    if pointer.is_symlink():
        name = os.readlink(pointer)
    elif pointer.is_file():
        name = pointer.read_text(encoding="utf-8").strip()
    else:
        return None
    folder = out / Path(name).name
    return folder if folder.is_dir() else None


def latest_manifest(out: Path) -> dict[str, Any] | None:
    """The manifest of the latest export in OUT, or None when there is none."""
    folder = latest(out)
    if folder is None or not (folder / MANIFEST).is_file():
        return None
    try:
        manifest: dict[str, Any] = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExportOptionError(
            f"--since last: {folder / MANIFEST} is not a haul manifest ({exc}): export once "
            "without --since, or with --since DATE"
        ) from None
    return manifest


def dated_folders(out: Path) -> list[Path]:
    """The export folders haul wrote in OUT, oldest first (their names sort by time)."""
    return sorted(
        (
            path
            for path in out.iterdir()
            if path.is_dir()
            and not path.is_symlink()
            and DATED.fullmatch(path.name)
            and written_by_haul(path)
        ),
        key=lambda path: path.name,
    )


def written_by_haul(folder: Path) -> bool:
    """Whether `folder` holds the manifest of a haul export (what `--keep` may remove)."""
    manifest = folder / MANIFEST
    if manifest.is_symlink() or not manifest.is_file():
        return False
    try:
        document = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(document, dict) and {"haul_version", "files", "tables"} <= document.keys()


def file_name(name: str, suffix: str) -> str:
    """`name + suffix` as a file name: cut when longer than a file system takes (with the
    temporary `.NAME.part` it is first written as), on a character's edge, then `-` and 8 hex
    digits of the whole name's sha256, so two long names that start alike stay apart."""
    budget = NAME_MAX_BYTES - len(".") - len(".part") - len(suffix.encode())
    encoded = name.encode("utf-8")
    if len(encoded) <= budget:
        return name + suffix
    digest = hashlib.sha256(encoded).hexdigest()[:8]
    head = encoded[: budget - len(digest) - 1].decode("utf-8", errors="ignore")
    return f"{head}-{digest}{suffix}"


def prune(out: Path, keep: int) -> list[Path]:
    """Remove haul's dated folders beyond the newest `keep`, never the one `latest` names."""
    current = latest(out)
    doomed = [path for path in dated_folders(out)[:-keep] if path != current]
    for path in doomed:
        shutil.rmtree(path)
    return doomed


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(path: Path) -> None:
    # a rename is durable once its folder is synced; some file systems cannot sync folders
    with suppress(OSError):
        _fsync(path)
