"""The wiki as a service of the runner: its client, extract parts and load parts.

Moves the page trees under `[scope] wiki_roots`, each to `[mapping] wiki_roots` (default:
the same slug), with their attachments, grids and comments.
"""

from __future__ import annotations

from collections.abc import Mapping

from haul.connectors.wiki import WikiClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.forms.backfill import GridBackfill, check_rules, grid_plans
from haul.pipelines.services import Details, SourceParts, TargetParts, core_options
from haul.pipelines.streams import ExtractStats
from haul.pipelines.wiki.content import Rewriter, SlugMap
from haul.pipelines.wiki.specs import PLANS, WikiLoad
from haul.pipelines.wiki.streams import PageDrain, PageTree
from haul.state.store import StagingStore


class WikiService:
    """The wiki: page trees and what hangs off their pages."""

    name: str = "wiki"
    staged_of: Mapping[str, str] = {"wiki_grid_rows": "wiki_grid"}
    optional: tuple[str, ...] = ("backfill_grid", "backfill_grid_rows")
    loadable: tuple[str, ...] = tuple(PLANS)
    staged_only: tuple[str, ...] = ()

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        return {**PLANS, **grid_plans(config)}

    def configured(self, endpoint: Endpoint) -> bool:
        return bool(getattr(endpoint, "wiki_url", None))

    def client(self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> WikiClient:
        # configured() made sure of the URL
        return WikiClient.connect(
            base_url=endpoint.wiki_url or "", **core_options(endpoint, environ, tuning)
        )

    async def source(self, config: Config, client: WikiClient, store: StagingStore) -> SourceParts:
        concurrent = config.tuning.concurrency > 1
        trees = [PageTree(client, root, concurrent=concurrent) for root in config.scope.wiki_roots]
        drain = PageDrain(client, store, concurrent=concurrent)

        async def details(stats: ExtractStats) -> Details:
            return {
                "wiki_pages_read": sum(tree.pages_read for tree in trees),
                "wiki_pages_drained": stats.drained["wiki_page"],
                "wiki_attachment_bytes": drain.attachment_bytes,
            }

        return SourceParts(list(trees), [drain], details)

    async def target(self, config: Config, client: WikiClient, store: StagingStore) -> TargetParts:
        slugs = slug_map(config)
        rewriter = Rewriter(slugs, dict(config.mapping.queues))
        load = WikiLoad(client, store, rewriter, config.mapping.wiki_provenance)

        async def in_target() -> dict[str, int]:
            pages = 0
            for root in slugs.target_roots():
                if await client.find_page(root, fields=None) is not None:
                    pages += len([ref async for ref in client.iter_descendants(root)])
            return {"wiki_page": pages}

        check_rules(config, store, "wiki_grid")
        return TargetParts(load.specs() + GridBackfill(client, store, config).specs(), in_target)


def slug_map(config: Config) -> SlugMap:
    """Where each configured root lands in the target."""
    return SlugMap(tuple(config.scope.wiki_roots), dict(config.mapping.wiki_roots))


WIKI = WikiService()
