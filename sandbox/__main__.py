"""``python -m haul.sandbox``: the same as ``haul sandbox serve``."""

from __future__ import annotations

import argparse

from haul.sandbox.server import serve
from haul.sandbox.tracker.catalog import SIZES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m haul.sandbox", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="tracker port; 0 picks a free one")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--size", choices=list(SIZES), default="tiny")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--faults", default="", help="e.g. '429:0.1:2@*/_import,latency:20+10'")
    parser.add_argument(
        "--language", action="append", default=[], metavar="ROLE=LANG",
        help="an organisation's language, e.g. target=ru (en unless told)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    serve(
        host=args.host,
        port=args.port,
        seed=args.seed,
        size=args.size,
        latency_ms=args.latency_ms,
        faults=args.faults,
        languages=dict(item.partition("=")[::2] for item in args.language),
    )


if __name__ == "__main__":
    main()
