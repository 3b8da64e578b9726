"""Logging, configured once at the edge: JSON lines to a file, warnings readable on the console.

Library code only does `structlog.get_logger(__name__).info("event_name", key=value)`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import structlog

SECRET_KEYS = ("token", "authorization", "password", "secret")


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


def configure_logging(log_path: Path | None, *, console_level: int = logging.WARNING) -> None:
    """Route structlog through stdlib logging: JSON to `log_path`, short lines to stderr."""
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
    root.setLevel(logging.INFO if log_path else console_level)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(console_level)
    console.setFormatter(_formatter(shared, structlog.dev.ConsoleRenderer(colors=False)))
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
