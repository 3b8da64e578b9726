"""One table of figures for `make bench`: each bench records its figures here, the table reads them.

A bench calls `record` once per figure; each call appends one JSON line to the results file
(`HAUL_BENCH_RESULTS`, default `build/bench/results.jsonl`), so benches running as separate
processes add to one file, and `make bench` clears it first and ends with `bench/table.py`.
Every figure should be a ratio measured in the same run (this machine and the next differ
several-fold in CPU): against a baseline run beside it, or a share of a known limit.

    from results import record   # bench scripts run from bench/, which is on sys.path
    record("tracker extract / official SDK", 31.2, ">= 30", note="small org, 20 ms")

`target` is an operator and a number (">= 30", "<= 2.5", "> 0"), or "" for a figure
reported without one.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATH = Path("build/bench/results.jsonl")
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}


def results_path() -> Path:
    return Path(os.environ.get("HAUL_BENCH_RESULTS") or DEFAULT_PATH)


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    target: str = ""
    unit: str = "x"
    note: str = ""
    bench: str = ""

    def met(self) -> bool | None:
        """Whether the value meets the target; None without one."""
        if not self.target.strip():
            return None
        op, bound = parse_target(self.target)
        return OPERATORS[op](self.value, bound)


def parse_target(target: str) -> tuple[str, float]:
    """ ">= 30" -> (">=", 30.0); raises ValueError on anything else."""
    text = target.strip()
    for op in sorted(OPERATORS, key=len, reverse=True):
        if text.startswith(op):
            return op, float(text[len(op) :])
    raise ValueError(f"target {target!r} is not an operator and a number, e.g. '>= 30'")


def record(name: str, value: float, target: str = "", unit: str = "x", note: str = "") -> Figure:
    """Append one figure to the results file (and return it); a bad target fails here, in the
    bench that wrote it, not later in the table."""
    if target.strip():
        parse_target(target)
    bench = Path(os.environ.get("HAUL_BENCH_NAME") or _caller_script()).stem
    figure = Figure(name, float(value), target.strip(), unit, note, bench)
    path = results_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(figure.__dict__) + "\n")
    return figure


def read(path: Path | None = None) -> Iterator[Figure]:
    """The figures recorded so far, in order; none when the file does not exist."""
    path = path or results_path()
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield Figure(**json.loads(line))


def _caller_script() -> str:
    import __main__

    return getattr(__main__, "__file__", None) or "bench"
