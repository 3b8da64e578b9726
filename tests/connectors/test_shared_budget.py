"""Budgets shared by processes through one file (connectors/shared_budget.py): the processes'
send slots together keep to the rate, a 429 one of them sees cuts the rate of all, a killed
process holds nothing up, and a limit kept per org is met with few 429s by two processes
sharing the token. Processes are real (spawned); nothing here is timed."""

from __future__ import annotations

import fcntl
import itertools
import json
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from haul.connectors.budget import PACE, AdaptiveBudget, FixedBudget, budget_for
from haul.connectors.shared_budget import (
    MAGIC,
    MARK,
    BudgetFileLocked,
    NotABudgetFile,
    SharedAdaptiveBudget,
    SharedBudget,
    bucket_key,
    budget_file,
    lock_holders,
)
from haul.sandbox.server import RunningSandbox, start_sandbox
from tests.connectors.shared_budget_workers import KEY, hold_the_lock, read_myself, take_slots

SPAWN = multiprocessing.get_context("spawn")
JOIN = 120.0  # seconds a worker may take before the test calls it stuck
SPENT = {"RateLimit-Remaining": "0", "RateLimit-Reset": "1", "RateLimit-Policy": "40;w=1"}


def made_by_haul(state: dict[str, Any]) -> str:
    """The text of a budget file haul wrote holding `state`."""
    return json.dumps({"haul": MARK, **state}, separators=(",", ":"))


def run_all(*processes: Any) -> None:
    for process in processes:
        process.start()
    for process in processes:
        process.join(JOIN)
        assert process.exitcode == 0, f"{process.name} stuck or failed ({process.exitcode})"


def test_processes_sharing_a_file_never_exceed_the_rate(tmp_path: Path) -> None:
    """Three processes of three tasks each take slots of one 40/s budget: every slot is at
    least 1/40 s after the one before it, whoever took it, so no second holds more than 41;
    each process got its turns."""
    path, rate, count = str(tmp_path / "budget.json"), 40.0, 20
    out = SPAWN.Queue()
    workers = [
        SPAWN.Process(target=take_slots, args=(path, rate, count, 3, out), name=f"taker {n}")
        for n in range(3)
    ]
    run_all(*workers)
    per_process = [out.get(timeout=JOIN) for _ in workers]
    assert all(len(slots) >= count for slots in per_process)
    slots = sorted(slot for process in per_process for slot in process)
    gaps = [later - earlier for earlier, later in itertools.pairwise(slots)]
    assert min(gaps) >= 1 / rate - 1e-6
    assert max(sum(1 for s in slots if start <= s < start + 1.0) for start in slots) <= rate + 1


def test_a_process_killed_holding_the_lock_holds_nothing_up(tmp_path: Path) -> None:
    """A process killed (SIGKILL) while it holds the file's lock: the lock goes with it, and
    the next process takes its slot."""
    path = str(tmp_path / "budget.json")
    held = SPAWN.Event()
    holder = SPAWN.Process(target=hold_the_lock, args=(path, held), name="holder")
    holder.start()
    try:
        assert held.wait(JOIN), "the holder never took the lock"
        fd = os.open(path, os.O_RDWR)
        with pytest.raises(BlockingIOError):  # it is held
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
    finally:
        os.kill(holder.pid or 0, signal.SIGKILL)
        holder.join(JOIN)
    out = SPAWN.Queue()
    run_all(SPAWN.Process(target=take_slots, args=(path, 10.0, 1, 1, out), name="next"))
    assert len(out.get(timeout=JOIN)) == 1


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(lambda path, kept: path.symlink_to(kept), id="symlink"),
        pytest.param(lambda path, kept: path.write_text('{"buckets": {}}'), id="foreign"),
        pytest.param(lambda path, kept: path.write_bytes(b""), id="empty"),
        pytest.param(lambda path, kept: path.mkdir(), id="folder"),
    ],
)
def test_a_file_haul_did_not_make_is_refused_untouched(tmp_path: Path, plant: Any) -> None:
    """A symbolic link at the budget's path (even to a budget file haul made), a file
    haul did not write, an empty one, a folder: refused (exit 2) naming the path and why;
    the file pointed to keeps its bytes, its mode and its time."""
    kept = tmp_path / "kept.json"
    kept.write_text(made_by_haul({"buckets": {}}))
    kept.chmod(0o644)
    before = kept.read_bytes(), kept.stat()
    path = tmp_path / "budget.json"
    plant(path, kept)
    with pytest.raises(NotABudgetFile) as refused:
        budget_file(path)
    assert refused.value.exit_code == 2
    assert str(path) in str(refused.value)
    assert (kept.read_bytes(), kept.stat()) == before


def test_a_file_haul_made_starts_with_its_mark_and_is_opened_again(tmp_path: Path) -> None:
    """The file haul makes is 0600, JSON, and starts with MAGIC; another opening takes it."""
    path = tmp_path / "budget.json"
    with budget_file(path).bucket(KEY) as bucket:
        bucket["shared"] = {"_next_slot": 1.0}
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_bytes().startswith(MAGIC)
    assert json.loads(path.read_text())["buckets"][KEY] == {"shared": {"_next_slot": 1.0}}
    assert [p.name for p in tmp_path.iterdir()] == ["budget.json"]
    other = type(budget_file(path))(path)
    with other.bucket(KEY) as bucket:
        assert bucket == {"shared": {"_next_slot": 1.0}}


def test_a_stopped_holder_of_the_lock_is_named_after_the_wait(tmp_path: Path) -> None:
    """A process stopped (SIGSTOP) while it holds the file's lock: a sharer waits
    `lock_wait` seconds, then raises BudgetFileLocked (exit 1) naming the file and the
    holder's pid."""
    path = tmp_path / "budget.json"
    held = SPAWN.Event()
    holder = SPAWN.Process(target=hold_the_lock, args=(str(path), held), name="holder")
    holder.start()
    try:
        assert held.wait(JOIN), "the holder never took the lock"
        os.kill(holder.pid or 0, signal.SIGSTOP)
        with (
            pytest.raises(BudgetFileLocked) as locked,
            budget_file(path).bucket(KEY, lock_wait=0.2),
        ):
            pass
    finally:
        os.kill(holder.pid or 0, signal.SIGKILL)
        os.kill(holder.pid or 0, signal.SIGCONT)
        holder.join(JOIN)
    assert locked.value.exit_code == 1
    assert str(path) in str(locked.value)
    assert f"pid {holder.pid} " in str(locked.value)
    with budget_file(path).bucket(KEY):  # the lock went with the holder
        pass


def shared(path: Path, member: str, rate: float | str = "auto") -> SharedBudget:
    """A shared budget as a process named `member` would have it (two in one test: two
    processes, as far as the file can tell)."""
    local: FixedBudget | SharedAdaptiveBudget
    if rate == "auto":
        local = SharedAdaptiveBudget("tracker", "read", clock=time.time)
    else:
        local = FixedBudget(float(rate), clock=time.time)
    return SharedBudget(local, budget_file(path), KEY, member=member)


async def test_a_limit_one_process_meets_cuts_the_rate_of_all(tmp_path: Path) -> None:
    """A spent budget's 429 (RateLimit-Policy 40/s) at one process: the shared rate falls to
    just under the stated 40 for the other too, and the other's 429 of the same overshoot, within the
    cool-down, does not cut it again."""
    one, other = shared(tmp_path / "b.json", "one"), shared(tmp_path / "b.json", "other")
    await one.acquire()
    await other.acquire()
    one.on_reply(429, SPENT)
    other.on_reply(429, SPENT)
    await other.acquire()
    assert isinstance(other.local, AdaptiveBudget)
    assert (other.local.good, other.rate) == (40.0, pytest.approx(PACE * 40.0))
    assert one.figures()["limit_rps"] == 40.0


async def test_the_report_figures_name_each_sharer(tmp_path: Path) -> None:
    """figures(): this process's requests per second, the sharers that ran beside it, and
    for a fixed budget its rate as the limit."""
    one, other = shared(tmp_path / "b.json", "one", 50), shared(tmp_path / "b.json", "other", 50)
    for _ in range(3):
        await one.acquire()
        await other.acquire()
    figures = one.figures()
    assert figures["sharers"] == 2
    assert figures["limit_rps"] == 50.0
    assert figures["shared_rps"] >= figures["process_rps"] > 0


async def test_a_file_cut_short_keeps_what_it_holds(tmp_path: Path) -> None:
    """The old tail a write cut short by a kill leaves after the new end is ignored; a file
    that does not parse at all starts afresh, said in the log."""
    path = tmp_path / "b.json"
    state = {"buckets": {KEY: {"shared": {"_next_slot": 0.0, "rate": 7.0, "good": 9.0}}}}
    path.write_text(made_by_haul(state) + '"}},"leftover":{')
    budget = shared(path, "one")
    await budget.acquire()
    assert budget.rate == 7.0
    path.write_text(MAGIC.decode() + '"buckets": {"tr')
    fresh = shared(tmp_path / "other.json", "two")
    fresh.file = type(budget.file)(path)
    with capture_logs() as logs:
        await fresh.acquire()
    assert [entry["event"] for entry in logs] == ["shared_budget_reset"]


def test_a_token_has_a_bucket_of_its_own_and_the_file_never_holds_it() -> None:
    """Processes with tokens of their own keep their own budgets: the bucket's key is a
    fingerprint of the token, never the token."""
    keys = {
        bucket_key(service="tracker", direction="read", base_url="u", org="1", token=token)
        for token in ("secret-one", "secret-two")
    }
    assert len(keys) == 2
    assert not any("secret" in key for key in keys)


def test_a_static_split_keeps_to_its_share() -> None:
    """budget_share N (no file): a number, the ceiling and a stated limit each divided by N."""
    assert budget_for(40, service="tracker", direction="read", share=4).rate == 10.0
    auto = budget_for("auto", service="tracker", direction="read", ceiling=100, share=4)
    assert isinstance(auto, AdaptiveBudget) and auto.rate == 25.0
    auto.on_reply(429, SPENT)
    assert auto.good == 10.0


@pytest.fixture(scope="module")
def sandbox() -> Iterator[RunningSandbox]:
    with start_sandbox(size="tiny", seed=3) as running:
        yield running


LIMIT = 30  # reads per second the sandbox allows the org


def refused_share(sandbox: RunningSandbox, tmp_path: Path, shared_file: bool) -> float:
    """The share of 429s among the requests of two processes that read with one token."""
    path = str(tmp_path / "budget.json") if shared_file else None
    out = SPAWN.Queue()
    readers = [
        SPAWN.Process(target=read_myself, args=(sandbox.info, "admin", path, 90, out))
        for _ in range(2)
    ]
    run_all(*readers)
    figures = [out.get(timeout=JOIN) for _ in readers]
    sent, refused = sum(f[0] for f in figures), sum(f[1] for f in figures)
    return refused / sent


def test_two_processes_sharing_a_token_see_few_429s(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    """Two processes of one token under a per-org limit of 30/s, "auto" budgets shared
    through a file: under 10% of their requests refused (the first limit is found by both at
    once; each alone on its own budget would send at the whole limit, and see half refused)."""
    sandbox.set_faults(f"ratelimit:{LIMIT}:reads:per=org")
    assert refused_share(sandbox, tmp_path, shared_file=True) < 0.10


async def test_a_slot_clock_set_far_ahead_starts_again_from_now(tmp_path: Path) -> None:
    """A slot further ahead than any is ever reserved (a wall clock set back since it was
    written) is not waited for: the next slot is now."""
    path = tmp_path / "b.json"
    ahead = {"buckets": {KEY: {"shared": {"_next_slot": time.time() + 3600}}}}
    path.write_text(made_by_haul(ahead))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    budget = SharedBudget(FixedBudget(10.0, clock=time.time), budget_file(path), KEY, sleep=sleep)
    await budget.acquire()
    assert waits == []


def test_a_holder_listed_twice_is_named_once(tmp_path: Path) -> None:
    """The kernel lists the locks a page at a time, afresh for each: a lock taken or dropped
    between two pages can show a line in both. Its holder is named once, not "pid 7, 7"."""
    held = tmp_path / "budget.json"
    held.write_text("{}")
    info = held.stat()
    ident = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    line = f"FLOCK  ADVISORY  WRITE 4321 {ident} 0 EOF"
    listing = tmp_path / "locks"
    listing.write_text(f"1: {line}\n2: POSIX  ADVISORY  WRITE 99 {ident} 0 EOF\n1: {line}\n")
    fd = os.open(held, os.O_RDONLY)
    try:
        assert lock_holders(fd, listing) == [4321]
        assert str(BudgetFileLocked(held, 1, lock_holders(fd, listing))).count("4321") == 1
    finally:
        os.close(fd)
