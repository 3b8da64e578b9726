"""The links between issues: loaded after every tree, once both of a link's ends exist
(`links`). Staged by the children layer's drain with the rest of an issue."""

from __future__ import annotations

from haul.pipelines.tracker.issues.kinds import Kind, kinds_layer
from haul.pipelines.tracker.links.links import LINK

KINDS: tuple[Kind, ...] = (LINK,)

LINKS = kinds_layer("links", KINDS)
