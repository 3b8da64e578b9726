"""Logging, configured once at the edge: every event as JSON lines to a file; on the console
one short human line per kind of trouble (`TroubleLines`), or the events themselves with
`verbose` (`haul -v`).

No secret reaches a sink: a traceback keeps its frames but never their local variables (a
request's headers hold the token, `environ` every variable), values under secret-sounding
keys are redacted, and the tokens haul read (`hide_in_logs`) are cut out of every rendered
line. The log file is private to the user (0600): it names restricted records.

Library code only does `structlog.get_logger(__name__).info("event_name", key=value)`.
A kind of trouble (retries of one service for one reason, failures of one entity) is said
once when it first happens, then as a count at most every `REPEAT_EVERY` seconds while it
repeats, and once more at the end if it repeated since: cron mail stays a few lines long.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import sys
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

import structlog

from haul.connectors.retrying import is_throttle
from haul.state.private import make_private_folder, open_private

SECRET_KEYS = ("token", "authorization", "password", "secret")
REPEAT_EVERY = 10.0  # seconds between two counts of the same kind of trouble
MIN_SECRET_LENGTH = 8  # shorter values are not cut out of lines: they would maim common words
# frames as data, without their locals (structlog's default shows them)
FRAMES_WITHOUT_LOCALS = structlog.tracebacks.ExceptionDictTransformer(show_locals=False)

_secrets: set[str] = set()


def hide_in_logs(secret: str) -> None:
    """Cut `secret` (a token just read) out of every line a log sink writes from now on."""
    if len(secret) >= MIN_SECRET_LENGTH:
        _secrets.add(secret)


def without_secrets(text: str) -> str:
    """`text` with every secret given to `hide_in_logs` replaced by `[redacted]`."""
    for secret in _secrets:
        text = text.replace(secret, "[redacted]")
    return text


def _cut_secrets(_: Any, __: str, rendered: str) -> str:
    return without_secrets(rendered)


def redact_secrets(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Never let a value under a secret-sounding key reach a log sink."""
    for key in list(event):
        if any(word in key.lower() for word in SECRET_KEYS):
            event[key] = "[redacted]"
    return event


_log_path: Path | None = None
_log_trouble: str | None = None


def current_log_path() -> Path | None:
    """The log file configured last, if any (the CLI names it in an internal error)."""
    return _log_path


def log_trouble() -> str | None:
    """Why the log file configured last cannot be opened or written, once that happened:
    a run stops on it (nothing it does could be traced afterwards)."""
    return _log_trouble


def configure_logging(
    log_path: Path | None, *, console_level: int = logging.WARNING, verbose: bool = False
) -> None:
    """Route structlog through stdlib logging: JSON to `log_path`; on stderr one short line
    per kind of trouble, or with `verbose` every event from INFO up, rendered."""
    global _log_path, _log_trouble
    _log_path, _log_trouble = log_path, None
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
        # stderr may be a cron mail or a file too: tracebacks without locals
        rendered = structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(_formatter(shared, rendered, _cut_secrets))
    else:
        console = TroubleLines(has_log=log_path is not None)
    console.setLevel(console_level)
    root.addHandler(console)
    if log_path is not None:
        _add_log_file(root, log_path, shared)
    for noisy in ("httpx", "httpcore", "uvicorn", "uvicorn.access", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _add_log_file(root: logging.Logger, log_path: Path, shared: list[Any]) -> None:
    global _log_path
    try:
        make_private_folder(log_path.parent)
    except OSError:  # the store's own open names what is in the folder's way, and stops
        _log_path = None
        return
    try:
        to_file = _LogFile(log_path, encoding="utf-8")
    except OSError as exc:
        _log_path = None
        _broken(log_path, exc)
        return
    to_file.setLevel(logging.INFO)
    # tracebacks go to the file only, as data
    json_lines = [
        structlog.processors.ExceptionRenderer(FRAMES_WITHOUT_LOCALS),
        structlog.processors.JSONRenderer(),
        _cut_secrets,
    ]
    to_file.setFormatter(_formatter(shared, *json_lines))
    root.addHandler(to_file)


def _broken(log_path: Path, error: BaseException) -> None:
    """Say once on stderr that the log cannot be written, and keep why for `log_trouble`."""
    global _log_trouble
    if _log_trouble is not None:
        return
    reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
    full = getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    fix = "free space on its disk" if full else "make it writable or choose another staging.path"
    _log_trouble = f"the log file {log_path} cannot be written ({reason}): {fix}"
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"haul: {_log_trouble}\n")
        sys.stderr.flush()


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
        if isinstance(reason, int) and is_throttle(reason):
            line = f"{service} asks haul to slow down ({reason}); waiting"
            return (name, service, "throttle"), line
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
            stream.write(without_secrets(text) + "\n")
            stream.flush()


class _LogFile(logging.FileHandler):
    """The log file, private to the user; when it cannot be written (a full disk), one line
    on stderr says so, once, instead of Python's "--- Logging error ---" block after every
    record, and `log_trouble` tells the run to stop."""

    def _open(self) -> io.TextIOWrapper:
        # text mode: os.fdopen gives the TextIOWrapper logging's own open would
        return cast(io.TextIOWrapper, open_private(Path(self.baseFilename), "a", encoding="utf-8"))

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            _broken(Path(self.baseFilename), error)
        else:  # a record that cannot be rendered is a bug, not a broken file
            super().handleError(record)

    def close(self) -> None:
        # the last flush of a file that cannot be written fails too: that was already said
        with contextlib.suppress(OSError):
            super().close()


def _formatter(shared: list[Any], *rendering: Any) -> structlog.stdlib.ProcessorFormatter:
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *rendering],
    )
