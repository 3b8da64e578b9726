"""Where wiki pages land, and what their text says once they are there.

A page moves with its subtree: `SlugMap` turns a source slug under a configured root into
its target slug (`[mapping] wiki_roots`, default the same slug). `rewrite` makes a page's
markdown point at the new places: links to migrated pages (absolute ``/team/a`` or relative
``../b``, ``./c``), links to their attachments (``/team/a/.files/log.txt``) and tracker keys
of remapped queues (``TEST-12`` -> ``NEW-12``). Links to anything else are left as written.

The wiki keeps neither the original author nor the time of a page or a comment, so a short
provenance line (`[mapping] wiki_provenance`, '' for none) carries them. The line tells of one
event: who wrote the page or comment first and when (`{author}`, `{date}`, `{created_at}`);
when the source does not name its first author, the last revision's author and that
revision's time, never one person with another event's date.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from haul.pipelines.config import Config
from haul.pipelines.config.mapping_files import read_users_csv
from haul.pipelines.sync.markup import sub_outside_code
from haul.pipelines.sync.references import (
    References,
    SourceScan,
    mention_login,
    moved_slug,
    web_hosts,
)
from haul.state.store import StagingStore

# a markdown link target: [text](target "title") or [text](target)
_LINK = re.compile(r"(\]\()([^)\s]+)")
_KEY = re.compile(r"\b([A-Z][A-Z0-9]*)-(\d+)\b")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


@dataclass(frozen=True)
class SlugMap:
    """Source slug -> target slug, for pages under the configured roots."""

    roots: tuple[str, ...]
    mapping: Mapping[str, str] = field(default_factory=dict)

    def root_of(self, slug: str) -> str | None:
        """The longest configured root that holds `slug`, or None."""
        holders = [root for root in self.roots if slug == root or slug.startswith(root + "/")]
        return max(holders, key=len) if holders else None

    def target(self, slug: str) -> str | None:
        """Where a migrated page lands; None for a page outside every root."""
        root = self.root_of(slug)
        if root is None:
            return None
        return self.mapping.get(root, root) + slug[len(root) :]

    def target_roots(self) -> list[str]:
        """Where each configured root lands."""
        return [self.mapping.get(root, root) for root in self.roots]

    @classmethod
    def of(cls, config: Config) -> SlugMap:
        """Where each root of `[scope] wiki_roots` lands (`[mapping] wiki_roots`; default: the
        same slug)."""
        return cls(tuple(config.scope.wiki_roots), dict(config.mapping.wiki_roots))


@dataclass(frozen=True)
class Rewriter:
    """Rewrites one page's links; `queues` maps source queue keys to target ones, and
    `references` the source's users and web addresses (`pipelines.sync.references`)."""

    slugs: SlugMap
    queues: Mapping[str, str] = field(default_factory=dict)
    references: References = field(default_factory=References)

    def rewrite(self, content: str, page_slug: str) -> str:
        """The content with links and tracker keys pointing at their new places (code left
        as written: `pipelines.sync.markup`)."""
        content = self.references.rewrite(content) or ""
        content = sub_outside_code(
            _LINK, lambda m: m.group(1) + self.link(m.group(2), page_slug), content
        )
        return self.keys(content)

    def cell(self, text: str) -> str:
        """A grid's text cell: its references and tracker keys."""
        return self.keys(self.references.rewrite(text) or "")

    def link(self, target: str, page_slug: str) -> str:
        """One link target: a migrated page or attachment -> its new absolute address."""
        if _SCHEME.match(target) or target.startswith(("#", "//")):
            return target
        path, anchor = _split(target)
        if path.startswith("/"):
            source = path.strip("/")
        else:  # relative to the page itself, as the wiki reads it
            source = posixpath.normpath(posixpath.join(page_slug, path)).strip("/")
            if source.startswith(".."):
                return target
        page, files, name = source.partition("/.files/")
        moved = self.slugs.target(page)
        if moved is None:
            return target
        return "/" + moved + (files + name if files else "") + anchor

    def keys(self, text: str) -> str:
        """Tracker keys of remapped queues -> the same number in the target queue."""
        if not self.queues:
            return text

        def swap(match: re.Match[str]) -> str:
            queue = self.queues.get(match.group(1))
            return f"{queue}-{match.group(2)}" if queue else match.group(0)

        return sub_outside_code(_KEY, swap, text)


def _split(target: str) -> tuple[str, str]:
    for mark in ("#", "?"):
        if mark in target:
            path, _, rest = target.partition(mark)
            return path, mark + rest
    return target, ""


def author_of(raw: Mapping[str, Any]) -> str:
    """Who wrote a page or a comment, as the source told it (display name, else login)."""
    return written(raw)[0]


def created_of(raw: Mapping[str, Any]) -> str:
    """When a page or a comment was written, as the source told it."""
    attributes = raw.get("attributes") or {}
    return str(raw.get("created_at") or attributes.get("created_at") or "")


def written(raw: Mapping[str, Any]) -> tuple[str, str]:
    """(who, when) of one event: the first writing (its author or owner, and the creation
    time), else, with no first author named, the last revision (its author, its time)."""
    attributes = raw.get("attributes") or {}
    revision = raw.get("active_revision") or {}
    first = (raw.get("author"), attributes.get("author"), attributes.get("owner"))
    for person in (*first, raw.get("owner"), raw.get("user")):
        if name := _name(person):
            return name, created_of(raw)
    if name := _name(revision.get("author")):
        return name, str(revision.get("created_at") or "")
    return "unknown", created_of(raw)


def _name(person: Any) -> str:
    if isinstance(person, Mapping):
        return str(
            person.get("display_name") or person.get("username") or person.get("login") or ""
        )
    return person if isinstance(person, str) else ""


def provenance(template: str, raw: Mapping[str, Any], source_slug: str) -> str:
    """The provenance line for a page or a comment ('' when the template is ''): `{author}`
    and `{date}` (its day) or `{created_at}` (its instant) of one event, see `written`."""
    if not template:
        return ""
    author, when = written(raw)
    values = {
        "author": author,
        "date": when[:10],
        "created_at": when,
        "source_slug": source_slug,
    }
    return template.format_map(_Missing(values))


class _Missing(dict[str, str]):
    """A format map that leaves an unknown placeholder as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def with_provenance(text: str, line: str) -> str:
    """The text with its provenance line first, a blank line between."""
    return f"{line}\n\n{text}" if line else text


def wiki_references(store: StagingStore, config: Config) -> tuple[References, SourceScan]:
    """The references of wiki texts (users by the users file, else the same login when the
    target has it, by the tracker's staged users; web hosts) and what verify looks for."""
    explicit = read_users_csv(config.mapping.users_file) if config.mapping.users_file else {}
    source = {row.raw["login"] for row in store.iter_records("user")} | set(explicit)
    target = {row.raw["login"] for row in store.iter_records("target.user")}
    if target:
        login = mention_login(explicit, target, config.mapping.default_user)
    else:  # no list of the target's users: a login keeps its name unless the file maps it
        login = lambda name: explicit.get(name, name)  # noqa: E731 (a one-line default)
    tracker, wiki = web_hosts(config)
    slugs = SlugMap.of(config)
    references = References(source, login=login, page=moved_slug(slugs.roots, slugs.mapping),
                            tracker=tracker, wiki=wiki)  # fmt: skip
    away = {name for name in source if login(name) != name}
    hosts = tuple(hosts for hosts in (tracker, wiki) if hosts is not None)
    return references, SourceScan(hosts=hosts, mapped_away=away)
