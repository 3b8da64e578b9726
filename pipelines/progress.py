"""Progress on long work: named counters, shown as live bars on a terminal and kept for the summary.

Stages only call `task(name)` and `advance(task, n)`; whether anything is drawn is decided once,
at the edge (the CLI), so library code and tests run the same way with or without a terminal.
"""

from __future__ import annotations

from collections import Counter
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress


class Progress:
    """Counts work by task name; draws nothing (see `LiveProgress` for the terminal)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def task(self, name: str, total: int | None = None) -> str:
        self.counts.setdefault(name, 0)
        return name

    def advance(self, task: str, amount: int = 1) -> None:
        self.counts[task] += amount

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class LiveProgress(Progress):
    """The same counters drawn as rich progress bars on stderr (only on a terminal)."""

    def __init__(self, console: Console | None = None) -> None:
        super().__init__()
        self._console = console or Console(stderr=True)
        self._bars = RichProgress(
            TextColumn("{task.description:<28}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._console,
            disable=not self._console.is_terminal,
            transient=False,
        )
        self._ids: dict[str, TaskID] = {}

    def task(self, name: str, total: int | None = None) -> str:
        if name not in self._ids:
            self._ids[name] = self._bars.add_task(name, total=total)
        return super().task(name, total)

    def advance(self, task: str, amount: int = 1) -> None:
        super().advance(task, amount)
        self._bars.advance(self._ids[task], amount)

    def __enter__(self) -> LiveProgress:
        self._bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bars.stop()
