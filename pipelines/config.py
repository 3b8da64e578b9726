"""The one TOML configuration file, read into frozen dataclasses.

Every problem is a `ConfigError` that names the key and says what is wrong; the CLI turns it
into exit status 2. Tokens are never in the file: it names the environment variables that hold
them (`token_env`), and `Endpoint.token()` reads them only when a client is built.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haul.connectors.errors import HaulError


class ConfigError(HaulError):
    """The configuration cannot be used: `key` names where, the message says why (exit 2)."""

    exit_code = 2

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"config error: {key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class Endpoint:
    """One organisation on one tracker: where it is and how to authenticate."""

    section: str
    tracker_url: str
    token_env: str
    org_id: str | None = None
    cloud_org_id: str | None = None
    auth_scheme: str = "OAuth"
    read_rps: float = 200.0
    write_rps: float = 100.0

    def token(self, environ: Mapping[str, str] = os.environ) -> str:
        """The token from the environment; a missing variable is a config error naming it."""
        value = environ.get(self.token_env, "").strip()
        if not value:
            raise ConfigError(
                f"{self.section}.token_env",
                f"environment variable {self.token_env} is not set or empty",
            )
        return value

    @property
    def org(self) -> str:
        return self.org_id or self.cloud_org_id or ""


@dataclass(frozen=True)
class Scope:
    queues: tuple[str, ...]
    query: str | None = None


@dataclass(frozen=True)
class Remapping:
    queues: dict[str, str] = field(default_factory=dict)
    users_file: Path | None = None
    default_user: str | None = None


@dataclass(frozen=True)
class Tuning:
    concurrency: int = 16
    per_scroll: int = 500
    lookback_minutes: float = 10.0
    scroll_ttl_ms: int = 300_000


@dataclass(frozen=True)
class Config:
    source: Endpoint
    target: Endpoint
    scope: Scope
    mapping: Remapping
    staging_path: Path
    tuning: Tuning = field(default_factory=Tuning)

    @property
    def log_path(self) -> Path:
        return self.staging_path.with_suffix(".log")


def load_config(path: str | Path) -> Config:
    """Read and validate the file at `path`; relative paths in it are relative to its folder."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("--config", f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            "--config",
            f"{path} is not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}): "
            "save it as UTF-8",
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--config", f"{path} is not valid TOML: {exc}") from exc
    return parse_config(data, base_dir=path.parent)


def parse_config(data: dict[str, Any], *, base_dir: Path) -> Config:
    known = {"source", "target", "scope", "mapping", "staging", "tuning"}
    _reject_unknown("", data, known)
    return Config(
        source=_endpoint("source", _section(data, "source")),
        target=_endpoint("target", _section(data, "target")),
        scope=_scope(_section(data, "scope")),
        mapping=_mapping(data.get("mapping", {}), base_dir),
        staging_path=_staging(_section(data, "staging"), base_dir),
        tuning=_tuning(data.get("tuning", {})),
    )


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    if name not in data:
        raise ConfigError(name, f"missing section [{name}]")
    value = data[name]
    if not isinstance(value, dict):
        raise ConfigError(name, f"[{name}] must be a table")
    return value


def _reject_unknown(prefix: str, table: dict[str, Any], known: set[str]) -> None:
    for key in table:
        if key not in known:
            where = f"{prefix}.{key}" if prefix else key
            raise ConfigError(where, f"unknown key (expected one of: {', '.join(sorted(known))})")


def _str(table: dict[str, Any], section: str, key: str, *, required: bool) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise ConfigError(f"{section}.{key}", "is required")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{section}.{key}", "must be a non-empty string")
    return value.strip()


def _number(table: dict[str, Any], section: str, key: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{section}.{key}", "must be a positive number")
    return float(value)


def _endpoint(section: str, table: dict[str, Any]) -> Endpoint:
    known = {"tracker_url", "org_id", "cloud_org_id", "token_env", "auth_scheme"}
    _reject_unknown(section, table, known | {"read_rps", "write_rps"})
    url = _str(table, section, "tracker_url", required=True) or ""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{section}.tracker_url", "must be an http(s) URL")
    if not url.rstrip("/").endswith("/v3"):
        raise ConfigError(f"{section}.tracker_url", "must end in /v3 (the API version)")
    org_id = _str(table, section, "org_id", required=False)
    cloud_org_id = _str(table, section, "cloud_org_id", required=False)
    if (org_id is None) == (cloud_org_id is None):
        raise ConfigError(f"{section}.org_id", "give exactly one of org_id or cloud_org_id")
    scheme = _str(table, section, "auth_scheme", required=False) or "OAuth"
    if scheme not in ("OAuth", "Bearer"):
        raise ConfigError(f"{section}.auth_scheme", "must be OAuth or Bearer")
    return Endpoint(
        section=section,
        tracker_url=url.rstrip("/"),
        token_env=_str(table, section, "token_env", required=True) or "",
        org_id=org_id,
        cloud_org_id=cloud_org_id,
        auth_scheme=scheme,
        read_rps=_number(table, section, "read_rps", 200.0),
        write_rps=_number(table, section, "write_rps", 100.0),
    )


def _scope(table: dict[str, Any]) -> Scope:
    _reject_unknown("scope", table, {"queues", "query"})
    queues = table.get("queues")
    if not isinstance(queues, list) or not queues:
        raise ConfigError("scope.queues", "must be a non-empty list of queue keys")
    if not all(isinstance(q, str) and q.strip() for q in queues):
        raise ConfigError("scope.queues", "every queue must be a non-empty string")
    return Scope(
        queues=tuple(q.strip() for q in queues), query=_str(table, "scope", "query", required=False)
    )


def _mapping(table: Any, base_dir: Path) -> Remapping:
    if not isinstance(table, dict):
        raise ConfigError("mapping", "[mapping] must be a table")
    _reject_unknown("mapping", table, {"queues", "users_file", "default_user"})
    queues = table.get("queues", {})
    if not isinstance(queues, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in queues.items()
    ):
        raise ConfigError("mapping.queues", 'must be a table of queue keys, e.g. { TEST = "NEW" }')
    users_file = _str(table, "mapping", "users_file", required=False)
    users_path = (base_dir / users_file) if users_file else None
    if users_path is not None and not users_path.is_file():
        raise ConfigError("mapping.users_file", f"{users_path} does not exist")
    return Remapping(
        queues={k: v.strip() for k, v in queues.items()},
        users_file=users_path,
        default_user=_str(table, "mapping", "default_user", required=False),
    )


def _staging(table: dict[str, Any], base_dir: Path) -> Path:
    _reject_unknown("staging", table, {"path"})
    path = _str(table, "staging", "path", required=True) or ""
    return (base_dir / path).resolve()


def _tuning(table: Any) -> Tuning:
    if not isinstance(table, dict):
        raise ConfigError("tuning", "[tuning] must be a table")
    defaults = Tuning()
    _reject_unknown(
        "tuning", table, {"concurrency", "per_scroll", "lookback_minutes", "scroll_ttl_ms"}
    )
    per_scroll = int(_number(table, "tuning", "per_scroll", defaults.per_scroll))
    if per_scroll > 1000:
        raise ConfigError("tuning.per_scroll", "must be at most 1000 (the service's limit)")
    lookback = table.get("lookback_minutes", defaults.lookback_minutes)
    if isinstance(lookback, bool) or not isinstance(lookback, int | float) or lookback < 0:
        raise ConfigError("tuning.lookback_minutes", "must be a number >= 0")
    return Tuning(
        concurrency=int(_number(table, "tuning", "concurrency", defaults.concurrency)),
        per_scroll=per_scroll,
        lookback_minutes=float(lookback),
        scroll_ttl_ms=int(_number(table, "tuning", "scroll_ttl_ms", defaults.scroll_ttl_ms)),
    )
