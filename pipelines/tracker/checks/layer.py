"""What `haul check` finds for the tracker on one side (`check`): the source's queues; the
target's admin rights, users, and, once something is staged, what the mapping needs and the
issues' access lists.

It loads nothing. What concerns one layer's records is that layer's own `checks` (the target's
limits: issues; files the texts show: children; remote links' applications: planning; boards:
organisation), and the comparison across the two orgs is the organisation layer's.
"""

from __future__ import annotations

from haul.pipelines.tracker.checks.check import tracker_checks
from haul.pipelines.tracker.layer import Layer

CHECKS = Layer("checks", checks=tracker_checks)
