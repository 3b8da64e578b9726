"""What a service brings to the runner, and the services haul knows.

A service (the tracker; the wiki and forms next) gives the runner a client for an org, the
streams and drains of its extract, the plans of its ledger rows, and, for a target org, its
entity specs. The runner composes every configured service the same way; the engine and the
streams never name one. The registry at the bottom is the one place that lists them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.specs import EntitySpec
from haul.pipelines.streams import Drain, ExtractStats, Stream
from haul.state.store import StagingStore

Details = dict[str, Any]


@dataclass
class SourceParts:
    """One service's extract: its streams and drains, and the figures it reports after."""

    streams: list[Stream]
    drains: list[Drain] = field(default_factory=list)
    details: Callable[[ExtractStats], Awaitable[Details]] | None = None


@dataclass
class TargetParts:
    """One service's load into a target org: its specs, and what it reports after."""

    specs: list[EntitySpec]
    in_target: Callable[[], Awaitable[dict[str, int]]] | None = None  # the target's own counts
    unmapped_users: Callable[[], list[str]] = list


class Client(Protocol):
    """A service client: an async context manager with a cheap call that checks the token."""

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def myself(self) -> Any: ...


class Service(Protocol):
    """One service as the runner sees it."""

    @property
    def name(self) -> str: ...

    @property
    def loadable(self) -> tuple[str, ...]:
        """The ledger entities, in report order."""
        ...

    @property
    def staged_of(self) -> Mapping[str, str]:
        """Ledger entities that load from a staged entity of another name."""
        ...

    @property
    def optional(self) -> tuple[str, ...]:
        """Ledger entities shown only when something was planned for them (back-fills)."""
        ...

    @property
    def staged_only(self) -> tuple[str, ...]:
        """Entities staged for exports, never loaded."""
        ...

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        """Ledger entity -> its plan, for this config (back-fill rules add their own)."""
        ...

    def configured(self, endpoint: Endpoint) -> bool: ...

    def client(self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> Client: ...

    async def source(self, config: Config, client: Any, store: StagingStore) -> SourceParts: ...

    async def target(self, config: Config, client: Any, store: StagingStore) -> TargetParts: ...


def core_options(endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> Details:
    """What every service's client is built with from one side of the config: the token (read
    now, from the variable the config names), the org, the budgets and the patience."""
    return {
        "token": endpoint.token(environ),
        "org_id": endpoint.org_id,
        "cloud_org_id": endpoint.cloud_org_id,
        "auth_scheme": endpoint.auth_scheme,
        "read_rate": endpoint.read_rps,
        "write_rate": endpoint.write_rps,
        "max_rate": endpoint.max_rps,
        "rate_limit_patience": tuning.rate_limit_patience,
        "outage_patience": tuning.outage_patience,
        "request_timeout": tuning.request_timeout,
    }


def all_services() -> list[Service]:
    """Every service haul can move, in the order they extract and load."""
    from haul.pipelines.forms.service import FORMS
    from haul.pipelines.tracker.service import TRACKER
    from haul.pipelines.wiki.service import WIKI

    return [FORMS, TRACKER, WIKI]


def all_plans(config: Config) -> dict[str, PlanFn]:
    """Every ledger entity's plan, whichever services this run opened: a back-fill staged by
    the forms extract is planned for the tracker even when the tracker was not read."""
    return {
        name: plan for service in all_services() for name, plan in service.plans(config).items()
    }
