"""Progress on long work: named counters, shown as live bars on a terminal and kept for the summary.

Stages only call `task(name)`, `advance(task, n)`, when they know it `expect(name, total)`, and
the runner marks each stage with `stage(name, legend)`; whether anything is drawn is decided
once, at the edge (the CLI), so library code and tests run the same way with or without a
terminal. On a terminal: bars with done/total, rate and ETA. Not on one (cron, a pipe): a line
when a stage starts (with what its counts count) and when it ends (each of its tasks once, with
its final count), and between them, for a long stage, a heartbeat every `interval` seconds of
the tasks whose count moved since their last line: no line is ever printed twice, so mail stays
readable.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text


class Progress:
    """Counts work by task name; draws nothing (see `LiveProgress` for the terminal)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.totals: dict[str, int] = {}

    def task(self, name: str, total: int | None = None) -> str:
        self.counts.setdefault(name, 0)
        if total is not None:
            self.totals[name] = total
        return name

    def expect(self, name: str, total: int) -> None:
        """Announce how much work a task will have (before or after it starts)."""
        self.totals[name] = total

    def advance(self, task: str, amount: int = 1) -> None:
        self.counts[task] += amount

    @contextmanager
    def stage(self, name: str, legend: str = "") -> Iterator[None]:
        """Mark a stage (extract, load): `legend` says what its tasks' counts count."""
        yield

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class RateColumn(ProgressColumn):
    """Records per second so far."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.1f}/s" if speed else "-/s")


def plain_line(name: str, done: int, total: int | None, elapsed: float) -> str:
    """One progress line for a log: done of total, rate, ETA."""
    rate = done / elapsed if elapsed > 0 else 0.0
    of = f"/{total}" if total is not None else ""
    eta = ""
    if total is not None and rate > 0 and done < total:
        eta = f", ETA {int((total - done) / rate)} s"
    return f"haul: {name} {done}{of} ({rate:.1f}/s{eta})"


class LiveProgress(Progress):
    """The same counters drawn as rich progress bars on stderr on a terminal; off one, plain
    lines (see the module's docstring)."""

    def __init__(
        self,
        console: Console | None = None,
        interval: float = 60.0,
        log: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._console = console or Console(stderr=True)
        self._plain = not self._console.is_terminal
        self._interval, self._log, self._clock = interval, log or sys.stderr, clock
        self._last = clock()
        self._began: dict[str, float] = {}  # task -> when it was first seen (for its rate)
        self._said: dict[str, tuple[int, int | None]] = {}  # task -> (done, total) last printed
        self._bars = RichProgress(
            TextColumn("{task.description:<28}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self._console,
            disable=self._plain,
            transient=False,
        )
        self._ids: dict[str, TaskID] = {}

    def task(self, name: str, total: int | None = None) -> str:
        super().task(name, total)
        if name not in self._ids:
            self._ids[name] = self._bars.add_task(name, total=self.totals.get(name))
            self._began[name] = self._clock()
        return name

    def expect(self, name: str, total: int) -> None:
        super().expect(name, total)
        if name in self._ids:
            self._bars.update(self._ids[name], total=total)

    def advance(self, task: str, amount: int = 1) -> None:
        super().advance(task, amount)
        self._bars.advance(self._ids[task], amount)
        if self._plain and self._clock() - self._last >= self._interval:
            self.log_lines()

    @contextmanager
    def stage(self, name: str, legend: str = "") -> Iterator[None]:
        """Off a terminal: `haul: NAME started (LEGEND)`, then, however the stage ends, each
        task's last count not yet printed and `haul: NAME ended after N s`."""
        began = self._clock()
        self._say(f"haul: {name} started" + (f" ({legend})" if legend else ""))
        try:
            yield
        finally:
            self.log_lines()
            self._say(f"haul: {name} ended after {self._clock() - began:.1f} s")

    def log_lines(self) -> None:
        """One plain line per task whose count moved since its last line (for a log, not a
        terminal): a count that did not move is not said again."""
        self._last = now = self._clock()
        for name, done in self.counts.items():
            total = self.totals.get(name)
            if self._said.get(name) == (done, total):
                continue
            self._said[name] = (done, total)
            self._say(plain_line(name, done, total, now - self._began.get(name, now)))

    def _say(self, line: str) -> None:
        if self._plain:
            print(line, file=self._log, flush=True)

    def __enter__(self) -> LiveProgress:
        self._bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bars.stop()
        if self._plain:
            self.log_lines()
