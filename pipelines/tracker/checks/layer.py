"""What `haul check` finds for the tracker on one side (`check`): the source's queues; the
target's admin rights, users, and, once something is staged, what the mapping needs, the
issues' access lists and the applications remote links point into.

It reads the other layers' findings (access lists, remote links' applications) and loads
nothing; the comparison across the two orgs is the organisation layer's.
"""

from __future__ import annotations

from haul.pipelines.tracker.checks.check import checked_target, tracker_checks
from haul.pipelines.tracker.layer import Layer

__all__ = ["CHECKS", "checked_target"]  # the target context as `haul check` builds it

CHECKS = Layer("checks", checks=tracker_checks)
