"""Run records and the run lock: one haul run at a time per store.

The lock is an exclusive ``flock`` on ``<db>.lock``. The kernel releases it when the
holder's process ends, however it ends (SIGKILL, crash, a container stopped), so a lock
is never stale in the kernel's eyes and pid reuse cannot fool it. The ``runs`` table
says who holds it: a run's row has no ``ended_at`` while it runs. When the lock is free
but such a row remains, its process died without closing it: the new run takes over,
marks that row interrupted and reports it in ``RunHandle.took_over_from``.
"""

import fcntl
import json
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from haul.state.clock import Clock
from haul.state.errors import StoreError
from haul.state.reads import fetch_one
from haul.state.transactions import joined

_RUN_COLUMNS = (
    "id, command, pid, host, started_at, ended_at, outcome, counts, error, took_over_from"
)


class RunLockedError(StoreError):
    """Another run holds the store; `holder` describes it (pid, command, started_at, host)."""

    def __init__(self, lock_path: Path, holder: dict[str, Any] | None) -> None:
        self.path = self.lock_path = lock_path
        self.holder = holder
        if holder is None:
            detail = "a process that has not recorded its run yet"
        else:
            detail = (
                f"pid {holder['pid']} on {holder['host']}, command {holder['command']!r}, "
                f"started {holder['started_at']}"
            )
        Exception.__init__(
            self,
            f"another haul run holds the store ({lock_path}): {detail}; wait for it to end, "
            "or stop it",
        )


@dataclass
class RunHandle:
    """The caller's view of a run in progress; fill `counts` before the block ends."""

    id: int
    command: str
    started_at: str
    took_over_from: dict[str, Any] | None = None
    counts: dict[str, Any] = field(default_factory=dict)


@contextmanager
def recorded_run(db: Database, lock_path: Path, command: str, clock: Clock) -> Iterator[RunHandle]:
    """Hold the run lock and record the run from start to outcome.

    Outcome: "ok" on a clean exit; "failed" (with the message) on an Exception;
    "interrupted" on KeyboardInterrupt, task cancellation or any other BaseException.
    The exception is re-raised. Raises RunLockedError if another run holds the store.
    """
    lock_fd = _take_lock(db, lock_path)
    try:
        handle = _start(db, command, clock)
        try:
            yield handle
        except Exception as exc:
            outcome = "interrupted" if getattr(exc, "interrupts_run", False) else "failed"
            _finish(db, handle, outcome, str(exc) or type(exc).__name__, clock)
            raise
        except BaseException as exc:
            _finish(db, handle, "interrupted", type(exc).__name__, clock)
            raise
        _finish(db, handle, "ok", None, clock)
    finally:
        os.close(lock_fd)  # closing the only descriptor releases the flock


def recent_runs(db: Database, limit: int = 10) -> list[dict[str, Any]]:
    """The latest runs, newest first; outcome and ended_at are None while a run is going."""
    rows = db.query(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY id DESC LIMIT ?", [limit])
    return [_decoded(row) for row in rows]


def latest_run(db: Database, commands: Sequence[str]) -> dict[str, Any] | None:
    """The newest run whose command is one of `commands`, or None."""
    if not commands:
        return None
    marks = ", ".join("?" * len(commands))
    row = fetch_one(
        db,
        f"SELECT {_RUN_COLUMNS} FROM runs WHERE command IN ({marks}) ORDER BY id DESC LIMIT 1",
        list(commands),
    )
    return None if row is None else _decoded(row)


def _take_lock(db: Database, lock_path: Path) -> int:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # A fresh descriptor each time: flock locks belong to the open file, so a second
        # run in this same process is refused too.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunLockedError(lock_path, _open_run(db)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _start(db: Database, command: str, clock: Clock) -> RunHandle:
    now = clock()
    with joined(db):
        stale = _open_run(db)
        cursor = db.execute(
            "INSERT INTO runs (command, pid, host, started_at, took_over_from)"
            " VALUES (?, ?, ?, ?, ?)",
            [command, os.getpid(), socket.gethostname(), now, _json_or_none(stale)],
        )
        run_id = cursor.lastrowid
        assert run_id is not None
        # We hold the lock, so every run still open ended without closing its row.
        db.execute(
            "UPDATE runs SET ended_at = ?, outcome = 'interrupted', error = ?"
            " WHERE ended_at IS NULL AND id != ?",
            [now, f"its process ended without closing the run; run {run_id} took over", run_id],
        )
    return RunHandle(id=run_id, command=command, started_at=now, took_over_from=stale)


def _finish(db: Database, handle: RunHandle, outcome: str, error: str | None, clock: Clock) -> None:
    with joined(db):
        db.execute(
            "UPDATE runs SET ended_at = ?, outcome = ?, counts = ?, error = ? WHERE id = ?",
            [clock(), outcome, json.dumps(handle.counts, default=str), error, handle.id],
        )


def _open_run(db: Database) -> dict[str, Any] | None:
    """The latest run without an end: the lock holder, or a dead one if the lock is free."""
    return fetch_one(
        db,
        "SELECT id, command, pid, host, started_at FROM runs"
        " WHERE ended_at IS NULL ORDER BY id DESC LIMIT 1",
    )


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    for column in ("counts", "took_over_from"):
        if row[column] is not None:
            row[column] = json.loads(row[column])
    return row


def _json_or_none(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value)
