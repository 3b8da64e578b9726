"""The shard manifest: one migration cut into parts that run, and resume, independently.

`haul plan --shards N --manifest FILE` writes it (`pipelines.shards.planning`); `haul run
--manifest FILE --part P` runs one part (`pipelines.shards.parts.run_part`). The file is JSON,
written deterministically (the same counts give the same bytes), paths relative to its folder::

    {
      "haul_manifest": 1,
      "config": "haul.toml",                 the base config every part derives its own from
      "shards": 4,
      "store_template": "stores/{part}/haul.db",  how each part's store path was made
      "pinned": {"scope.queues": "9c1e...", "target.org_id": "d4a0...", ...},
                                             the digest of each setting that decides where
                                             records go, as planned (`pin`)
      "parts": [
        {"part": "first", "needs": [], "store": "stores/first/haul.db", "records": 0,
         "scope": null, "source_token_env": null, "target_token_env": null},
        {"part": "1", "needs": ["first"], "store": "stores/1/haul.db", "records": 5210,
         "scope": {"queues": ["DEV"], "query": "Created: < \\"2024-03-01T00:00:00.000+0000\\"",
                   "wiki_roots": [], "surveys": []},
         "source_token_env": "SRC_TOKEN_1", "target_token_env": null},
        ...
        {"part": "last", "needs": ["first", "1", "2", "3", "4"], "store": "stores/last/haul.db",
         "records": 0, "scope": null, ...}
      ]
    }

The parts, in the order they run:

- ``first``: the organisation as configured (dictionary values, fields, queues with their
  workflows, components, versions, boards, sprints): what every shard's issues are imported
  into, made once (each shard then finds it in the target). It also stages the planning layer
  (projects, portfolios, goals, saved filters, dashboards, autoactions, triggers, macros) and
  holds it (ledger status ``waiting``) for the last part.
- ``1`` .. ``N``: the shards, balanced by record count: each holds tracker queues (a large
  queue cut into creation-time windows, each a query: ``Created: >= "a" AND Created: < "b"``),
  wiki subtrees and surveys (with their back-fill rules). A shard finds the organisation
  objects the first part made, and loads its trees and the links inside it; a link whose other
  end another shard loads waits, so that two shards running at once never both make it.
- ``last``: gathers every other part's store into its own (the union), plans what waited again
  over the union (a link between two shards loads from one side) and loads it: the links across
  shards, the planning layer (its links and queries name issues of every shard), autoactions,
  triggers and macros last (so importing fired nothing). `haul verify --manifest` and `haul
  report --manifest` read the union.

Each part has its own staging store (`store`: the template with ``{part}`` filled in, inside
the manifest's folder, so each worker may mount its own disk there) and may read its token
from its own variables (`source_token_env`, `target_token_env`; null: the base config's). A
part's `scope` narrows the base config's `[scope]` (its query joins the base query with AND).

The manifest pins the base config: a part refuses to run (exit 2, naming the settings) when a
setting that decides where records go (the targets' URLs and orgs, the scope, the mappings of
queues and wiki roots, the back-fill rules) differs from what the plan was made with, so that
one migration is never split across two orgs.
"""

from __future__ import annotations

import hashlib
import json
import os.path
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haul.connectors.errors import HaulError
from haul.pipelines.config import Config

FORMAT = 1
FIRST, LAST = "first", "last"
DEFAULT_STORE_TEMPLATE = "stores/{part}/haul.db"


class ManifestError(HaulError):
    """The manifest cannot be used as written: it says what to fix (exit 2)."""

    exit_code = 2


@dataclass(frozen=True)
class PartScope:
    """What one shard moves: a narrowing of the base config's `[scope]`."""

    queues: tuple[str, ...] = ()
    query: str | None = None  # a creation-time window, joined to the base query with AND
    wiki_roots: tuple[str, ...] = ()
    surveys: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "queues": list(self.queues),
            "query": self.query,
            "wiki_roots": list(self.wiki_roots),
            "surveys": list(self.surveys),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartScope:
        return cls(
            queues=tuple(data.get("queues") or ()),
            query=data.get("query"),
            wiki_roots=tuple(data.get("wiki_roots") or ()),
            surveys=tuple(data.get("surveys") or ()),
        )


@dataclass(frozen=True)
class Part:
    """One part of the manifest: `first`, a shard (`1`..`N`) or `last`."""

    name: str
    needs: tuple[str, ...]
    store: str  # relative to the manifest's folder (or absolute)
    records: int = 0  # the record count the shards were balanced by
    scope: PartScope | None = None  # shards only
    source_token_env: str | None = None
    target_token_env: str | None = None

    @property
    def is_shard(self) -> bool:
        return self.name not in (FIRST, LAST)

    def as_json(self) -> dict[str, Any]:
        return {
            "part": self.name,
            "needs": list(self.needs),
            "store": self.store,
            "records": self.records,
            "scope": None if self.scope is None else self.scope.as_json(),
            "source_token_env": self.source_token_env,
            "target_token_env": self.target_token_env,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Part:
        scope = data.get("scope")
        return cls(
            name=str(data["part"]),
            needs=tuple(str(need) for need in data.get("needs") or ()),
            store=str(data["store"]),
            records=int(data.get("records") or 0),
            scope=None if scope is None else PartScope.from_json(scope),
            source_token_env=data.get("source_token_env"),
            target_token_env=data.get("target_token_env"),
        )


@dataclass(frozen=True)
class Manifest:
    """The whole file; `folder` (not written) is where relative paths start."""

    config: str
    parts: tuple[Part, ...]
    store_template: str = DEFAULT_STORE_TEMPLATE
    folder: Path = field(default=Path("."), compare=False)
    pinned: Mapping[str, str] = field(default_factory=dict)  # setting -> digest; {}: none

    @property
    def shards(self) -> tuple[Part, ...]:
        return tuple(part for part in self.parts if part.is_shard)

    @property
    def config_path(self) -> Path:
        return self.folder / self.config

    def part(self, name: str) -> Part:
        """The part called `name` (`first`, `last` or a shard's number); else a usage error."""
        for part in self.parts:
            if part.name == name:
                return part
        names = ", ".join(part.name for part in self.parts)
        raise ManifestError(f"--part {name}: the manifest has no such part (its parts: {names})")

    def store_path(self, part: Part) -> Path:
        return (self.folder / Path(part.store).expanduser()).resolve()

    def as_json(self) -> dict[str, Any]:
        return {
            "haul_manifest": FORMAT,
            "config": self.config,
            "shards": len(self.shards),
            "store_template": self.store_template,
            "pinned": dict(sorted(self.pinned.items())),
            "parts": [part.as_json() for part in self.parts],
        }


def write_manifest(manifest: Manifest, path: Path) -> None:
    """Write `manifest` at `path` (atomically: a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(manifest.as_json(), indent=2, sort_keys=False) + "\n"
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def read_manifest(path: Path) -> Manifest:
    """The manifest at `path`; a ManifestError naming what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"--manifest: cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ManifestError(f"--manifest: {path} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("haul_manifest") != FORMAT:
        raise ManifestError(
            f"--manifest: {path} is not a haul shard manifest (format {FORMAT}): "
            "write one with haul plan --shards N --manifest FILE"
        )
    try:
        parts = tuple(Part.from_json(part) for part in data["parts"])
        manifest = Manifest(
            config=str(data["config"]),
            parts=parts,
            store_template=str(data.get("store_template") or DEFAULT_STORE_TEMPLATE),
            folder=path.parent.resolve(),
            pinned={str(key): str(digest) for key, digest in (data.get("pinned") or {}).items()},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ManifestError(f"--manifest: {path} lacks or mistypes {exc}") from exc
    _check_parts(manifest, path)
    return manifest


def _check_parts(manifest: Manifest, path: Path) -> None:
    names = [part.name for part in manifest.parts]
    if len(set(names)) != len(names) or FIRST not in names or LAST not in names:
        raise ManifestError(f"--manifest: {path} must name each part once, first and last too")
    for part in manifest.parts:
        unknown = set(part.needs) - set(names)
        if unknown:
            raise ManifestError(f"--manifest: part {part.name} needs unknown {sorted(unknown)}")
    check_stores(manifest)


def store_for(template: str, part: str) -> str:
    """The store path of `part` from the template (`stores/{part}/haul.db`)."""
    if "{part}" not in template:
        raise ManifestError(
            f"--stores {template!r}: put {{part}} in the template, so each part has its own store"
        )
    return template.replace("{part}", part)


def check_stores(manifest: Manifest) -> None:
    """Each part's store inside the manifest's folder and a file of its own; else a
    ManifestError naming the part (a template that escapes or folds parts together)."""
    template = manifest.store_template
    owners: dict[Path, str] = {}
    for part in manifest.parts:
        written = os.path.normpath(manifest.folder / Path(part.store).expanduser())
        if not Path(written).is_relative_to(manifest.folder):
            raise ManifestError(
                f"--stores {template!r}: part {part.name}'s store {written} is outside the "
                f"manifest's folder {manifest.folder}: plan with a template that stays inside "
                f"it (e.g. {DEFAULT_STORE_TEMPLATE}; mount another disk inside it if need be)"
            )
        path = manifest.store_path(part)
        if path in owners:
            raise ManifestError(
                f"--stores {template!r}: parts {owners[path]} and {part.name} would share the "
                f"store {path}: plan with a template whose {{part}} names a file of its own "
                f"(e.g. {DEFAULT_STORE_TEMPLATE})"
            )
        owners[path] = part.name


def pin(config: Config) -> dict[str, str]:
    """The digest of each setting that decides where records go (`Config.routing_settings`)."""
    return {key: _digest(value) for key, value in config.routing_settings().items()}


def check_pinned(manifest: Manifest, config: Config) -> None:
    """A ManifestError naming each pinned setting `config` has changed since the plan (a
    manifest written before settings were pinned pins none)."""
    now = pin(config)
    changed = [key for key, digest in sorted(manifest.pinned.items()) if now.get(key) != digest]
    if changed:
        raise ManifestError(
            f"{manifest.config_path} changed since the manifest was planned: "
            f"{', '.join(changed)} (settings that decide where records go); nothing was run: "
            "set them back, or plan a new manifest (haul plan --shards N) with new stores"
        )


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
