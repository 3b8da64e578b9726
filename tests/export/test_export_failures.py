"""What goes wrong in an export, and what it leaves: a write that fails mid-file leaves no
partial file and no dated folder; bad options exit 2 with one line; a second export into the
same folder waits its turn; a health check that cannot be reached is only a warning."""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.helpers.cli_fixtures import HAUL
from tests.helpers.export_fixtures import Staged, only_folder


def files_under(out: Path) -> list[str]:
    return sorted(str(path.relative_to(out)) for path in out.rglob("*"))


def test_a_write_that_fails_leaves_no_partial_file_and_no_folder(staged: Staged) -> None:
    """With files limited to 64 KiB (the kernel refuses to grow one past it: EFBIG), the export
    stops at the first larger table: exit 1 and one line; the earlier export and `latest` are
    as they were, and nothing of the failed run is left, not even a hidden folder."""
    out = staged.directory / "atomic"
    done = staged.haul("export", "--config", staged.config, "--out", out)
    assert done.returncode == 0, done.stderr
    before = files_under(out)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    log = staged.store_path.with_suffix(".log")  # rotated: the limit would stop the log too
    log.rename(log.with_suffix(".log.1"))

    failed = staged.haul(
        "export", "--config", staged.config, "--out", out, "--since", "2000-01-01",
        preexec_fn=small_files,
    )  # fmt: skip

    assert failed.returncode == 1, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("haul: export failed: ") and "nothing of this run was kept" in last
    assert "Logging error" not in failed.stderr  # haul.log hit the limit too: one line says so
    assert files_under(out) == before


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--format", "xml"], "Invalid value for '--format'"),
        (["--since", "yesterday"], "haul: --since: 'yesterday' is not a date"),
        (["--entities", "issue,tickets"], "haul: --entities: no table or entity tickets"),
        (["--no-config"], "haul: --config: give the haul TOML file"),
        (["--no-store"], "haul: nothing staged yet: "),
    ],
)
def test_bad_options_exit_2_with_one_line(staged: Staged, options: list[str], says: str) -> None:
    """Each problem is one line on stderr, exit 2, nothing written."""
    args: list[str | Path] = [
        "export",
        "--config",
        staged.config,
        "--out",
        staged.directory / "bad",
    ]
    if options == ["--no-config"]:
        args = ["export", "--out", staged.directory / "bad"]
    elif options == ["--no-store"]:
        moved = staged.directory / "elsewhere.toml"
        moved.write_text(staged.config.read_text().replace('path = "haul.db"', 'path = "none.db"'))
        args[2] = moved
    else:
        args += options
    done = staged.haul(*args)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert not (staged.directory / "bad").exists()
    assert not (staged.directory / "none.db").exists()


def test_a_second_export_into_the_same_folder_is_refused(staged: Staged) -> None:
    """While one export holds OUT's lock, another into OUT stops at once: exit 1."""
    out = staged.directory / "busy"
    out.mkdir()
    fd = os.open(out / ".haul-export.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = staged.haul("export", "--config", staged.config, "--out", out)
    finally:
        os.close(fd)
    assert done.returncode == 1
    assert "another haul export is writing into" in done.stderr
    assert files_under(out) == [".haul-export.lock"]


class Pings(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Pings.seen.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def health_check() -> Iterator[str]:
    """A health check endpoint on loopback; its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ping/secret-uuid"
    finally:
        server.shutdown()
        server.server_close()


def test_the_config_gives_the_defaults_and_the_health_check_is_pinged(
    staged: Staged, health_check: str
) -> None:
    """[export] out, format and healthcheck_url apply when no option says otherwise (out is
    relative to the config's folder); one GET to the health check after the export."""
    Pings.seen.clear()
    config = staged.directory / "with-defaults.toml"
    defaults = f'out = "from-config"\nformat = "parquet"\nhealthcheck_url = "{health_check}"\n'
    config.write_text(staged.config.read_text() + "\n[export]\n" + defaults)
    done = staged.haul("export", "--config", config, "--entities", "issue")
    assert done.returncode == 0, done.stderr
    assert (only_folder(staged.directory / "from-config") / "issues.parquet").is_file()
    assert Pings.seen == ["/ping/secret-uuid"]


def test_an_unreachable_health_check_is_a_warning(staged: Staged) -> None:
    """A ping that fails does not fail the export: exit 0 and a warning naming the host only."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = staged.haul(
        "export", "--config", staged.config, "--out", staged.directory / "hc-down",
        "--entities", "users", "--healthcheck-url", f"http://127.0.0.1:{port}/ping/secret-uuid",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "haul: warning: the health check ping to 127.0.0.1 failed" in done.stderr
    assert "secret-uuid" not in done.stderr
    assert (only_folder(staged.directory / "hc-down") / "users.csv").is_file()


def test_without_out_the_export_goes_beside_the_config(staged: Staged) -> None:
    """No `--out` and no `[export] out`: the dated folder lands in `exports` beside the config."""
    done = staged.haul("export", "--config", staged.config)
    assert done.returncode == 0, done.stderr
    assert (staged.config.parent / "exports" / "latest").exists()


WRITE_ON_A_FULL_DISK = """
import sys
from pathlib import Path
from haul.pipelines.export.tables import Column, Table
from haul.pipelines.export.writers import XlsxWriter

path = Path(sys.argv[1])
writer = XlsxWriter(path, Table("notes", "note", (Column("text", "string", "", str),)))
writer.write([("a note",)] * 2_000)
path.unlink()
path.symlink_to("/dev/full")  # every write: "No space left on device"
try:
    writer.close()
except OSError as exc:
    print(exc.errno)
"""


def test_an_xlsx_file_on_a_full_disk_fails_with_its_error_alone(tmp_path: Path) -> None:
    """An XLSX file whose save meets a full disk (/dev/full refuses every write) raises its
    OSError (ENOSPC) and leaves nothing open: no traceback of a half-written workbook follows
    the export's last line when the interpreter ends."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this machine")
    done = subprocess.run(
        [sys.executable, "-c", WRITE_ON_A_FULL_DISK, str(tmp_path / "notes.xlsx")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, str(errno.ENOSPC), "")


FULL_DISK_SCRIPT = """
set -u
mount -t tmpfs -o size=16m tmpfs "$OUT"
"$HAUL" export --config "$CONFIG" --out "$OUT" --entities issues >/dev/null 2>&1 || exit 90
find "$OUT" -type f | sort | xargs sha256sum > "$LISTING.before"
dd if=/dev/zero of="$OUT/filler" bs=64k >/dev/null 2>&1  # until the disk is full
"$HAUL" export --config "$CONFIG" --out "$OUT" --format xlsx
status=$?
rm "$OUT/filler"
find "$OUT" -type f | sort | xargs sha256sum > "$LISTING.after"
exit $status
"""


def test_an_export_onto_a_full_disk_ends_with_one_line_and_keeps_the_last_export(
    staged: Staged, tmp_path: Path
) -> None:
    """A real full disk (a tmpfs filled up, mounted in a user namespace of its own, so no
    privilege is needed): exit 1, one last line naming the folder and what to do, no
    traceback, and the export published before it is there byte for byte."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False).returncode:
        pytest.skip("no user namespaces here (unshare -rm): cannot mount a small disk")
    out = tmp_path / "small-disk"
    out.mkdir()
    listing = tmp_path / "listing"
    env = {**staged.env, "OUT": str(out), "HAUL": str(HAUL), "CONFIG": str(staged.config),
           "LISTING": str(listing)}  # fmt: skip
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", FULL_DISK_SCRIPT],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"haul: export failed: the disk under {out} is full"), last
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    before = listing.with_suffix(".before").read_text()
    assert "issues.csv" in before and "manifest.json" in before
    assert listing.with_suffix(".after").read_text() == before
