"""Logging, configured once at the edge: every event as JSON lines to a file; on the console
one short human line per kind of trouble (`TroubleLines`), or the events themselves with
`verbose` (`haul -v`).

Library code only does `structlog.get_logger(__name__).info("event_name", key=value)`.
A kind of trouble (retries of one service for one reason, failures of one entity) is said
once when it first happens, then as a count at most every `REPEAT_EVERY` seconds while it
repeats, and once more at the end if it repeated since: cron mail stays a few lines long.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import structlog

SECRET_KEYS = ("token", "authorization", "password", "secret")
REPEAT_EVERY = 10.0  # seconds between two counts of the same kind of trouble


def redact_secrets(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Never let a value under a secret-sounding key reach a log sink."""
    for key in list(event):
        if any(word in key.lower() for word in SECRET_KEYS):
            event[key] = "[redacted]"
    return event


_log_path: Path | None = None


def current_log_path() -> Path | None:
    """The log file configured last, if any (the CLI names it in an internal error)."""
    return _log_path


def configure_logging(
    log_path: Path | None, *, console_level: int = logging.WARNING, verbose: bool = False
) -> None:
    """Route structlog through stdlib logging: JSON to `log_path`; on stderr one short line
    per kind of trouble, or with `verbose` every event from INFO up, rendered."""
    global _log_path
    _log_path = log_path
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    structlog.configure(
        # drop events below the handlers' levels before any processor spends time on them
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    if verbose:
        console_level = min(console_level, logging.INFO)
    root.setLevel(logging.INFO if log_path else console_level)
    console: logging.Handler
    if verbose:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(_formatter(shared, structlog.dev.ConsoleRenderer(colors=False)))
    else:
        console = TroubleLines(has_log=log_path is not None)
    console.setLevel(console_level)
    root.addHandler(console)
    if log_path is not None:
        try:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            to_file = _LogFile(log_path, encoding="utf-8")
        except OSError as exc:  # the store's own open will say what is wrong with the folder
            _log_path = None
            structlog.get_logger(__name__).warning(
                "log_file_unwritable", path=str(log_path), error=str(exc)
            )
        else:
            to_file.setLevel(logging.INFO)
            # tracebacks go to the file only, as data
            json_lines = [structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]
            to_file.setFormatter(_formatter(shared, *json_lines))
            root.addHandler(to_file)
    for noisy in ("httpx", "httpcore", "uvicorn", "uvicorn.access", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def settle_console() -> None:
    """Let the console's trouble lines say their pending counts, so that the command's own
    last line stays the last one."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, TroubleLines):
            handler.settle()


def trouble_line(event: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """(kind, line for a person) of a warning or error event; events of one kind are one
    trouble, said once and then counted."""
    name = str(event.get("event", ""))
    if name == "http_retry":
        service, reason = str(event.get("service", "")), event.get("reason")
        if reason == 429:
            return (name, service, "429"), f"{service} asks haul to slow down (429); waiting"
        if isinstance(reason, int):
            return (name, service, "5xx"), f"{service} answers {reason}; retrying"
        return (name, service, "connection"), f"{service}: connection trouble ({reason}); retrying"
    if name in ("record_failed", "record_problem"):
        entity = str(event.get("entity", ""))
        stage = "loaded" if name == "record_failed" else "extracted whole"
        first = f"{event.get('record')}: {str(event.get('error', ''))[:160]}"
        return (name, entity), f"{entity} records could not be {stage} (first: {first})"
    if name == "stop_requested":
        if event.get("count", 1) == 1:
            line = "stopping: the requests in flight finish (10 s at most); a second signal stops at once"
        else:
            line = "stopping now"
        return (name, str(event.get("count"))), line
    details = ", ".join(f"{k}={v}" for k, v in event.items() if k not in _META)[:200]
    return (name,), f"{name.replace('_', ' ')}" + (f" ({details})" if details else "")


_META = frozenset(
    {"event", "level", "timestamp", "logger", "exc_info", "_record", "_from_structlog"}
)


@dataclass
class _Seen:
    said_at: float
    since: int = 0  # times it happened since it was last said


class TroubleLines(logging.Handler):
    """The console's share of the log: one short line per kind of trouble, then a count."""

    def __init__(
        self,
        *,
        has_log: bool = True,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        every: float = REPEAT_EVERY,
    ) -> None:
        super().__init__()
        self._stream, self._clock, self._every = stream, clock, every
        self._where = "; details in haul.log" if has_log else ""
        self._seen: dict[tuple[str, ...], tuple[str, _Seen]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        event = record.msg if isinstance(record.msg, Mapping) else {"event": record.getMessage()}
        kind, line = trouble_line(event)
        now = self._clock()
        if kind not in self._seen:
            self._seen[kind] = (line, _Seen(now))
            self._say(f"haul: {line}{self._where}")
            return
        first, seen = self._seen[kind]
        seen.since += 1
        if now - seen.said_at >= self._every:
            self._repeat(first, seen, now)

    def settle(self) -> None:
        """Say the counts not said yet (before the command's last line)."""
        now = self._clock()
        for first, seen in self._seen.values():
            if seen.since:
                self._repeat(first, seen, now)

    def close(self) -> None:
        self.settle()
        super().close()

    def _repeat(self, line: str, seen: _Seen, now: float) -> None:
        self._say(f"haul: {line} (again, {seen.since} more time(s))")
        seen.said_at, seen.since = now, 0

    def _say(self, text: str) -> None:
        stream = self._stream or sys.stderr  # looked up late: tests swap sys.stderr
        with contextlib.suppress(OSError, ValueError):
            stream.write(text + "\n")
            stream.flush()


class _LogFile(logging.FileHandler):
    """The log file; when it cannot be written (a full disk), one line on stderr says so,
    once, instead of Python's "--- Logging error ---" block after every record."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.failed:
            self.failed = True
            error = sys.exc_info()[1]
            sys.stderr.write(f"haul: the log file {self.baseFilename} cannot be written: {error}\n")

    def close(self) -> None:
        # the last flush of a file that cannot be written fails too: that was already said
        with contextlib.suppress(OSError):
            super().close()


def _formatter(shared: list[Any], *rendering: Any) -> structlog.stdlib.ProcessorFormatter:
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *rendering],
    )
