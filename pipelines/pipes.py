"""A reader that goes away (`haul map | head`, a pager quit early) stops nothing.

Once the reader of a pipe has closed it, the next write to it raises BrokenPipeError. A Unix
tool dies of SIGPIPE there (exit 141 in a shell), and Python would print a traceback. Neither
suits haul: its exit status says how the command went (0, 1, 2, 3, 4: DESIGN.md), and a run
must not stop halfway, or a scheduler read "done", because nobody reads its summary. So haul's
stdout and stderr drop what nobody reads: on the first broken write the stream's descriptor
is pointed at /dev/null, quietly, and the command goes on to its usual end and exit status
(`haul map | head` exits 0; a run with failed records still exits 3).
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from typing import Any, TextIO, cast


class Unbroken:
    """A text stream whose writes, once its reader closed the pipe, go nowhere."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.dropped = False

    def __getattr__(self, name: str) -> Any:  # everything else is the stream's own
        return getattr(self.stream, name)

    def write(self, text: str) -> int:
        if not self.dropped:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.dropped:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        """Write nothing more, and point the descriptor at /dev/null, so that what the stream
        still buffers goes there when the interpreter flushes it on the way out."""
        self.dropped = True
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            with suppress(OSError, ValueError):  # a stream without a descriptor: none to repoint
                os.dup2(null, self.stream.fileno())
        finally:
            os.close(null)


def guard_standard_streams() -> None:
    """Make sys.stdout and sys.stderr `Unbroken` (once: a second call changes nothing)."""
    if not isinstance(sys.stdout, Unbroken):
        sys.stdout = cast(TextIO, Unbroken(sys.stdout))
    if not isinstance(sys.stderr, Unbroken):
        sys.stderr = cast(TextIO, Unbroken(sys.stderr))
