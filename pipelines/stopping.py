"""Stopping on a signal: finish what is under way, commit, and say how to resume.

The first SIGINT or SIGTERM sets `requested`: stages start no new work, the requests in flight
finish, and after `grace` seconds whatever is still running is cancelled (the ledger settles
an interrupted write on the next run). A second signal cancels at once.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass, field

import structlog

log = structlog.get_logger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class GracefulStop:
    """Installed on the running loop for one command; stages poll `requested()`."""

    grace: float = 10.0
    signals_seen: int = 0
    _task: asyncio.Task[object] | None = field(default=None, repr=False)
    _timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    def requested(self) -> bool:
        """Whether a signal asked the command to stop."""
        return self.signals_seen > 0

    def install(self) -> None:
        """Catch SIGINT and SIGTERM on the running loop, for the current task."""
        loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        for signum in SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)

    def uninstall(self) -> None:
        """Give the signals back to their default handlers."""
        loop = asyncio.get_running_loop()
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
        if self._timer is not None:
            self._timer.cancel()

    def _on_signal(self, signum: int) -> None:
        self.signals_seen += 1
        log.warning("stop_requested", signal=signal.Signals(signum).name, count=self.signals_seen)
        if self.signals_seen == 1:
            self._timer = asyncio.get_running_loop().call_later(self.grace, self._cancel)
        else:
            self._cancel()

    def _cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
