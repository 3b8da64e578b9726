"""The links between issues: loaded after every tree, once both of a link's ends exist
(`links`). Staged by the children layer's drain with the rest of an issue."""

from __future__ import annotations

from collections.abc import Mapping

from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.tracker.issues.kinds import Kind, TreeLoad, kind_plans, kind_specs
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.links.links import LINK
from haul.pipelines.tracker.target import TrackerTarget

KINDS: tuple[Kind, ...] = (LINK,)


def link_plans(config: Config) -> Mapping[str, PlanFn]:
    """The links' plan: once every issue is planned."""
    return kind_plans(KINDS)


async def link_target(target: TrackerTarget) -> TargetPart:
    """The links' spec, written through the trees' one `TreeLoad`."""
    return TargetPart(kind_specs(KINDS, TreeLoad.of(target)))


LINKS = Layer(
    "links",
    entities=tuple(kind.entity for kind in KINDS),
    plans=link_plans,
    target=link_target,
)
