"""Print the one table of `make bench`: every figure the benches recorded (bench/results.py),
its target and whether it was met; the missed ones again below it. Exits 0 either way: the
figures are for reading (and for the closing note), not a gate.

    .venv/bin/python bench/table.py [--results build/bench/results.jsonl] [--markdown]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from results import Figure, read, results_path


def verdict(figure: Figure) -> str:
    met = figure.met()
    return "" if met is None else ("met" if met else "MISSED")


def value_text(figure: Figure) -> str:
    if figure.unit == "x":
        return f"{figure.value:.1f}x"
    if figure.unit == "%":
        return f"{figure.value:.0f}%"
    digits = 0 if abs(figure.value) >= 100 else 2
    return f"{figure.value:.{digits}f} {figure.unit}".rstrip()


def target_text(figure: Figure) -> str:
    if not figure.target:
        return ""
    suffix = {"x": "x", "%": "%"}.get(figure.unit, f" {figure.unit}")
    return f"{figure.target}{suffix}".strip()


def rows(figures: list[Figure]) -> list[tuple[str, ...]]:
    return [(f.bench, f.name, value_text(f), target_text(f), verdict(f), f.note) for f in figures]


def plain(figures: list[Figure]) -> str:
    header = ("bench", "figure", "value", "target", "", "note")
    table = [header, *rows(figures)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = []
    for row in table:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        cells[2] = row[2].rjust(widths[2])
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def markdown(figures: list[Figure]) -> str:
    lines = ["| bench | figure | value | target | | note |", "|---|---|---:|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows(figures)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", type=Path, default=None)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (for notes)")
    args = parser.parse_args()
    path = args.results or results_path()
    figures = list(read(path))
    if not figures:
        print(f"no figures recorded in {path}")
        return
    print(f"\nhaul bench: {len(figures)} figures, each a ratio measured in this run ({path})\n")
    print(markdown(figures) if args.markdown else plain(figures))
    missed = [f for f in figures if f.met() is False]
    targets = sum(1 for f in figures if f.met() is not None)
    if missed:
        print(f"\nMISSED {len(missed)} of {targets} targets:")
        for f in missed:
            print(f"  {f.bench}: {f.name} = {value_text(f)}, target {target_text(f)}")
    else:
        print(f"\nall {targets} targets met")


if __name__ == "__main__":
    main()
