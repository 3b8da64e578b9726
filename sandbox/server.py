"""Run the sandbox: uvicorn in a background thread with its own event loop, on loopback.

Each service is one Starlette app at the root of its own port (the tracker at /v3, the wiki and
forms each at /v1), all served by one event loop.  ``start_sandbox`` returns once every port listens;
``serve`` is the blocking command-line form that prints one JSON line describing the sandbox.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
import socket
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import uvicorn

from haul.sandbox.faults import FaultPlan, RequestStats, combine_spec
from haul.sandbox.forms.app import build_forms_app
from haul.sandbox.forms.seed import survey_ids_for
from haul.sandbox.groups import ALL_STAFF_NAMES
from haul.sandbox.tracker.app import build_tracker_app
from haul.sandbox.tracker.model import Limits
from haul.sandbox.tracker.seed.generate import build_world
from haul.sandbox.web import web_urls
from haul.sandbox.wiki.app import build_wiki_app
from haul.sandbox.wiki.seed import roots_for
from haul.sandbox.world import World

AppBuilder = Callable[[World, FaultPlan, RequestStats], object]

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
ROLES = ("source", "target", "empty")


class RunningSandbox:
    """A started sandbox; ``info`` is the JSON line ``haul sandbox serve`` prints."""

    def __init__(
        self,
        info: dict,
        faults: FaultPlan,
        stats: RequestStats,
        servers: list[uvicorn.Server],
        thread: threading.Thread,
        world: World,
    ) -> None:
        self.info = info
        self._world = world
        self._faults = faults
        self._stats = stats
        self._servers = servers
        self._thread = thread

    def set_faults(self, spec: str) -> None:
        """Replace the fault spec at runtime (releasing every hold); ValueError if it is
        malformed."""
        self._faults.set(spec)

    def release(self, hold: str) -> None:
        """Let the requests the fault ``hold:NAME`` keeps go on, and those after them."""
        self._faults.release(hold)

    def held(self, hold: str) -> int:
        """How many requests the fault ``hold:NAME`` has held so far (released or not)."""
        return self._faults.held(hold)

    def set_limits(self, limits: Limits) -> None:
        """Serve these hard limits from now on, in every organisation's tracker."""
        for org in self._world.orgs.values():
            org.limits = limits

    def stats(self) -> dict:
        """``{"requests": total, "by_route": {"POST /v3/issues/_search": n, ...}}``."""
        return self._stats.snapshot()

    def notified(self) -> dict:
        """``{"writes": total, "by_route": {...}}``: the tracker's writes sent with
        notifications on (see ``sandbox.tracker.api.notifications``)."""
        return self._stats.notified()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop serving and wait for the server thread to finish."""
        self._faults.set("")  # a held request would keep its server from stopping
        for server in self._servers:
            server.should_exit = True
        self._thread.join(STOP_TIMEOUT_S)

    def __enter__(self) -> RunningSandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


# Each service: (name in the JSON line, its API root on its own port, the app builder).
# The wiki and forms join here as they land: (name, "/v1", build_..._app).
SERVICES: tuple[tuple[str, str, AppBuilder], ...] = (
    ("tracker", "/v3", build_tracker_app),
    ("wiki", "/v1", build_wiki_app),
    ("forms", "/v1", build_forms_app),
)


MORE_ADMIN_TOKENS = 3  # admin_2 to admin_4: a token for each of four processes


def start_sandbox(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int = 1,
    size: str = "tiny",
    latency_ms: float = 0.0,
    faults: str = "",
    languages: Mapping[str, str] | None = None,
) -> RunningSandbox:
    """Start uvicorn in a background thread (its own event loop); return once it is listening.

    `port` is the tracker's; every other service listens on a free port of its own.
    `languages` gives an organisation (by role) a language other than English: ``{"target":
    "ru"}``; ValueError for a role or a language the sandbox does not have.
    """
    world = build_world(
        seed, size, admin_token=secrets.token_urlsafe(24), user_token=secrets.token_urlsafe(24)
    )
    for role, language in (languages or {}).items():
        set_language(world, role, language)
    world.more_admin_tokens = tuple(secrets.token_urlsafe(24) for _ in range(MORE_ADMIN_TOKENS))
    plan = FaultPlan(combine_spec(latency_ms, faults), seed=seed)
    stats = RequestStats()
    bound = [
        (name, root, _server(build(world, plan, stats)), _listen(host, port if i == 0 else 0))
        for i, (name, root, build) in enumerate(SERVICES)
    ]
    servers = [(server, sock) for _, _, server, sock in bound]
    thread = threading.Thread(target=_run, args=(servers,), name="haul-sandbox", daemon=True)
    thread.start()
    _wait_started([server for server, _ in servers], thread)
    info: dict = {"tracker": None, "wiki": None, "forms": None}
    for name, root, _, sock in bound:
        info[name] = f"http://{host}:{sock.getsockname()[1]}{root}"
    info["orgs"] = {
        "source": world.org_by_role("source").id,
        "target": world.org_by_role("target").id,
        "empty": world.org_by_role("empty").id,
    }
    info["tokens"] = {"admin": world.admin_token, "user": world.user_token}
    for number, token in enumerate(world.more_admin_tokens, start=2):
        info["tokens"][f"admin_{number}"] = token
    # the web hosts each org's texts link to (`sandbox.web`): a config's tracker_web_url, ...
    info["web"] = {role: web_urls(org_id) for role, org_id in info["orgs"].items()}
    info["queues"] = {"source": sorted(world.org_by_role("source").queues)}
    info["wiki_roots"] = {"source": roots_for(size)}
    info["surveys"] = {"source": survey_ids_for(world)}
    world.info = info  # what `GET /_sandbox/info` tells
    return RunningSandbox(info, plan, stats, [server for server, _ in servers], thread, world)


def set_language(world: World, role: str, language: str) -> None:
    """Give the organisation of `role` the language `language` (see `start_sandbox`)."""
    if role not in ROLES or language not in ALL_STAFF_NAMES:
        raise ValueError(
            f"bad language {role}={language}: expected ROLE=LANG, ROLE one of {', '.join(ROLES)},"
            f" LANG one of {', '.join(ALL_STAFF_NAMES)}"
        )
    world.org_by_role(role).language = language


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int = 1,
    size: str = "tiny",
    latency_ms: float = 0.0,
    faults: str = "",
    languages: Mapping[str, str] | None = None,
) -> None:
    """Blocking: start, print ONE JSON line on stdout (flush), serve until SIGINT/SIGTERM."""
    sandbox = start_sandbox(
        host=host, port=port, seed=seed, size=size, latency_ms=latency_ms, faults=faults,
        languages=languages,
    )  # fmt: skip
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(json.dumps(sandbox.info), flush=True)
    try:
        while not stop.wait(0.5) and sandbox.is_alive():
            pass
    finally:
        sandbox.stop()


def _listen(host: str, port: int) -> socket.socket:
    """Bind and listen before serving, so the port is known and connections queue at once.

    The protocol must be named: asyncio sets TCP_NODELAY only on sockets whose proto is
    IPPROTO_TCP, and without it every reply waits ~40 ms for a delayed ACK.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(512)
    return sock


def _server(app: Any) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        http="h11",  # the drop faults reach the connection through h11's request cycle
        loop="asyncio",
        lifespan="off",
        ws="none",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config)


def _run(servers: list[tuple[uvicorn.Server, socket.socket]]) -> None:
    async def main() -> None:
        await asyncio.gather(*(server.serve(sockets=[sock]) for server, sock in servers))

    asyncio.run(main())


def _wait_started(servers: list[uvicorn.Server], thread: threading.Thread) -> None:
    waited = 0.0
    while not all(server.started for server in servers):
        if not thread.is_alive():
            raise RuntimeError("the sandbox server thread exited during start-up")
        if waited > START_TIMEOUT_S:
            raise TimeoutError("the sandbox did not start listening in time")
        thread.join(0.01)
        waited += 0.01
