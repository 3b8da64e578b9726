"""Fault injection and request counting, as one pure ASGI middleware in front of a service.

A fault spec is a comma-separated list of ``KIND:ARGS[@GLOB]`` items; GLOB is an fnmatch
pattern on the request path (no GLOB: every path):

- ``latency:MS[+JITTER]``   wait MS plus uniform(0, JITTER) milliseconds
- ``429:RATE[:SECONDS]``    answer 429 with ``Retry-After: SECONDS`` (default 1)
- ``420:RATE[:SECONDS]``    the same with 420, as sister APIs of the same vendor throttle
- ``5xx:RATE``              answer 503
- ``refuse:RATE``           answer a write (not a read) 422, as a validation failure, applying
                            nothing (a target that refuses one record's write)
- ``drop_before:RATE``      abort the connection without replying; the request is NOT applied
- ``drop_after:RATE``       apply the request, then abort the connection without replying
- ``slow_after:RATE:MS``    apply the request, then hold its reply MS milliseconds (a reply
                            slower than the client's timeout: the write was applied)
- ``html:RATE``             answer 200 with an HTML page (a proxy's login page, say)
- ``html_delete:RATE``      answer a DELETE (only) 200 with an HTML page, deleting nothing
                            (a gateway whose sign-in session expired)
- ``error_object:RATE``     answer 200 with the tracker's error object (where a list belongs)
- ``short_body:RATE``       reply with the first half of the body, Content-Length to match
- ``cut_body:RATE``         send the first half of the body under the full Content-Length,
                            then abort the connection (a download broken off mid-stream)
- ``dribble:RATE[:MS]``     send the reply's body one byte every MS milliseconds (default
                            100): a reply that never stalls long enough for a read timeout,
                            yet takes far longer than any request should
- ``no_key:RATE``           the first object of a JSON list reply comes without its ``key``
                            (a search index lagging behind its store)
- ``links_missed:RATE``      the search's ``"Have Links To Queue"`` misses this share of the
                            issues it should match (a search index lagging behind its store);
                            which ones is a pure function of the issue key, not a dice roll
- ``worklog_cap:N``         ``POST /worklog/_search`` answers at most N records (the service's
                            cap is 10 000), so a test can make a client split its windows
- ``v3_only:macros``        macros take their field changes in the v3 form alone
                            (``issueUpdate``); the v2 ``fieldChanges`` is a 422 (a service
                            that follows its v3 reference; see ``tracker.planning.macro_forms``)
- ``hold:NAME[:reads|:writes]``
                            hold the request (only a read, or only a write, when told),
                            unanswered and not applied, until the test
                            releases the hold (``RunningSandbox.release(NAME)``, or ``POST
                            /_sandbox/holds/NAME/release``); then it goes
                            on as any other (its other faults too), as do those that come
                            after. Replacing the spec releases every hold. A test holds a run
                            at a point of its choosing this way, without racing it
- ``ratelimit:RPS[:reads|:writes][:bare][:420][:per=org|:per=token]``
                            a real limit: a token bucket of RPS requests per second (a fifth
                            of a second of burst) for each service and each org (``per=org``,
                            the default) or each token (``per=token``: the Authorization
                            header, whatever org it names), of its reads or its writes only
                            when told; beyond it, 429 with ``Retry-After``
                            and ``RateLimit-Limit``, ``RateLimit-Remaining: 0``,
                            ``RateLimit-Reset`` (whole seconds until a request is let through
                            again) and ``RateLimit-Policy: RPS;w=1`` (the IETF draft's form,
                            which the replies it lets through carry too, as the draft has a
                            server send it on any reply), or ``Retry-After`` alone (and no
                            policy anywhere) when ``bare``; 420 instead of 429 when
                            ``420`` (not a dice roll: RATE is not used)

A read is a GET, HEAD or OPTIONS, or a POST that only asks (a path ending in ``/_search``,
``/_count``, ``/_findByUnique``, or a scroll's ``/_clear``); anything else is a write. Each
ratelimit item has buckets of its own, so ``ratelimit:40:reads,ratelimit:10:writes`` limits
both directions apart.

RATE is a probability in [0, 1]; the dice come from an RNG seeded with the sandbox seed.
Paths under ``/_sandbox/`` are never faulted nor counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_ITEM = re.compile(r"^(?P<kind>[a-z_0-9]+):(?P<args>[^@]+)(?:@(?P<glob>.+))?$")
_KINDS = (
    "latency",
    "429",
    "420",
    "5xx",
    "refuse",
    "drop_before",
    "drop_after",
    "slow_after",
    "html",
    "html_delete",
    "error_object",
    "short_body",
    "cut_body",
    "dribble",
    "no_key",
    "ratelimit",
    "links_missed",
    "worklog_cap",
    "hold",
    "v3_only",
)
SERVED = ("links_missed", "worklog_cap", "v3_only")  # read by the routes themselves, never rolled
CONTROL_PREFIX = "/_sandbox/"
THROTTLES = ("429", "420")  # the statuses that ask a client to slow down


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str
    rate: float = 1.0
    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    retry_after: int = 1
    rps: float = 0.0
    direction: str | None = None  # "reads" or "writes": the requests a ratelimit counts
    per: str = "org"  # what a ratelimit's buckets are kept for: each "org" or each "token"
    headers: bool = True  # a ratelimit's 429 says RateLimit-*
    throttle: str = "429"  # what a ratelimit answers beyond its limit: "429" or "420"
    byte_ms: float = 100.0  # a dribble's pause between two bytes
    gate: str = ""  # a hold's name
    route: str = ""  # the routes a v3_only holds to their v3 form
    glob: str | None = None

    def applies_to(self, path: str) -> bool:
        return self.glob is None or fnmatch.fnmatchcase(path, self.glob)

    def counts(self, method: str, path: str) -> bool:
        """Whether a ratelimit counts this request: its path, and its direction if told."""
        if not self.applies_to(path):
            return False
        return self.direction is None or (self.direction == "reads") == is_read(method, path)


_QUERIES = ("/_search", "/_count", "/_findByUnique", "/_clear")


def is_read(method: str, path: str) -> bool:
    """GET/HEAD/OPTIONS, or a POST that only asks (see the module docstring)."""
    method = method.upper()
    return method in ("GET", "HEAD", "OPTIONS") or (method == "POST" and path.endswith(_QUERIES))


def parse_faults(spec: str) -> tuple[Fault, ...]:
    """Parse a fault spec; ValueError naming the bad item otherwise."""
    return tuple(_parse_item(item.strip()) for item in spec.split(",") if item.strip())


def _parse_item(item: str) -> Fault:
    match = _ITEM.match(item)
    if not match or match["kind"] not in _KINDS:
        raise ValueError(f"bad fault {item!r}: expected KIND:ARGS[@GLOB], KIND one of {_KINDS}")
    kind, args, glob = match["kind"], match["args"], match["glob"]
    try:
        if kind == "latency":
            base, _, jitter = args.partition("+")
            return Fault(kind, latency_ms=float(base), jitter_ms=float(jitter or 0), glob=glob)
        if kind in THROTTLES:
            rate, _, seconds = args.partition(":")
            return Fault(kind, rate=_rate(rate), retry_after=int(seconds or 1), glob=glob)
        if kind == "slow_after":
            rate, _, hold = args.partition(":")
            return Fault(kind, rate=_rate(rate), latency_ms=float(hold), glob=glob)
        if kind == "ratelimit":
            return _ratelimit(args, glob)
        if kind == "hold":
            return _hold(args, glob)
        if kind == "v3_only":
            if args != "macros":
                raise ValueError("expected v3_only:macros")
            return Fault(kind, route=args, glob=glob)
        if kind == "worklog_cap":
            return Fault(kind, rps=float(int(args)), glob=glob)
        if kind == "dribble":
            rate, _, pause = args.partition(":")
            return Fault(kind, rate=_rate(rate), byte_ms=float(pause or 100), glob=glob)
        return Fault(kind, rate=_rate(args), glob=glob)
    except ValueError as error:
        raise ValueError(f"bad fault {item!r}: {error}") from None


def _ratelimit(args: str, glob: str | None) -> Fault:
    rps, *options = args.split(":")
    if float(rps) <= 0:
        raise ValueError("requests per second must be positive")
    unknown = set(options) - {"reads", "writes", "bare", "420", "per=org", "per=token"}
    directions = [option for option in options if option in ("reads", "writes")]
    pers = [option.removeprefix("per=") for option in options if option.startswith("per=")]
    if unknown or len(directions) > 1 or len(pers) > 1 or len(set(options)) < len(options):
        raise ValueError("expected ratelimit:RPS[:reads|:writes][:bare][:420][:per=org|:per=token]")
    return Fault(
        "ratelimit",
        rps=float(rps),
        direction=directions[0] if directions else None,
        per=pers[0] if pers else "org",
        headers="bare" not in options,
        throttle="420" if "420" in options else "429",
        glob=glob,
    )


def _hold(args: str, glob: str | None) -> Fault:
    name, _, direction = args.partition(":")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name) or direction not in ("", "reads", "writes"):
        raise ValueError("expected hold:NAME[:reads|:writes], NAME of letters, digits, _ and -")
    return Fault("hold", gate=name, glob=glob, direction=direction or None)


def _rate(text: str) -> float:
    rate = float(text)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate {text} is not within [0, 1]")
    return rate


def combine_spec(latency_ms: float, faults: str) -> str:
    """``--latency-ms X`` is shorthand for a leading ``latency:X`` item."""
    items = [f"latency:{latency_ms:g}"] if latency_ms else []
    return ",".join([*items, *([faults] if faults.strip() else [])])


@dataclass(frozen=True, slots=True)
class Decision:
    delay_s: float = 0.0
    action: str | None = None  # one of the non-latency kinds
    retry_after: int = 1
    headers: tuple[tuple[bytes, bytes], ...] = ()  # more headers: a 429's, or a limit's policy
    hold_s: float = 0.0  # slow_after: how long the reply waits once the request is applied
    byte_ms: float = 0.0  # a dribble's pause between two bytes
    gate: Gate | None = None  # a hold the request waits at first


class Gate:
    """Where held requests wait (on the server's loop) until a test releases them (from any
    thread); once released, it holds nothing more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._released = False
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.held = 0  # requests held so far, released or not

    async def passed(self) -> None:
        """Returns once the gate is released (at once if it is)."""
        event = asyncio.Event()
        with self._lock:
            if self._released:
                return
            self.held += 1
            self._waiting.append((asyncio.get_running_loop(), event))
        await event.wait()

    def release(self) -> None:
        with self._lock:
            self._released = True
            waiting, self._waiting = self._waiting, []
        for loop, event in waiting:
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(event.set)


class FaultPlan:
    """The current faults (replaceable at runtime from any thread) and their dice."""

    def __init__(self, spec: str = "", *, seed: int = 1) -> None:
        self._rng = random.Random(f"faults:{seed}")
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str, int], TokenBucket] = {}
        self._gates: dict[str, Gate] = {}
        self.spec = ""
        self._faults: tuple[Fault, ...] = ()
        self.set(spec)

    def set(self, spec: str) -> None:
        """Replace every fault, releasing every hold; ValueError (and no change) if the spec
        is malformed."""
        faults = parse_faults(spec)
        gates = {fault.gate: Gate() for fault in faults if fault.kind == "hold"}
        with self._lock:
            self.spec, self._faults = spec, faults
            self._buckets.clear()
            gates, self._gates = self._gates, gates
        for gate in gates.values():
            gate.release()

    def release(self, name: str) -> int:
        """Let the requests the hold `name` keeps go on, and those after them; how many it
        held. ValueError if the spec has no such hold."""
        gate = self._gate(name)
        gate.release()
        return gate.held

    def held(self, name: str) -> int:
        """How many requests the hold `name` has held so far (released or not)."""
        return self._gate(name).held

    def _gate(self, name: str) -> Gate:
        with self._lock:
            gate = self._gates.get(name)
        if gate is None:
            raise ValueError(f"no hold:{name} in the fault spec {self.spec!r}")
        return gate

    def decide(
        self, path: str, org: str = "", *, method: str = "GET", host: str = "", token: str = ""
    ) -> Decision:
        """What to do with one request to `host` (a service: each has its own port) for
        `org` with `token`: the ratelimits count it in their buckets first, then the dice."""
        with self._lock:
            announced: list[tuple[bytes, bytes]] = []  # the policies of the limits passed
            for index, fault in enumerate(self._faults):  # an item's place names its buckets
                if fault.kind != "ratelimit" or not fault.counts(method, path):
                    continue
                holder = f"token {token}" if fault.per == "token" else f"org {org}"
                bucket = self._bucket((host, holder, index), fault)
                if not bucket.take():
                    return _limited(fault, bucket.wait())
                if fault.headers:
                    announced.append(_policy(fault))
            faults = [fault for fault in self._faults if fault.applies_to(path)]
            hold = next((f for f in faults if f.kind == "hold" and f.counts(method, path)), None)
            gate = self._gates.get(hold.gate) if hold else None
            delay_ms = sum(
                f.latency_ms + self._rng.uniform(0, f.jitter_ms)
                for f in faults
                if f.kind == "latency"
            )
            hits = [
                f
                for f in faults
                if f.kind not in ("latency", "ratelimit", "hold", *SERVED)
                and (f.kind != "refuse" or not is_read(method, path))
                and (f.kind != "html_delete" or method.upper() == "DELETE")
                and self._rng.random() < f.rate
            ]
        first = hits[0] if hits else None
        if first is None:
            return Decision(delay_ms / 1000, gate=gate, headers=tuple(announced))
        hold_s = first.latency_ms / 1000 if first.kind == "slow_after" else 0.0
        return Decision(
            delay_ms / 1000,
            first.kind,
            first.retry_after,
            hold_s=hold_s,
            byte_ms=first.byte_ms,
            gate=gate,
        )

    def served(self, kind: str) -> Fault | None:
        """The first item of a kind the routes read themselves (`SERVED`), or None."""
        with self._lock:
            return next((fault for fault in self._faults if fault.kind == kind), None)

    def _bucket(self, key: tuple[str, str, int], fault: Fault) -> TokenBucket:
        if key not in self._buckets:
            self._buckets[key] = TokenBucket(fault.rps)
        return self._buckets[key]


def _limited(fault: Fault, wait: float) -> Decision:
    """A ratelimit's 429 (or 420): Retry-After and RateLimit-Reset in whole seconds, rounded up."""
    seconds = max(1, math.ceil(wait))
    if not fault.headers:
        return Decision(0.0, fault.throttle, seconds)
    headers = (
        (b"ratelimit-limit", f"{fault.rps:g}".encode()),
        (b"ratelimit-remaining", b"0"),
        (b"ratelimit-reset", str(seconds).encode()),
        _policy(fault),
    )
    return Decision(0.0, fault.throttle, seconds, headers)


def _policy(fault: Fault) -> tuple[bytes, bytes]:
    """The limit as the IETF draft states it, on every reply the limit counts."""
    return (b"ratelimit-policy", f"{fault.rps:g};w=1".encode())


class TokenBucket:
    """``rps`` tokens a second, holding at most a fifth of a second's worth (and one)."""

    def __init__(self, rps: float) -> None:
        self.rps = rps
        self.capacity = max(1.0, rps / 5)
        self.tokens = self.capacity
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rps)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def wait(self) -> float:
        """Seconds until the bucket holds a token again."""
        return max(0.0, (1.0 - self.tokens) / self.rps)


class RequestStats:
    """Requests served, in total and per ``"METHOD /route/{template}"``; thread-safe reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_route: Counter[str] = Counter()
        self._notified: Counter[str] = Counter()

    def record(self, route: str) -> None:
        with self._lock:
            self._by_route[route] += 1

    def record_notified(self, route: str) -> None:
        """A write sent with notifications on (the tracker's `notifications.notifies`)."""
        with self._lock:
            self._notified[route] += 1

    def notified(self) -> dict:
        """``{"writes": total, "by_route": {"PATCH /v3/issues/{key}": n, ...}}``: the writes
        sent with notifications on."""
        with self._lock:
            by_route = dict(self._notified)
        return {"writes": sum(by_route.values()), "by_route": by_route}

    def snapshot(self) -> dict:
        with self._lock:
            by_route = dict(self._by_route)
        return {"requests": sum(by_route.values()), "by_route": by_route}


def route_name(routes: list[BaseRoute], scope: Scope) -> str:
    """``"POST /v3/issues/{key}/comments/_import"``; the raw path when no route matches."""
    probe = {**scope, "path_params": {}}
    for route in routes:
        match, _ = route.matches(probe)
        if match is Match.FULL:
            return f"{scope['method']} {getattr(route, 'path', scope['path'])}"
    return f"{scope['method']} {scope['path']}"


class FaultMiddleware:
    """Counts every request, then applies the fault plan's decision for its path."""

    def __init__(
        self, app: ASGIApp, plan: FaultPlan, stats: RequestStats, routes: Callable[[], list]
    ) -> None:
        self.app = app
        self.plan = plan
        self.stats = stats
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(CONTROL_PREFIX):
            await self.app(scope, receive, send)
            return
        self.stats.record(route_name(self.routes(), scope))
        decision = self.plan.decide(
            scope["path"],
            _org_of(scope),
            method=scope["method"],
            host=_host_of(scope),
            token=_token_of(scope),
        )
        if decision.gate is not None:
            await decision.gate.passed()
        if decision.delay_s:
            await asyncio.sleep(decision.delay_s)
        if decision.action == "drop_before":
            await drop_connection(send)
        elif decision.action in (*THROTTLES, "5xx", "refuse"):
            await _refuse(send, decision)
        elif decision.action == "drop_after":
            await self.app(scope, receive, _discard)
            await drop_connection(send)
        elif decision.action == "slow_after":
            await _held(self.app, scope, receive, send, decision.hold_s)
        elif decision.action in ("html", "error_object"):
            await _wrong_body(send, decision.action)
        elif decision.action == "html_delete":
            await _wrong_body(send, "html")
        elif decision.action in ("short_body", "cut_body"):
            await _halved(self.app, scope, receive, send, cut=decision.action == "cut_body")
        elif decision.action == "dribble":
            await _dribbled(self.app, scope, receive, send, decision.byte_ms / 1000)
        elif decision.action == "no_key":
            await _first_without_key(self.app, scope, receive, send)
        else:
            await self.app(scope, receive, _with_headers(send, decision.headers))


def _with_headers(send: Send, extra: tuple[tuple[bytes, bytes], ...]) -> Send:
    """`send`, adding `extra` to the reply's headers (a limit's policy, on the replies it
    let through)."""
    if not extra:
        return send

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


def _org_of(scope: Scope) -> str:
    """The org a request speaks for (any of the org headers), for per-org limits."""
    for name, value in scope.get("headers", []):
        if name.lower() in (b"x-org-id", b"x-cloud-org-id"):
            return str(value.decode("latin-1"))
    return ""


def _token_of(scope: Scope) -> str:
    """The credentials a request carries (its Authorization header), for per-token limits."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            return str(value.decode("latin-1")).strip()
    return ""


def _host_of(scope: Scope) -> str:
    """The service a request reached: each listens on a port of its own, as each real
    service is a host of its own with limits of its own."""
    server = scope.get("server")
    return f"{server[0]}:{server[1]}" if server else ""


async def _discard(message: Message) -> None:
    """Swallow the reply of a request whose connection is about to be dropped."""


async def _held(app: ASGIApp, scope: Scope, receive: Receive, send: Send, hold_s: float) -> None:
    """Apply the request at once, then send its reply `hold_s` seconds later."""
    messages: list[Message] = []

    async def keep(message: Message) -> None:
        messages.append(message)

    await app(scope, receive, keep)
    await asyncio.sleep(hold_s)
    for message in messages:
        await send(message)


async def _refuse(send: Send, decision: Decision) -> None:
    throttled = decision.action in THROTTLES
    if throttled and decision.action:
        status, message = int(decision.action), "Too many requests"
    elif decision.action == "refuse":
        status, message = 422, "Validation failed (a refusal the sandbox was told to make)"
    else:
        status, message = 503, "Service temporarily unavailable"
    body = json.dumps({"errors": {}, "errorMessages": [message], "statusCode": status}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if throttled:
        headers.append((b"retry-after", str(decision.retry_after).encode()))
        headers.extend(decision.headers)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _wrong_body(send: Send, kind: str) -> None:
    if kind == "html":
        body, content_type = b"<html><body><h1>Please log in</h1></body></html>", b"text/html"
    else:
        error = {"errors": {}, "errorMessages": ["Internal error"], "statusCode": 500}
        body, content_type = json.dumps(error).encode(), b"application/json"
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _reply_of(app: ASGIApp, scope: Scope, receive: Receive) -> tuple[Message, bytes]:
    """Run the request; its reply's start message and whole body, unsent."""
    start: Message = {}
    chunks: list[bytes] = []

    async def keep(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, keep)
    return start, b"".join(chunks)


async def _dribbled(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, pause_s: float
) -> None:
    """Run the request, then send its body one byte at a time, `pause_s` apart, until the
    client hangs up (a client that gave up is not dribbled at for hours)."""
    start, body = await _reply_of(app, scope, receive)
    gone = asyncio.create_task(_hung_up(receive))
    try:
        await send(start)
        for index in range(len(body)):
            if gone.done():
                return
            piece = body[index : index + 1]
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await asyncio.sleep(pause_s)
        await send({"type": "http.response.body", "body": b""})
    finally:
        gone.cancel()


async def _hung_up(receive: Receive) -> None:
    """Returns once the client has disconnected (the request's body is read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _first_without_key(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run the request; a JSON list reply's first object loses its ``key``."""
    start, body = await _reply_of(app, scope, receive)
    try:
        items = json.loads(body) if body else None
    except ValueError:
        items = None
    if isinstance(items, list) and items and isinstance(items[0], dict):
        items[0].pop("key", None)
        body = json.dumps(items).encode()
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _halved(app: ASGIApp, scope: Scope, receive: Receive, send: Send, *, cut: bool) -> None:
    """Run the request, then send only the first half of its body (see the docstring)."""
    start, body = await _reply_of(app, scope, receive)
    half = body[: len(body) // 2]
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    announced = len(body) if cut else len(half)
    headers.append((b"content-length", str(announced).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": half, "more_body": cut})
    if cut:
        await drop_connection(send)


async def drop_connection(send: Send) -> None:
    """Abort the TCP connection under this request without a reply.

    uvicorn's ``send`` is a bound method of its request cycle, which holds the transport.
    After the abort we yield once so uvicorn sees the connection lost and does not try to
    write its own 500 reply into the dead socket.
    """
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise RuntimeError("this server does not expose the connection; cannot drop it")
    transport.abort()
    await asyncio.sleep(0)
