"""What `haul check` reports: findings, each ok, warning or error, with its fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One thing checked: its level (ok, warning, error), what was found, and the fix."""

    level: str
    what: str
    fix: str = ""


def nothing_staged(what: str) -> Finding:
    """The warning for a check that needs staged records before there are any."""
    return Finding(
        "warning",
        f"nothing is staged: {what} not checked",
        "run haul extract, then haul check again",
    )
