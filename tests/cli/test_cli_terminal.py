"""What the terminal shows of trouble: one short line per kind, a count when it repeats,
every event in haul.log, and the events themselves with `haul -v`."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

from haul.pipelines.logs import TroubleLines
from tests.helpers.cli_fixtures import run_haul, source_queues, tokens_env, write_config


def record(**event: Any) -> logging.LogRecord:
    return logging.LogRecord("haul", logging.WARNING, __file__, 1, event, None, None)


def test_one_line_per_kind_then_a_count_every_ten_seconds() -> None:
    """Forty retries of one service for one reason in 25 s: one line, then two counts
    (at 10 s and 20 s), then the rest when the handler closes; another kind has its own."""
    now = [0.0]
    out = io.StringIO()
    lines = TroubleLines(stream=out, clock=lambda: now[0])
    for second in range(40):
        now[0] = second * 25 / 40
        lines.emit(record(event="http_retry", service="tracker", reason=503, attempt=second))
    lines.emit(record(event="http_retry", service="wiki", reason="ConnectError"))
    lines.close()

    said = out.getvalue().splitlines()
    assert said[0] == "haul: tracker answers 503; retrying; details in haul.log"
    repeats = [line for line in said if "tracker answers 503; retrying (again" in line]
    assert len(repeats) == 3
    assert sum(int(line.split("again, ")[1].split()[0]) for line in repeats) == 39
    assert "haul: wiki: connection trouble (ConnectError); retrying; details in haul.log" in said
    assert not any("attempt=" in line for line in said)


def test_retries_are_a_short_line_on_the_terminal_and_events_in_the_log(
    sandbox: Any, tmp_path: Path
) -> None:
    """A flaky service: the terminal says so in a few human lines, no structlog lines;
    haul.log holds each retry as an event; -v shows the events on the terminal too."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    sandbox.set_faults("5xx:0.3")
    try:
        quiet = run_haul("extract", "--config", config, env=env)
        verbose = run_haul("-v", "extract", "--config", config, env=env)
    finally:
        sandbox.set_faults("")

    assert quiet.returncode == 0, quiet.stderr
    assert "[warning" not in quiet.stderr and "http_retry" not in quiet.stderr
    assert "haul: tracker answers 503; retrying; details in haul.log" in quiet.stderr
    trouble = [line for line in quiet.stderr.splitlines() if "503" in line]
    assert len(trouble) <= 5, quiet.stderr
    log = (tmp_path / "staging" / "haul.log").read_text(encoding="utf-8").splitlines()
    retries = [json.loads(line) for line in log if '"http_retry"' in line]
    assert len(retries) > len(trouble)
    assert verbose.returncode == 0, verbose.stderr
    assert "http_retry" in verbose.stderr
