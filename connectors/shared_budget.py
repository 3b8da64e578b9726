"""Rate budgets shared by processes through one small file: the parts of a sharded run that
share a token keep, together, to that token's budget.

The file is JSON (made 0600), one **bucket** per token, service and direction, keyed by the
service's URL, the org and a fingerprint of the token (a keyed 64-bit blake2b hash: it tells
tokens apart and gives nothing of them away). A process with a token of its own so has a
bucket of its own in the same file, and keeps its own budget. (The org is in the key as it is
in an in-process budget, which is one HttpCore's: one service, one org.) The processes sharing
a bucket should have the same rate settings, as the parts of one run have: each takes its
slots from the shared clock at its own setting's pace.

Each process keeps its own budget object (`budget.FixedBudget` or an `AdaptiveBudget`, on the
wall clock, so that a time means the same in every process) and, for each send slot and each
reply, **syncs** it with its bucket under an exclusive ``flock``: the shared fields are read
into the object, the object does what it does alone, and the fields are written back. The
lock is held for that read-modify-write only, never across a wait.

- Shared: the slot clock (the next free send slot: every process takes its slots from it,
  1/rate apart, so the sum of the processes' rates stays at the budget, however unevenly they
  send), the pause a spent budget asks for, and for "auto" the rate and what was learned (the
  last good rate, the rate that met the limit, the time of the last cut, the probe's state): a
  429 seen by one process cuts the rate of all, and the cool-down after a cut, shared too,
  keeps one overshoot seen by several processes to one cut.
- Local: the window a process judges its 429s on (its own replies), and its own counts.
- Figures: each process writes its own into the bucket at each sync (sends and answers per
  second lately, requests and 429s in all, first and last seen). Two of the adaptive budget's
  judgements count the other sharers' (those heard from within ``STALE`` seconds): what the
  service let through (a limit met without a stated one is learned as every sharer's answers
  per second, not this process's share), and how much of the rate is used (it grows only
  while the sharers together use most of it). Growth per reply needs no change: each reply
  adds 1/rate of a second's growth, and the sharers together get `rate` replies a second. The
  run report reads the figures: this process's rate, and the sum over the processes that
  shared the bucket with it, against the limit.

Ownership: haul writes only a file it made. It makes the file whole (its first bytes are
``MAGIC``, the start of the JSON object ``{"haul":"shared budget 1",...``) under a name of its
own and links it into place, so a file at the path always starts with them; it opens the path
without following a symbolic link. A symbolic link there, anything but a regular file, or a
file that does not start with ``MAGIC`` (an empty one included) is refused, untouched
(`NotABudgetFile`, exit 2).

Robustness: ``flock`` is released when its holder dies, so a killed process holds nothing up.
One that is stopped (SIGSTOP, a debugger) or hung keeps it: a sharer waits for the lock at most
``lock_wait`` seconds (``[tuning] shared_budget_wait``), then stops (`BudgetFileLocked`, exit 1)
naming the file and the holder's pid (Linux's ``/proc/locks``; a holder on another machine of a
shared volume cannot be named). A file cut short by a kill in the middle of a write keeps
parsing (its tail is ignored), and one that does not parse starts afresh (logged as
``shared_budget_reset``): the limit is learned again. On a shared volume the machines' clocks
must agree (NTP keeps them within milliseconds); Linux's NFS client maps ``flock`` onto the
server's locks, and takes the lock as its cue to read the file afresh. Cost: two locked
read-writes of a small file per request, tens of microseconds each on a local disk.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import json
import os
import socket
import stat
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from haul.connectors.budget import BUNCHED, HORIZON, AdaptiveBudget, FixedBudget
from haul.connectors.errors import HaulError
from haul.connectors.retrying import is_throttle

log = structlog.get_logger("haul.connectors")

SENT_OVER = 1.0  # seconds a process's sends per second are counted over
ANSWERED_OVER = 4.0  # and its answers (the adaptive budget's MEASURED_OVER)
STALE = 5.0  # seconds after which a silent process's figures leave the sums
FORGET = 3600.0  # and after which it leaves the file
CLOCK_SLACK = 1.0  # seconds a slot clock may be ahead past any reservation before it restarts
LOCK_WAIT = 30.0  # seconds a sharer waits for the file's lock (held microseconds at a time)
MARK = "shared budget 1"  # the file's "haul" field: what the file is, and its format's version
MAGIC = b'{"haul":"' + MARK.encode() + b'",'  # the first bytes of every file haul made
# the budgets' fields every sharer reads and writes: the slot clock and the pause, and what an
# adaptive budget learned of the service's limit
FIXED_FIELDS = ("_next_slot",)
ADAPTIVE_FIELDS = (
    "_next_slot",
    "_paused_until",
    "rate",
    "good",
    "_met_at",
    "_rising",
    "_last_cut",
    "_stepped_back",
    "_stated",
    "_trusted",
    "_beyond_since",
)


@dataclass
class SharedAdaptiveBudget(AdaptiveBudget):
    """The "auto" budget of one of several processes on one shared rate: what the service
    let through, and the share of the rate used, count the other sharers' figures too."""

    others_sent: float = 0.0  # the other sharers' sends per second lately
    others_answered: float = 0.0  # and their replies other than 429 per second

    def _answered_rate(self, answered: int, span: float) -> float:
        return super()._answered_rate(answered, span) + self.others_answered

    def _used(self, now: float) -> float:
        return super()._used(now) + self.others_sent / self.rate


def bucket_key(*, service: str, direction: str, base_url: str, org: str, token: str) -> str:
    """The bucket of one token's budget for one service and direction."""
    fingerprint = hashlib.blake2b(
        token.encode(), digest_size=8, key=b"haul shared budget"
    ).hexdigest()
    return f"{service} {direction} {base_url} org {org} token {fingerprint}"


class NotABudgetFile(HaulError):
    """The shared budget's path holds something haul did not make: a symbolic link, something
    other than a regular file, or a file that does not start as haul's do. Left untouched."""

    exit_code = 2

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"the shared budget file {path} is not one haul made ({why}); haul leaves it "
            "untouched: name another file in [tuning] shared_budget, or remove this one if "
            "nothing else uses it"
        )
        self.path = path


class BudgetFileLocked(HaulError):
    """Another process held the shared budget file's lock for longer than a sharer waits."""

    def __init__(self, path: Path, waited: float, holders: list[int]) -> None:
        holder = (
            f"pid {', '.join(map(str, holders))}"
            if holders
            else "a process this machine cannot see (on another machine of a shared volume?)"
        )
        super().__init__(
            f"stopped: the shared budget file {path} stayed locked for {waited:g} s by "
            f"{holder} (stopped or hung: it holds the lock for microseconds when it runs); "
            "resume or end that process, or give [tuning] shared_budget_wait more time, then "
            "run the same command to resume"
        )
        self.path = path
        self.holders = holders


class BudgetFile:
    """The buckets in one file, read and written whole under an exclusive flock; one object
    per file per process (`budget_file`), whose threads take turns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = _open_own(path)
        self._turn = threading.Lock()

    @contextmanager
    def bucket(self, key: str, *, lock_wait: float = LOCK_WAIT) -> Iterator[dict[str, Any]]:
        """The bucket `key`, locked (BudgetFileLocked past `lock_wait` seconds); what the
        caller changed in it is written back."""
        with self._turn:
            self._lock(lock_wait)
            try:
                state = self._read()
                buckets = state.setdefault("buckets", {})
                yield buckets.setdefault(key, {})
                self._write(state)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _lock(self, lock_wait: float) -> None:
        """Take the lock, trying again at growing intervals (at most 50 ms) until the
        deadline: a blocking flock would wait for a stopped holder forever."""
        deadline = time.monotonic() + lock_wait
        pause = 0.0005
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BudgetFileLocked(self.path, lock_wait, lock_holders(self._fd)) from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)

    def _read(self) -> dict[str, Any]:
        data = os.pread(self._fd, os.fstat(self._fd).st_size, 0).decode(errors="replace")
        try:
            # a write cut short by a kill leaves the old tail after the new end: ignored
            state, _ = json.JSONDecoder().raw_decode(data)
        except ValueError:
            state = None
        if not isinstance(state, dict):
            log.warning("shared_budget_reset", path=str(self.path), reason="unreadable")
            return {}
        return state

    def _write(self, state: dict[str, Any]) -> None:
        whole = {"haul": MARK, "buckets": state.get("buckets", {})}  # MAGIC first
        data = json.dumps(whole, separators=(",", ":")).encode()
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))


def _open_own(path: Path) -> int:
    """The file at `path` opened for reading and writing, made first if nothing is there;
    NotABudgetFile (nothing written) unless it is haul's own."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(path):
            _make(path)
    except OSError as error:
        raise NotABudgetFile(path, f"haul cannot make it: {error.strerror or error}") from None
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        why = "it is a symbolic link" if error.errno == errno.ELOOP else error.strerror
        raise NotABudgetFile(path, why or str(error)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotABudgetFile(path, "it is not a regular file")
        if os.pread(fd, len(MAGIC), 0) != MAGIC:
            raise NotABudgetFile(path, f"it does not start with {MAGIC.decode()}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _make(path: Path) -> None:
    """Write an empty budget file under a name of this process's, then link it to `path`:
    whoever opens `path` finds a whole file (another process may link its own first)."""
    made = path.with_name(f".{path.name}.{os.getpid()}.new")
    fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + b'"buckets":{}}')
        with suppress(FileExistsError):  # another process linked its own first: taken
            os.link(made, path)
    finally:
        made.unlink(missing_ok=True)


LOCKS = Path("/proc/locks")
LOCKS_READS = 3  # listings of /proc/locks read before none is taken for an answer


def lock_holders(fd: int, listing: Path = LOCKS) -> list[int]:
    """The pids holding a flock on the open file `fd`, from Linux's /proc/locks (lines like
    ``3: FLOCK  ADVISORY  WRITE 1234 fe:00:2361240 0 EOF``; a waiter's has ``->`` after the
    number), each once; none where there is no /proc/locks or the holder is on another machine.

    The kernel lists the locks a page at a time, afresh for each page: on a busy machine (SQLite
    takes and drops locks all the time) a line can slip between two pages, or show in both. A
    listing without the file's holder is read again, a few times."""
    info = os.fstat(fd)
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}"
    found: list[int] = []
    for _ in range(LOCKS_READS):
        try:
            lines = listing.read_text().splitlines()
        except OSError:
            return []
        held = [
            (fields[5], int(fields[4]))
            for fields in (line.split() for line in lines)
            if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(f":{info.st_ino}")
        ]
        # an overlay file system (a container's) shows the device of the layer below it; a
        # holder in another pid namespace shows as pid 0: not one this machine can name
        exact = [pid for ident, pid in held if ident == f"{device}:{info.st_ino}" and pid > 0]
        found = list(dict.fromkeys(exact or [pid for _, pid in held if pid > 0]))
        if found:
            break
    return found


_files: dict[tuple[Path, int], BudgetFile] = {}
_files_lock = threading.Lock()


def budget_file(path: str | Path) -> BudgetFile:
    """This process's one BudgetFile for `path` (flock locks belong to an open file: two
    opens in one process would not exclude each other on every file system, and a forked
    child shares its parent's open file, so it opens its own). Its folder is resolved, the
    file itself not: a symbolic link at `path` is refused, never followed."""
    given = Path(path).expanduser()
    key = (given.parent.resolve() / given.name, os.getpid())
    with _files_lock:
        if key not in _files:
            _files[key] = BudgetFile(key[0])
        return _files[key]


class Figures:
    """What one process sent and had answered: per second lately, and in all."""

    def __init__(self, now: float) -> None:
        self.first = now
        self.requests = 0
        self.refused = 0
        self._sent: deque[float] = deque()
        self._answered: deque[float] = deque()

    def sent(self, slot: float) -> None:
        self.requests += 1
        self._sent.append(slot)

    def replied(self, now: float, status: int) -> None:
        if is_throttle(status):
            self.refused += 1
        else:
            self._answered.append(now)

    def row(self, now: float, rate: float) -> dict[str, float]:
        return {
            "sent": _per_second(self._sent, now, SENT_OVER, self.first),
            "answered": _per_second(self._answered, now, ANSWERED_OVER, self.first),
            "requests": self.requests,
            "refused": self.refused,
            "rate": rate,
            "first": self.first,
            "seen": now,
        }


def _per_second(times: deque[float], now: float, over: float, since: float) -> float:
    while times and times[0] < now - over:
        times.popleft()
    span = min(over, now - since)
    return len(times) / span if span > 0 else 0.0


class SharedBudget:
    """A budget several processes keep to together through a BudgetFile (see the module
    docstring): the same `acquire` and `on_reply` as an in-process one."""

    def __init__(
        self,
        local: FixedBudget | SharedAdaptiveBudget,
        file: BudgetFile,
        key: str,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        member: str | None = None,
        lock_wait: float = LOCK_WAIT,
    ) -> None:
        self.local = local
        self.file = file
        self.key = key
        self.lock_wait = lock_wait
        self.member = member or f"{socket.gethostname()}:{os.getpid()}"
        self._sleep = sleep
        self._clock = local.clock
        self._fields = ADAPTIVE_FIELDS if isinstance(local, AdaptiveBudget) else FIXED_FIELDS
        self._figures = Figures(self._clock())

    @property
    def rate(self) -> float:
        return self.local.rate

    @property
    def history(self) -> list[tuple[float, float]]:
        return self.local.history

    @property
    def requests(self) -> int:
        """The send slots this process took."""
        return self._figures.requests

    async def acquire(self) -> float:
        """Wait for the next send slot of the shared budget; its time (the wall clock's)."""
        late_once = False
        while True:
            with self._synced() as now:
                at, reserved = self.local.reserve(now)
                if reserved:
                    self._figures.sent(at)
            if not reserved:
                await self._sleep(at - now)
                continue
            if at <= now:
                return at
            await self._sleep(at - now)
            if late_once or self._clock() - at <= BUNCHED:  # else a new slot (see take_slot)
                return at
            late_once = True

    def on_reply(self, status: int, headers: Mapping[str, str]) -> None:
        """Learn from one reply, for every sharer (an "auto" budget)."""
        with self._synced() as now:
            self._figures.replied(now, status)
            self.local.on_reply(status, headers)

    def found(self) -> dict[str, float]:
        """What the budget found of the service, for a next run (see `AdaptiveBudget.found`)."""
        return self.local.found()

    def resume(self, found: Mapping[str, float]) -> None:
        """Start where a run before left off; what the sharers learned since, in the file,
        holds over it from the first sync on."""
        self.local.resume(found)

    def figures(self) -> dict[str, Any]:
        """For the run report: this process's requests per second, and the sum over every
        process that shared the bucket while it ran, against the limit (learned or set)."""
        with self.file.bucket(self.key, lock_wait=self.lock_wait) as bucket:
            self._pull(bucket, self._clock())
            members = dict(bucket.get("members", {}))
        mine = members.get(self.member) or self._figures.row(self._clock(), self.rate)
        alongside = [
            row
            for row in members.values()
            if row["seen"] >= mine["first"] and row["first"] <= mine["seen"]
        ]
        limit = self.local.good if isinstance(self.local, AdaptiveBudget) else self.local.rate
        return {
            "process_rps": round(_average(mine), 1),
            "sharers": len(alongside),
            "shared_rps": round(sum(_average(row) for row in alongside), 1),
            "limit_rps": round(limit, 1) if limit is not None else None,
        }

    @contextmanager
    def _synced(self) -> Iterator[float]:
        """The bucket locked and read into the local budget; written back after."""
        with self.file.bucket(self.key, lock_wait=self.lock_wait) as bucket:
            now = self._clock()
            self._pull(bucket, now)
            yield now
            bucket["shared"] = {name: getattr(self.local, name) for name in self._fields}
            members = bucket.setdefault("members", {})
            members[self.member] = self._figures.row(now, self.rate)
            for name in [name for name, row in members.items() if row["seen"] < now - FORGET]:
                del members[name]

    def _pull(self, bucket: Mapping[str, Any], now: float) -> None:
        before = self.local.rate
        for name, value in bucket.get("shared", {}).items():
            if name in self._fields:
                setattr(self.local, name, value)
        if self.local._next_slot > now + HORIZON + 1.0 / self.local.rate + CLOCK_SLACK:
            # further ahead than any slot is reserved: a wall clock set back; start from now
            self.local._next_slot = now
        if isinstance(self.local, SharedAdaptiveBudget):
            others = [
                row
                for name, row in bucket.get("members", {}).items()
                if name != self.member and row["seen"] >= now - STALE
            ]
            self.local.others_sent = sum(row["sent"] for row in others)
            self.local.others_answered = sum(row["answered"] for row in others)
            self._note(now, before)

    def _note(self, now: float, before: float) -> None:
        """Another sharer's change of the rate, in this process's history: a cut at once,
        growth at most once a second (as the budget keeps its own)."""
        history, rate = self.local.history, self.local.rate
        if rate < before or (rate != history[-1][1] and now - history[-1][0] >= 1.0):
            history.append((now, rate))


def _average(row: Mapping[str, float]) -> float:
    span = row["seen"] - row["first"]
    return row["requests"] / span if span > 0 else 0.0


def shared_budget_for(
    path: str | Path,
    rate: float | str,
    *,
    key: str,
    service: str,
    direction: str,
    ceiling: float | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    lock_wait: float = LOCK_WAIT,
) -> SharedBudget:
    """A fixed budget for a number, an adaptive one for "auto", shared through the file at
    `path` by every process that names it with the same `key` (see `bucket_key`), waiting
    for its lock at most `lock_wait` seconds."""
    local: FixedBudget | SharedAdaptiveBudget
    if rate == "auto":
        local = SharedAdaptiveBudget(
            service, direction, ceiling=ceiling, clock=time.time, sleep=sleep
        )
    elif isinstance(rate, str) or rate <= 0:
        raise ValueError(f'a rate is a positive number or "auto", not {rate!r}')
    else:
        local = FixedBudget(float(rate), clock=time.time, sleep=sleep, horizon=HORIZON)
    return SharedBudget(local, budget_file(path), key, sleep=sleep, lock_wait=lock_wait)
