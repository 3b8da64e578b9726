"""An entity's history and the ids it hands out: every change is an event (who, when, what
changed), and bumps the entity's version and updatedAt."""

from __future__ import annotations

import secrets

from haul.sandbox.tracker.planning.planning import (
    Change,
    Entity,
    EntityComment,
    EntityEvent,
    Planning,
)


def new_hex_id(planning: Planning, kind: str) -> str:
    """A 24-hex id whose first half orders it after every earlier id of its kind."""
    tail = f"{planning.id_rng.getrandbits(48):012x}" if planning.id_rng else secrets.token_hex(6)
    return f"{planning.take(kind):012x}{tail}"


def record(
    planning: Planning,
    entity: Entity,
    kind: str,
    by: int,
    at: int,
    changes: tuple[Change, ...] = (),
) -> None:
    entity.events.append(EntityEvent(new_hex_id(planning, "event"), kind, by, at, changes))


def touch(
    planning: Planning, entity: Entity, kind: str, by: int, at: int, changes: tuple = ()
) -> None:
    """A change: recorded in the history, the version bumped, updatedAt moved on."""
    record(planning, entity, kind, by, at, changes)
    entity.version += 1
    entity.updated_at = max(entity.updated_at, at)


def add_comment(
    planning: Planning, entity: Entity, text: str, summonees: tuple[int, ...], by: int, at: int
) -> EntityComment:
    comment = EntityComment(
        id=planning.take("comment"),
        long_id=new_hex_id(planning, "comment-long"),
        text=text,
        created_by=by,
        created_at=at,
        updated_by=by,
        updated_at=at,
        summonees=summonees,
    )
    entity.comments.append(comment)
    touch(planning, entity, "Comment added", by, at, (Change("comment", text[:200]),))
    return comment
