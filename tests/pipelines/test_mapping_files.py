"""The users and groups mapping files: read as people save them, and never ambiguous."""

from __future__ import annotations

from pathlib import Path

import pytest

from haul.pipelines.config.mapping_files import MappingFileError, read_groups_csv, read_users_csv

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_users_file_saved_as_excel_csv_utf8_keeps_its_first_row(tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" starts the file with a byte order mark and ends lines with CRLF:
    the first row still maps its login (not a login that starts with an invisible BOM)."""
    path = tmp_path / "users.csv"
    path.write_bytes("alice,alice.new\r\nbob,bob.new\r\n".encode("utf-8-sig"))
    assert read_users_csv(path) == {"alice": "alice.new", "bob": "bob.new"}


def test_a_header_after_a_bom_is_still_a_header(tmp_path: Path) -> None:
    path = tmp_path / "groups.csv"
    path.write_bytes("source group,target group\r\nhr,people\r\n".encode("utf-8-sig"))
    assert read_groups_csv(path) == {"hr": "people"}


def test_a_login_mapped_twice_is_a_config_error_naming_both_lines(tmp_path: Path) -> None:
    """The last row does not silently win: which one was meant is the user's call."""
    path = tmp_path / "users.csv"
    path.write_text("source,target\nalice,alice.new\nbob,bob\n\nalice,alice.other\n", "utf-8")
    with pytest.raises(MappingFileError) as caught:
        read_users_csv(path)
    message = str(caught.value)
    assert "mapping.users_file" in message and "'alice'" in message
    assert f"{path}:2" in message and f"{path}:5" in message
    assert caught.value.exit_code == 2


def test_a_group_mapped_twice_is_a_config_error_naming_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "groups.csv"
    path.write_text("hr,people\r\nhr,people\r\n", "utf-8")
    with pytest.raises(MappingFileError, match=r"'hr'.*groups\.csv:1.*groups\.csv:2"):
        read_groups_csv(path)
