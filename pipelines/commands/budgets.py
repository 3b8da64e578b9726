"""The rate budgets of a command's clients start where the last run against the same service
left them (the store keeps what each found: `state.budgets`), and what they find is kept for
the next run, however this one ends: a migration run again, or the nightly export, does not
search for a limit it found yesterday."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import structlog

from haul.state.errors import StoreError
from haul.state.store import StagingStore

log = structlog.get_logger("haul.pipelines")


@contextmanager
def kept_budgets(store: StagingStore, clients: Iterable[Any]) -> Iterator[None]:
    """Each client's budgets resumed from the store; what they found kept when the block ends."""
    cores = [client.core for client in clients]
    for core in cores:
        core.resume_budgets(store.budgets.recalled(core.base_url, core.org_id))
    try:
        yield
    finally:
        for core in cores:
            _keep(store, core)


def _keep(store: StagingStore, core: Any) -> None:
    """What one core's budgets found, kept; a store that cannot take it (the error that
    ended the run may be the store's own) loses only a faster start next time."""
    try:
        store.budgets.remember(core.base_url, core.org_id, core.found_budgets())
    except StoreError as error:
        log.warning("budgets_not_kept", service=core.service, error=str(error))
