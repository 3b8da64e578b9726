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
