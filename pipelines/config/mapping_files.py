"""The mapping files a config names (`[mapping] users_file`, `groups_file`).

Each is CSV of two columns, `source,target`: a header row naming the columns is allowed, blank
lines and lines starting with `#` are skipped, and anything else that is not two non-empty
cells is a config error naming the file and line (exit 2). A file as spreadsheets save it (a
byte order mark first, CRLF line ends: Excel's "CSV UTF-8") reads the same as a plain one. A
source mapped on two lines is a config error naming both: which one was meant is the user's
call, not the last line's.
"""

from __future__ import annotations

import csv
from pathlib import Path

from haul.connectors.errors import HaulError


class MappingFileError(HaulError):
    """A mapping file cannot be read; the message names the key, the file and the line."""

    exit_code = 2


def read_pairs(path: Path, *, key: str, columns: str, headers: tuple[str, ...]) -> dict[str, str]:
    """`source -> target` from the file at `path` (`key` is its config key, `columns` what a
    row holds, `headers` the first cells a header row may start with)."""
    try:
        return _pairs(path, key, columns, headers)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MappingFileError(f"config error: {key}: cannot read {path}: {exc}") from exc


def _pairs(path: Path, key: str, columns: str, headers: tuple[str, ...]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    lines: dict[str, int] = {}  # source -> the line that mapped it
    # utf-8-sig: a leading BOM would otherwise glue itself to the first row's source
    with path.open(newline="", encoding="utf-8-sig") as handle:
        for number, row in enumerate(csv.reader(handle, strict=True), start=1):
            cells = [cell.strip() for cell in row]
            if not cells or not any(cells) or cells[0].startswith("#"):
                continue
            if len(cells) < 2 or not cells[0] or not cells[1]:
                raise MappingFileError(
                    f"config error: {key}: {path}:{number}: expected '{columns}', "
                    f"got {','.join(row)!r}"
                )
            if number == 1 and cells[0].lower() in headers:
                continue
            if cells[0] in lines:
                raise MappingFileError(
                    f"config error: {key}: {cells[0]!r} is mapped twice, at {path}:"
                    f"{lines[cells[0]]} (to {mapping[cells[0]]!r}) and at {path}:{number} (to"
                    f" {cells[1]!r}): keep one of the two lines"
                )
            mapping[cells[0]], lines[cells[0]] = cells[1], number
    return mapping


def read_users_csv(path: Path) -> dict[str, str]:
    """`source login,target login` rows."""
    return read_pairs(
        path,
        key="mapping.users_file",
        columns="source login,target login",
        headers=("source", "source_login", "login"),
    )


def read_groups_csv(path: Path) -> dict[str, str]:
    """`source group,target group` rows (a target group by name, or `dir:<id>`)."""
    return read_pairs(
        path,
        key="mapping.groups_file",
        columns="source group,target group",
        headers=("source", "source group", "source_group"),
    )
