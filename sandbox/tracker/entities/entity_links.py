"""Links of an entity: to another entity (``{relationship, entity}``) or to an issue
(``{relationship, issue}``), stored once from the side that made them; the other entity lists
the inverse verb.  A link to itself, or a second link between the same two, is a 422; a
missing other end is a 404.
"""

from __future__ import annotations

from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.entities.entity_history import touch
from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.planning.planning import Change, Entity, EntityLink, Planning

# link verb as created -> as the other entity lists it
RELATIONSHIPS = {
    "relates": "relates",
    "depends on": "is dependent by",
    "is dependent by": "depends on",
    "works towards": "has supporting projects",
    "has supporting projects": "works towards",
}


def check_link(org: Org, planning: Planning, entity: Entity, spec: dict) -> tuple[str, str, bool]:
    """(relationship, other end, whether it is an issue) of a link spec; 422/404 if wrong."""
    relationship = spec.get("relationship")
    if not isinstance(relationship, str) or relationship not in RELATIONSHIPS:
        message = f"Must be one of: {', '.join(RELATIONSHIPS)}"
        raise ApiError(422, message, errors={"relationship": message})
    target, to_issue = _link_target(org, planning, spec)
    if target == entity.id:
        raise ApiError(422, "An entity cannot link to itself", errors={"entity": target})
    for link in planning.links_of(entity.id):
        if {link.source, link.target} == {entity.id, target}:
            raise ApiError(422, "These two are already linked", errors={"entity": target})
    return relationship, target, to_issue


def add_link(
    org: Org, planning: Planning, entity: Entity, spec: dict, by: int, at: int
) -> EntityLink:
    """A link from ``entity`` to another entity (``entity``) or to an issue (``issue``)."""
    relationship, target, to_issue = check_link(org, planning, entity, spec)
    link = EntityLink(planning.take("link"), entity.id, relationship, target, to_issue, by, at)
    planning.links[link.id] = link
    touch(planning, entity, "Link added", by, at, (Change("links", f"{relationship} {target}"),))
    return link


def _link_target(org: Org, planning: Planning, spec: dict) -> tuple[str, bool]:
    if spec.get("issue") is not None:
        issue = org.find_issue(str(spec["issue"]))
        if issue is None:
            raise ApiError(404, "Issue does not exist.", errors={"issue": str(spec["issue"])})
        return issue.key, True
    ref = spec.get("entity")
    ref = ref.get("id") if isinstance(ref, dict) else ref
    found = planning.entities.get(str(ref)) if ref is not None else None
    if found is None:
        raise ApiError(404, "Entity does not exist.", errors={"entity": str(ref)})
    return found.id, False


def remove_link(planning: Planning, entity: Entity, right: str, by: int, at: int) -> None:
    """Remove the link between ``entity`` and ``right`` (an entity id or an issue key)."""
    for link in planning.links_of(entity.id):
        other = link.target if link.source == entity.id else link.source
        if other == right:
            del planning.links[link.id]
            touch(planning, entity, "Link removed", by, at, (Change("links", f"- {right}"),))
            return
    raise ApiError(404, "Link does not exist.", errors={"right": right})
