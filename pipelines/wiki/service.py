"""The wiki as a service: its entities, client, extract parts, load parts and tables.

Moves the page trees under `[scope] wiki_roots`, each to `[mapping] wiki_roots` (default:
the same slug), with their access (users and groups mapped, failing closed), attachments,
grids and comments. Back-filled form answers load
here as the rows of a grid (`pipelines.wiki.backfill`). A later run carries what changed:
pages rewritten or moved (`pipelines.wiki.moves`), files replaced, grids and comments edited,
and what the source deleted (`pipelines.wiki.deletions`: reported, or mirrored when asked).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from haul.connectors.wiki import WikiClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.pages import Page
from haul.pipelines.export.tables import Registry
from haul.pipelines.findings import Finding, nothing_staged
from haul.pipelines.forms.staged import check_rules
from haul.pipelines.services import (
    Details,
    Entity,
    SourceParts,
    TargetParts,
    core_options,
    sync_changes,
)
from haul.pipelines.shards.manifest import PartScope
from haul.pipelines.shards.units import Unit
from haul.pipelines.specs import Planned
from haul.pipelines.streams import ExtractStats
from haul.pipelines.sync.references import References, SourcePaths, unset_web_hosts
from haul.pipelines.wiki import attachments, comments, grid_load, mirrored, pages
from haul.pipelines.wiki.access_checks import WikiPlanner, access_findings
from haul.pipelines.wiki.access_sync import PageAccess, holder_map
from haul.pipelines.wiki.backfill import GridBackfill, grid_plans
from haul.pipelines.wiki.content import Rewriter, SlugMap, wiki_references
from haul.pipelines.wiki.deletions import DELETED, deleted_counts, deletion_plan
from haul.pipelines.wiki.export import TABLES
from haul.pipelines.wiki.load import WikiLoad
from haul.pipelines.wiki.moves import follow_page_moves
from haul.pipelines.wiki.ownership import PageOwnership
from haul.pipelines.wiki.streams import Listed, PageDrain, PageTree
from haul.pipelines.wiki.undo import WikiRemovals
from haul.pipelines.wiki.verify import WikiVerifier
from haul.state.store import StagingStore

ENTITIES = (
    Entity("wiki_page"),
    Entity("wiki_page_access", staged="wiki_page"),
    Entity("wiki_attachment", files=True),
    Entity("wiki_grid"),
    Entity("wiki_grid_rows", staged="wiki_grid"),
    Entity("wiki_comment"),
    # a replaced file's old copy, and with [sync] deletions = "mirror" what the source deleted
    Entity("wiki_deletion", staged=DELETED, optional=True),
    Entity("backfill_grid", staged="survey", optional=True),
    Entity("backfill_grid_rows", staged="survey", optional=True),
    # [sync] deletions = "mirror": the grid rows of answers the source deleted leave the grid
    Entity("backfill_grid_deletion", staged="survey_answer_deleted", optional=True),
)

# the kinds of wiki record, one module each, in the order a page's rows load (`load`)
KINDS = (pages, attachments, grid_load, comments)
PLANS = {name: plan for kind in KINDS for name, plan in kind.PLANS.items()}


class WikiService:
    """The wiki: page trees and what hangs off their pages."""

    name: str = "wiki"
    entities: tuple[Entity, ...] = ENTITIES

    @property
    def tables(self) -> Registry:
        return Registry.of(TABLES)

    @property
    def pages(self) -> tuple[Page, ...]:
        return ()

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        # moves are followed before anything is planned, deletions planned after; the mode's
        # own name makes a change of [sync] deletions plan again
        mirror = config.sync.deletions == "mirror"
        mode = {("wiki_deletions_mirrored" if mirror else "wiki_deletions_reported"): _nothing}
        return {"wiki_page_move": follow_page_moves, **PLANS, **grid_plans(config),
                "wiki_deletion": deletion_plan(mirror), **mode}  # fmt: skip

    def configured(self, endpoint: Endpoint) -> bool:
        return bool(getattr(endpoint, "wiki_url", None))

    def client(self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> WikiClient:
        # configured() made sure of the URL
        return WikiClient.connect(
            base_url=endpoint.wiki_url or "", **core_options(endpoint, environ, tuning)
        )

    async def shard_units(self, config: Config, client: WikiClient) -> list[Unit]:
        """A shard manifest's units: one per subtree in scope, weighed by its pages."""
        units = []
        for root in config.scope.wiki_roots:
            pages = [page async for page in client.iter_descendants(root)]
            units.append(Unit(PartScope(wiki_roots=(root,)), len(pages)))
        return units

    async def source(self, config: Config, client: WikiClient, store: StagingStore) -> SourceParts:
        concurrent = config.tuning.concurrency > 1
        listed = Listed()  # a page's listings, read with it, reach its drain unasked again
        trees = [
            PageTree(client, root, concurrent=concurrent, store=store, listed=listed)
            for root in config.scope.wiki_roots
        ]
        drain = PageDrain(client, store, concurrent=concurrent, listed=listed)

        async def details(stats: ExtractStats) -> Details:
            return {
                "wiki_pages_read": sum(tree.pages_read for tree in trees),
                "wiki_pages_drained": stats.drained["wiki_page"],
                "wiki_attachment_bytes": drain.attachment_bytes,
            }

        return SourceParts(list(trees), [drain], details)

    async def target(
        self, config: Config, client: WikiClient, store: StagingStore, *, read_only: bool = False
    ) -> TargetParts:
        # reads only, whatever the command: the target's holders come from the client
        slugs = SlugMap.of(config)
        references, scan = wiki_references(store, config)
        rewriter = Rewriter(slugs, dict(config.mapping.queues), references)
        access = await page_access(config, client, store)
        mirror = config.sync.deletions == "mirror"
        ownership = PageOwnership(f"haul:{config.source.org}")
        provenance = config.mapping.wiki_provenance
        load = WikiLoad(
            client, store, rewriter, provenance, access, ownership, mirror, config.sync.conflicts
        )

        async def in_target() -> dict[str, int]:
            pages = 0
            for root in slugs.target_roots():
                if await client.find_page(root, fields=None) is not None:
                    pages += len([ref async for ref in client.iter_descendants(root)])
            return {"wiki_page": pages}

        check_rules(config, store, "wiki_grid")
        kinds = (*KINDS, mirrored)
        specs = [spec for kind in kinds for spec in kind.specs(load)]
        specs += GridBackfill(client, store, config).specs()
        verifier = WikiVerifier(client, load)
        planner = WikiPlanner(store, {spec.name: spec for spec in specs}, access, load)

        def changes() -> dict[str, dict[str, int]]:
            left = deleted_counts(store, out_of_scope=True)
            return sync_changes(load.changes, deleted_counts(store), left)

        removals = WikiRemovals(client, store).removals()
        return TargetParts(specs, in_target, planner=planner, verifier=verifier, changes=changes,
                           references=scan, removals=removals,
                           not_carried=lambda: _references_left(references))  # fmt: skip

    async def checks(
        self, config: Config, client: WikiClient, store: StagingStore | None, side: str
    ) -> list[Finding]:
        """On the source: every root of `scope.wiki_roots` exists. On the target: the page
        access the staged pages need, holder by holder, and the web addresses the staged
        texts' links to the source need."""
        if not config.scope.wiki_roots:
            return []
        if side != "target":
            return await _roots_exist(config, client)
        if store is None:
            return [nothing_staged("the wiki's page access")]
        found = access_findings(store, await page_access(config, client, store))
        return found + web_host_findings(config, store)

    async def checks_across(
        self, config: Config, source: WikiClient, target: WikiClient, store: StagingStore | None
    ) -> list[Finding]:
        return []  # page access is compared by `checks` on the target and by verify


async def _roots_exist(config: Config, client: WikiClient) -> list[Finding]:
    missing = [slug for slug in config.scope.wiki_roots if await client.find_page(slug) is None]
    if not missing:
        return [Finding("ok", "the wiki source has every page of scope.wiki_roots")]
    return [
        Finding("error", f"wiki page {slug} does not exist in the wiki source org",
                "correct scope.wiki_roots")
        for slug in missing
    ]  # fmt: skip


def web_host_findings(config: Config, store: StagingStore) -> list[Finding]:
    """A warning per web address not set on both sides while staged page bodies and comments
    link to the source on it (`references.unset_web_hosts`)."""
    paths = SourcePaths(queues=config.scope.queues, roots=config.scope.wiki_roots)

    def texts() -> Iterator[str | None]:
        for entity, name in (("wiki_page", "content"), ("wiki_comment", "body")):
            for record in store.iter_records(entity):
                yield record.raw.get(name)

    return unset_web_hosts(config, paths, texts, "wiki")


def _references_left(references: References) -> dict[str, int]:
    """What the wiki's texts still say about the source ("reference: what" -> how many)."""
    return {f"reference: {what}": n for what, n in sorted(references.left.items())}


def _nothing(store: StagingStore) -> Iterator[Planned]:
    yield from ()


async def page_access(config: Config, client: WikiClient, store: StagingStore) -> PageAccess:
    """Page access against the target org: its holders, the mapping files, and which staged
    pages are roots (their parent stays behind, so they take what they inherit as their own)."""
    holders = await holder_map(client, store, config.mapping.users_file, config.mapping.groups_file)
    staged = store.source_ids("wiki_page")
    return PageAccess(client, holders, lambda record: record.parent not in staged)


WIKI = WikiService()
