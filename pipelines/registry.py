"""The services haul knows: the one list of them, in the order they extract and load.

Every shared module (the runner, check, plan, verify, status, the reports, the export) asks
this module for the services and names none of them. A service added at run time (a plug-in,
or a test's fake) joins the list with `added(service)` for as long as its block runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.forms.service import FORMS
from haul.pipelines.services import Service, plans_of
from haul.pipelines.tracker.service import TRACKER
from haul.pipelines.wiki.service import WIKI

_SERVICES: list[Service] = [FORMS, TRACKER, WIKI]


def services() -> list[Service]:
    """Every service haul can move, in the order they extract and load."""
    return list(_SERVICES)


@contextmanager
def added(service: Service) -> Iterator[Service]:
    """`service` is one of haul's services while the block runs."""
    _SERVICES.append(service)
    try:
        yield service
    finally:
        _SERVICES.remove(service)


def plans(config: Config) -> dict[str, PlanFn]:
    """Every ledger entity's plan, of every service (`services.plans_of`)."""
    return plans_of(services(), config)
