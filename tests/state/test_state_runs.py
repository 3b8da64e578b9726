"""Run records and the run lock, within this process and across processes."""

import asyncio
import os
import signal
from pathlib import Path

import pytest

from haul.state import RunLockedError, StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_clean_run_is_recorded_ok_with_its_counts(store: StagingStore) -> None:
    """A run without error ends "ok" and keeps the counts the caller filled in."""
    with store.run("extract") as run:
        assert run.took_over_from is None
        run.counts.update(issues=12, comments=40)
    (last,) = store.recent_runs()
    assert last["id"] == run.id
    assert (last["command"], last["outcome"], last["error"]) == ("extract", "ok", None)
    assert last["counts"] == {"issues": 12, "comments": 40}
    assert last["pid"] == os.getpid()
    assert last["started_at"] == run.started_at <= last["ended_at"]


def test_recent_runs_are_newest_first_and_limited(store: StagingStore) -> None:
    """recent_runs lists the latest runs first, at most `limit` of them."""
    for command in ("extract", "load", "verify"):
        with store.run(command):
            pass
    assert [r["command"] for r in store.recent_runs(limit=2)] == ["verify", "load"]


def test_an_exception_fails_the_run_and_is_reraised(store: StagingStore) -> None:
    """An error ends the run "failed" with its message, and releases the lock."""
    with pytest.raises(RuntimeError, match="401"), store.run("load"):
        raise RuntimeError("401 from target: token expired")
    last = store.recent_runs()[0]
    assert (last["outcome"], last["error"]) == ("failed", "401 from target: token expired")
    with store.run("load"):
        pass


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, asyncio.CancelledError])
def test_ctrl_c_or_cancellation_marks_the_run_interrupted(
    store: StagingStore, interruption: type[BaseException]
) -> None:
    """KeyboardInterrupt (or a cancelled task) ends the run "interrupted" and propagates."""
    with pytest.raises(interruption), store.run("run"):
        raise interruption()
    assert store.recent_runs()[0]["outcome"] == "interrupted"


def test_a_second_run_in_the_same_process_is_refused(store: StagingStore) -> None:
    """The lock also guards against a second run in this very process."""
    with store.run("extract") as first:
        with pytest.raises(RunLockedError) as refused, store.run("load"):
            pass
        message = str(refused.value)
        assert str(os.getpid()) in message
        assert "extract" in message
        assert first.started_at in message
        other = StagingStore.open(store.path)
        with other, pytest.raises(RunLockedError), other.run("load"):
            pass
    assert [r["command"] for r in store.recent_runs()] == ["extract"]


def test_a_lock_left_by_a_dead_process_is_taken_over(store: StagingStore, spawn_worker) -> None:
    """A holder that died without releasing is stale: the next run takes over and says so."""
    child = spawn_worker("die-holding", store.path)
    assert child.stdout.readline() == "locked\n"
    assert child.wait(timeout=10) == 3

    with store.run("load") as run:
        assert run.took_over_from is not None
        assert run.took_over_from["pid"] == child.pid
        assert run.took_over_from["command"] == "load --crash"
    newest, stale = store.recent_runs()[:2]
    assert newest["took_over_from"]["pid"] == child.pid
    assert (stale["pid"], stale["outcome"]) == (child.pid, "interrupted")
    assert f"run {newest['id']} took over" in stale["error"]


def test_a_lock_held_by_a_live_process_is_refused(store: StagingStore, spawn_worker) -> None:
    """While another live process holds the lock, a run fails naming it; once it is
    killed, the lock is taken over."""
    child = spawn_worker("hold", store.path)
    assert child.stdout.readline() == "locked\n"

    with pytest.raises(RunLockedError) as refused, store.run("load"):
        pass
    assert refused.value.holder["pid"] == child.pid
    assert f"pid {child.pid}" in str(refused.value)
    assert "extract --hold" in str(refused.value)

    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    with store.run("load") as run:
        assert run.took_over_from["pid"] == child.pid


def test_lock_file_sits_beside_the_database(store: StagingStore) -> None:
    """The run lock is a file next to the store, not inside the blobs folder."""
    with store.run("extract"):
        pass
    assert Path(f"{store.path}.lock").exists()


def test_a_run_deletes_the_unfinished_blob_files_a_killed_run_left(store: StagingStore) -> None:
    """A download cut by SIGKILL leaves its temp file; the next run removes it, and nothing
    else in the blob folder."""
    with store.blobs.writer() as writer:
        writer.write(b"a whole file")
    kept = store.blobs.path(writer.sha256)
    leftover = store.blobs.root / ".incoming-4242-7.part"
    leftover.write_bytes(b"half a fi")
    with store.run("extract"):
        assert not leftover.exists()
    assert kept.read_bytes() == b"a whole file"
    assert [p for p in store.blobs.root.rglob("*") if p.is_file()] == [kept]
