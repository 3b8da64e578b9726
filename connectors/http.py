"""The async HTTP core every service client is built on.

One ``HttpCore`` per service and org: it sets the auth and org headers, joins paths onto
the versioned base URL, spends separate read and write rate budgets, retries what is safe
to retry (see ``retrying``), and turns every failure into one error of ``errors``.
A write that may have reached the server is never repeated: it raises AmbiguousWriteError.

First contact: until a service has answered once in this command (any reply, even an error
status), a failure to connect is not an outage to wait out but most likely a wrong host or
port: it is tried a few times within a few seconds only (`FIRST_CONTACT_*`, with a short
connect timeout), then raises UnreachableError naming the service and URL. `outage_patience`
applies once the service has answered.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar, Protocol, Self, TypeVar

import certifi
import httpx
import structlog
from tenacity import RetryCallState

from haul.connectors.budget import Budget, budget_for
from haul.connectors.decoding import decode_json, json_problem
from haul.connectors.errors import (
    AmbiguousWriteError,
    AuthError,
    BadReplyError,
    BodyMismatch,
    FatalError,
    HaulHTTPError,
    RateLimitedError,
    RedirectError,
    TransientError,
    UnexpectedReply,
    UnreachableError,
    describe_error_body,
    error_class_for_status,
)
from haul.connectors.retrying import (
    AFTER_SEND_ERRORS,
    CONNECT_STAGE_ERRORS,
    RETRY_STATUSES,
    Patience,
    RetryableBadReply,
    RetryableStatus,
    Stopwatch,
    is_throttle,
    parse_retry_after,
    retrying,
    waiting_aside,
)
from haul.connectors.server_clock import ServerClock
from haul.connectors.shared_budget import (
    LOCK_WAIT,
    SharedBudget,
    bucket_key,
    shared_budget_for,
)
from haul.connectors.transport import AiohttpTransport, env_proxy

log = structlog.get_logger("haul.connectors")

T = TypeVar("T")
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class Sink(Protocol):
    """Where a download's bytes go, chunk by chunk (a file, a blob writer)."""

    def write(self, data: bytes, /) -> int | None: ...


# what can break a body off once it has started: the transport's errors, and our deadline
BODY_ERRORS: tuple[type[Exception], ...] = (*AFTER_SEND_ERRORS, TimeoutError)


# before a service's first reply: how long connection failures are tried, and how long one
# connection may take (a host that drops packets would otherwise hold the first call 30 s)
FIRST_CONTACT_PATIENCE = 5.0
FIRST_CONTACT_ATTEMPTS = 3  # a host that drops packets costs a connect timeout per attempt
FIRST_CONTACT_CONNECT_TIMEOUT = 5.0
FIRST_CONTACT_ERRORS: tuple[type[Exception], ...] = (httpx.ConnectError, httpx.ConnectTimeout)

MAX_REDIRECTS = 10
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = f"haul/{version('haul-etl')}"


def is_write(method: str, write: bool | None = None) -> bool:
    """Whether a request changes the server, and so spends the write budget: explicit
    ``write``, else any method but GET/HEAD/OPTIONS."""
    return write if write is not None else method.upper() not in _READ_METHODS


def is_repeatable(writing: bool, repeatable: bool | None = None) -> bool:
    """Whether a request whose reply was lost may be sent again: explicit ``repeatable``
    (an idempotent write: a PATCH, a page's new text), else only what changes nothing."""
    return repeatable if repeatable is not None else not writing


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every pool: loading the CA bundle takes ~25 ms each time."""
    return ssl.create_default_context(cafile=certifi.where())


@dataclasses.dataclass(frozen=True)
class CoreOptions:
    """How a core talks to its service, beyond who it is (service, URL, token, org): the auth
    scheme, timeouts, retries and patience, the rate budgets and the connection pool."""

    auth_scheme: str = "OAuth"
    timeout: float = 30.0
    request_timeout: float = 120.0
    max_attempts: int | None = None
    max_backoff: float = 30.0
    rate_limit_patience: float = 900.0
    outage_patience: float = 300.0
    read_rate: float | str = "auto"
    write_rate: float | str = "auto"
    max_rate: float | None = None
    budget_share: int = 1
    shared_budget: str | Path | None = None
    shared_budget_wait: float = LOCK_WAIT
    max_connections: int = 32


OPTION_NAMES = frozenset(field.name for field in dataclasses.fields(CoreOptions))


class HttpCore:
    """Authenticated, rate-limited, retrying requests to one service for one org."""

    def __init__(
        self,
        *,
        service: str,
        base_url: str,
        token: str,
        org_id: str | None = None,
        cloud_org_id: str | None = None,
        options: CoreOptions = CoreOptions(),  # frozen: one shared default is safe
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if (org_id is None) == (cloud_org_id is None):
            raise ValueError("give exactly one of org_id and cloud_org_id")
        o = options
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.org_id = str(org_id if org_id is not None else cloud_org_id)
        self.requests_sent = 0
        self.retries = 0
        self.rate_limit_wait = 0.0  # seconds requests waited on throttles (429, 420)
        self.answered = False  # any reply in this command: see "First contact" above
        self.server_clock = ServerClock()  # the service's "now", from its replies' Date
        self._token = token
        self._max_attempts = o.max_attempts
        self._max_backoff = o.max_backoff
        self._patience = Patience(rate_limit=o.rate_limit_patience, outage=o.outage_patience)
        self._deadline = o.request_timeout
        self._sleep = sleep
        self._shared_budget_wait = o.shared_budget_wait
        # budgets wait in real time: the injected `sleep` is the retries' (tests skip it)
        self._read_budget = self._budget(
            o.read_rate, "read", o.max_rate, o.budget_share, o.shared_budget, token
        )
        self._write_budget = self._budget(
            o.write_rate, "write", o.max_rate, o.budget_share, o.shared_budget, token
        )
        # Queue here, not in httpcore: its pool rescans every waiting request against every
        # connection on each state change, which costs more CPU than the requests themselves.
        self._in_flight = asyncio.Semaphore(o.max_connections)
        org_header = "X-Org-ID" if org_id is not None else "X-Cloud-Org-ID"
        self._headers = httpx.Headers(
            {
                "Accept": "*/*",
                "Accept-Encoding": "gzip, deflate",
                "User-Agent": USER_AGENT,
                "Authorization": f"{o.auth_scheme} {token}",
                org_header: self.org_id,
            }
        )
        self._timeouts = httpx.Timeout(o.timeout).as_dict()
        self._first_timeouts = {
            **self._timeouts,
            "connect": min(o.timeout, FIRST_CONTACT_CONNECT_TIMEOUT),
        }
        # Requests go straight to the transport, not through httpx.AsyncClient: its cookie
        # jar, auth flow and URL merging cost more CPU per request than aiohttp's whole
        # exchange (bench/http_overhead.py). Redirects are followed here (see _send).
        self._transport = transport or AiohttpTransport(
            ssl_context=ssl_context(),
            max_connections=o.max_connections,
            proxy=env_proxy(self.base_url),
        )

    @classmethod
    def of(cls, **settings: Any) -> HttpCore:
        """A core from flat keyword settings: those of `CoreOptions` gathered into its options,
        the rest (service, base_url, token, org_id or cloud_org_id, transport, sleep) as given."""
        options = {name: settings.pop(name) for name in list(settings) if name in OPTION_NAMES}
        return cls(**settings, options=CoreOptions(**options))

    def __repr__(self) -> str:
        return f"HttpCore({self.service!r}, {self.base_url!r}, org={self.org_id!r})"

    def _budget(
        self,
        rate: float | str,
        direction: str,
        ceiling: float | None,
        share: int,
        shared: str | Path | None,
        token: str,
    ) -> Budget | SharedBudget:
        """This process's budget: its own, 1/`share` of the token's, or one shared with every
        process naming the `shared` file (see shared_budget)."""
        if shared is None:
            return budget_for(
                rate, service=self.service, direction=direction, ceiling=ceiling, share=share
            )
        key = bucket_key(
            service=self.service,
            direction=direction,
            base_url=self.base_url,
            org=self.org_id,
            token=token,
        )
        return shared_budget_for(
            shared,
            rate,
            key=key,
            service=self.service,
            direction=direction,
            ceiling=ceiling,
            lock_wait=self._shared_budget_wait,
        )

    def rate_history(self) -> dict[str, list[tuple[float, float]]]:
        """(clock time, requests per second) at each change of each budget."""
        return {"read": self._read_budget.history, "write": self._write_budget.history}

    def found_budgets(self) -> dict[str, dict[str, float]]:
        """direction -> what its "auto" budget found of the service (its rate, the limit it
        met or was told), for the next run against it to start from; none for a number."""
        budgets = {"read": self._read_budget, "write": self._write_budget}
        return {
            direction: found for direction, budget in budgets.items() if (found := budget.found())
        }

    def resume_budgets(self, found: Mapping[str, Mapping[str, float]]) -> None:
        """Start each budget where a run before left off (what `found_budgets` gave then)."""
        budgets = {"read": self._read_budget, "write": self._write_budget}
        for direction, figures in found.items():
            if direction in budgets:
                budgets[direction].resume(figures)

    def shared_budget_figures(self) -> dict[str, dict[str, Any]]:
        """Each shared budget's figures for the run report (none when not shared, or not
        used): this process's requests per second, the sum over its sharers, the limit."""
        budgets = {"read": self._read_budget, "write": self._write_budget}
        return {
            direction: budget.figures()
            for direction, budget in budgets.items()
            if isinstance(budget, SharedBudget) and budget.requests
        }

    async def __aenter__(self) -> HttpCore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._transport.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        files: Any = None,
        content: bytes | None = None,
        write: bool | None = None,
        repeatable: bool | None = None,
    ) -> httpx.Response:
        """Send one request (retrying what is safe) and return its 2xx/3xx response.

        ``path`` is relative to the base URL (``/issues/_search``) or absolute.
        ``write`` overrides the method's default budget: ``write=False`` for POST searches.
        ``repeatable=True`` marks a write that may be sent again when its reply was lost:
        it still spends the write budget, and is retried like a read.
        """
        request = self._build(method, path, params=params, json=json, files=files, content=content)
        writing = is_write(method, write)
        again = is_repeatable(writing, repeatable)
        return await self._with_retries(
            request, again, lambda: self._attempt(request, write=writing, repeatable=again)
        )

    def _build(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        files: Any = None,
        content: bytes | None = None,
    ) -> httpx.Request:
        """A request for ``path``, relative to the base URL (``/issues/_search``) or absolute."""
        url = path if "://" in path else f"{self.base_url}/{path.lstrip('/')}"
        if params and "?" not in url:
            # encoded here and parsed with the path: httpx's merging of params into a parsed
            # URL parses it all again (half the cost of building a request)
            parsed = httpx.URL(f"{url}?{httpx.QueryParams(params)}")
            params = None
        else:
            parsed = _parsed_url(url)
        return httpx.Request(
            method,
            parsed,
            params=params,
            headers=self._headers,
            json=json,
            files=files,
            content=content,
            extensions={"timeout": self._timeouts if self.answered else self._first_timeouts},
        )

    async def _send(self, request: httpx.Request, *, stream: bool) -> httpx.Response:
        """One exchange, following redirects on the same host (the tracker sends a moved
        issue's old key to its new one); a redirect elsewhere is refused unfollowed."""
        for _ in range(MAX_REDIRECTS):
            response = await self._transport.handle_async_request(request)
            response.request = request
            location = response.headers.get("Location")
            if response.status_code not in REDIRECT_STATUSES or location is None:
                if not stream:
                    await _read_or_close(response)
                return response
            await response.aclose()
            target = request.url.join(location)
            if (target.scheme, target.host, target.port) != (
                request.url.scheme,
                request.url.host,
                request.url.port,
            ):
                raise RedirectError(
                    f"{self.service} {request.method} {request.url} was redirected to another "
                    f"host ({target.host}); it was not followed, so the token was not sent "
                    "there. If the service moved, put its new address in the config",
                    service=self.service,
                    method=request.method,
                    url=str(request.url),
                    status=response.status_code,
                )
            request = self._redirected(request, response.status_code, target)
        raise httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects", request=request)

    def _redirected(self, request: httpx.Request, status: int, target: httpx.URL) -> httpx.Request:
        """The request to send to ``target``: as a GET for 303 (and a POST's 301/302, as
        browsers and httpx do), else the same method with the same body (its stream again, as
        httpx does: an upload's file is read anew)."""
        if status == 303 or (status in (301, 302) and request.method == "POST"):
            return httpx.Request(
                "GET", target, headers=self._headers, extensions=request.extensions
            )
        return httpx.Request(
            request.method,
            target,
            headers=request.headers,
            stream=request.stream,
            extensions=request.extensions,
        )

    async def get_json(self, path: str, *, params: dict[str, Any] | None = None) -> Any:
        """GET and decode the JSON reply (None for an empty body)."""
        return await self.request_json("GET", path, params=params)

    async def post_json(
        self,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        write: bool | None = None,
        repeatable: bool | None = None,
    ) -> Any:
        """POST a JSON body and decode the JSON reply (None for an empty body)."""
        return await self.request_json(
            "POST", path, params=params, json=json, write=write, repeatable=repeatable
        )

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        files: Any = None,
        write: bool | None = None,
        repeatable: bool | None = None,
    ) -> Any:
        """`request`, whose reply must be JSON: decoded (None for an empty body).

        A reply that is not JSON is asked again a few times (a proxy's error page passes),
        then raises BadReplyError; to a write that may not be repeated it is not asked
        again (the write may have been applied): AmbiguousWriteError naming the reply, which
        the load settles by asking the target.
        """
        request = self._build(method, path, params=params, json=json, files=files)
        writing = is_write(method, write)
        again = is_repeatable(writing, repeatable)

        async def once() -> Any:
            response = await self._attempt(request, write=writing, repeatable=again)
            try:
                return _decoded(response)
            except RetryableBadReply as problem:
                if again:
                    raise
                raise self._unreadable_write(request, problem) from None

        return await self._with_retries(request, again, once)

    async def delete(
        self,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        repeatable: bool | None = None,
    ) -> Any:
        """DELETE `path`, confirmed: the reply must be empty or JSON (decoded, None when
        empty). Anything else confirms nothing (a gateway whose session expired answers 200
        with its HTML sign-in page, and deletes nothing): BadReplyError, which stops the run,
        naming the URL and what came back, never asked again (the page would come again) and
        never taken as done, so the caller's ledger stays as it was."""
        request = self._build("DELETE", path, params=params, json=json)
        again = is_repeatable(True, repeatable)

        async def once() -> Any:
            response = await self._attempt(request, write=True, repeatable=again)
            try:
                return _decoded(response)
            except RetryableBadReply as problem:
                raise self._unconfirmed(request, problem) from None

        return await self._with_retries(request, again, once)

    @asynccontextmanager
    async def stream(
        self, method: str, path: str, *, params: dict[str, Any] | None = None
    ) -> AsyncIterator[httpx.Response]:
        """A response whose body is not read yet; opening it is retried, reading it is not."""
        request = self._build(method, path, params=params)
        writing = is_write(method)
        again = is_repeatable(writing)
        response = await self._with_retries(
            request,
            again,
            lambda: self._attempt(request, write=writing, repeatable=again, stream=True),
        )
        try:
            yield response
        finally:
            await response.aclose()

    async def download(self, path: str, sink: Sink, *, params: dict[str, Any] | None = None) -> int:
        """Stream a GET body into ``sink.write`` chunk by chunk; return the bytes written.

        A failure before the first byte was written is retried like any read; after that the
        sink holds a partial file, so it raises TransientError and the caller starts over
        with a fresh sink.
        """
        request = self._build("GET", path, params=params)
        return await self._with_retries(
            request, repeatable=True, once=lambda: self._download_once(request, sink)
        )

    async def _download_once(self, request: httpx.Request, sink: Sink) -> int:
        response = await self._attempt(request, write=False, repeatable=True, stream=True)
        announced = response.headers.get("Content-Length")
        written = 0
        try:
            async with asyncio.timeout(self._deadline):
                async for chunk in response.aiter_bytes():
                    sink.write(chunk)
                    written += len(chunk)
        except BODY_ERRORS as exc:
            if written:  # the sink holds part of a file: only the caller can start over
                note = f"broke off after {written} of {announced or 'unknown'} bytes"
                raise self._transport_error(BodyMismatch, request, exc, note) from exc
            if isinstance(exc, TimeoutError):
                raise httpx.ReadTimeout(self._deadline_note(), request=request) from exc
            raise
        finally:
            await response.aclose()
        if announced is not None and announced.isdigit() and int(announced) != written:
            raise BodyMismatch(
                f"{self.service} GET {request.url}: expected {announced} bytes "
                f"(Content-Length), got {written}",
                service=self.service,
                method="GET",
                url=str(request.url),
                status=response.status_code,
            )
        return written

    def _deadline_note(self) -> str:
        return f"no complete reply within the request deadline of {self._deadline:g} s"

    async def _with_retries(
        self, request: httpx.Request, repeatable: bool, once: Callable[[], Awaitable[T]]
    ) -> T:
        """Run ``once`` under the retry policy; map what is left over to the error tree.

        Most requests succeed at once, so the first attempt runs bare; only a failure builds
        the retry controller (a tenth of the CPU a request costs), whose first attempt then
        re-raises that failure, so attempts, waits and messages are as if it had run them all.
        """
        started = time.monotonic()
        try:
            return await once()
        except Exception as exc:  # the retry policy below judges it
            first: Exception | None = exc
        # the attempts' own time counts in the patience (a reply that trickles in takes a
        # deadline per attempt); a first contact's few connect timeouts are its own bound
        first_contact = not self.answered and isinstance(first, FIRST_CONTACT_ERRORS)
        busy = None if first_contact else Stopwatch(time.monotonic() - started)
        patience, attempts = self._patience, self._max_attempts
        if first_contact:
            outage = min(patience.outage, FIRST_CONTACT_PATIENCE)
            patience = dataclasses.replace(patience, outage=outage)
            attempts = min(attempts or FIRST_CONTACT_ATTEMPTS, FIRST_CONTACT_ATTEMPTS)
        controller = retrying(
            repeatable=repeatable,
            max_attempts=attempts,
            max_backoff=self._max_backoff,
            patience=patience,
            sleep=self._wait_aside,
            before_sleep=lambda state: self._log_retry(request, state),
            busy=busy,
        )
        try:
            async for attempt in controller:
                with attempt:
                    if first is not None:
                        failed, first = first, None
                        raise failed
                    result = await (busy.timed(once) if busy else once())
        except RetryableStatus as exc:
            raise self._gave_up(request, exc.response, controller.statistics) from None
        except RetryableBadReply as exc:
            raise self._bad_reply(request, exc) from None
        except FIRST_CONTACT_ERRORS as exc:
            if first_contact and not self.answered:
                raise self._unreachable(request, exc, controller.statistics) from exc
            note = self._waited(controller.statistics) + "; run the same command to resume"
            raise self._transport_error(TransientError, request, exc, note) from exc
        except (*CONNECT_STAGE_ERRORS, *AFTER_SEND_ERRORS) as exc:
            note = self._waited(controller.statistics) + "; run the same command to resume"
            raise self._transport_error(TransientError, request, exc, note) from exc
        except httpx.RequestError as exc:
            # an unsupported scheme, a malformed request, a redirect loop: a bug or bad config
            raise self._transport_error(FatalError, request, exc, "not retried") from exc
        return result

    async def _wait_aside(self, seconds: float) -> None:
        """A retry's wait; the caller's place in its stage is lent meanwhile (if it has one)."""
        async with waiting_aside():
            await self._sleep(seconds)

    def _unreachable(
        self, request: httpx.Request, exc: Exception, statistics: dict[str, Any]
    ) -> UnreachableError:
        reason = self._redact(str(exc)) or type(exc).__name__
        attempts = statistics.get("attempt_number", 1)
        return UnreachableError(
            f"{self.service} at {request.url.scheme}://{request.url.netloc.decode()} cannot be "
            f"reached ({attempts} attempts; {type(exc).__name__}: {reason}) and has not "
            "answered once in this "
            f"command; check the host and port of {self.base_url} in the config, and that "
            "the service is up",
            service=self.service,
            method=request.method,
            url=str(request.url),
            server_message=reason,
        )

    def _waited(self, statistics: dict[str, Any]) -> str:
        attempts = statistics.get("attempt_number", 1)
        idle = statistics.get("idle_for", 0.0)
        return f"after {attempts} attempts over {idle:.0f} s of waiting"

    def _gave_up(
        self, request: httpx.Request, response: httpx.Response, statistics: dict[str, Any]
    ) -> HaulHTTPError:
        """The service kept answering 429 (or 420) or 5xx: say how long we waited and when
        to resume."""
        if not is_throttle(response.status_code):
            note = self._waited(statistics) + "; run the same command to resume"
            return self._status_error(TransientError, request, response, note)
        asked = parse_retry_after(response.headers.get("Retry-After"), lambda: datetime.now(UTC))
        if asked is not None and asked > self._patience.rate_limit - statistics.get("idle_for", 0):
            resume = datetime.now(UTC) + timedelta(seconds=asked)
            note = (
                f"rate-limited: the service asks to wait {asked:.0f} s, more than "
                f"[tuning] rate_limit_patience allows; run the same command again after "
                f"{resume:%Y-%m-%d %H:%M} UTC"
            )
        else:
            note = (
                f"rate-limited {self._waited(statistics)}, past [tuning] rate_limit_patience; "
                "run the same command again later"
            )
        return self._status_error(RateLimitedError, request, response, note)

    def _bad_reply(self, request: httpx.Request, problem: RetryableBadReply) -> BadReplyError:
        response = problem.response
        kind = response.headers.get("Content-Type", "no content type")
        snippet = self._redact(" ".join(response.text[:120].split()))
        if "json" in kind:  # the API answered, badly: what it said helps, its first bytes not
            advice = "run the same command again; if it repeats, the service is at fault"
            detail = f"{problem.problem}; {advice}"
        else:
            detail = f"{problem.problem}: {snippet!r}; is the URL the service's API?"
        return BadReplyError(
            f"{self.service} {request.method} {request.url} -> {response.status_code} "
            f"({kind}): {detail}",
            service=self.service,
            method=request.method,
            url=str(request.url),
            status=response.status_code,
            server_message=snippet,
            response=response,
        )

    def _unconfirmed(self, request: httpx.Request, problem: RetryableBadReply) -> BadReplyError:
        """A deletion answered with something that is not the API's reply."""
        bad = self._bad_reply(request, problem)
        return BadReplyError(
            f"{bad.message}; the deletion is not confirmed, so nothing is counted as deleted:"
            f" make requests to {self.base_url} reach the API (a gateway's sign-in?), then run"
            " the same command again",
            **bad.context(),
        )

    def _unreadable_write(
        self, request: httpx.Request, problem: RetryableBadReply
    ) -> AmbiguousWriteError:
        """A write answered with something that is not the API's JSON: it may have been
        applied, so it is not sent again here; the message says what answered and what to do."""
        bad = self._bad_reply(request, problem)
        response = problem.response
        kind = response.headers.get("Content-Type", "no content type")
        return AmbiguousWriteError(
            f"{self.service} {request.method} {request.url} -> {response.status_code} ({kind}):"
            f" {problem.problem} ({bad.server_message!r}): something in front of the API"
            " answered (a proxy, a firewall, a login page?); whether the write was applied is"
            f" unknown, so the load looks for it in the target before sending it again. Make"
            f" requests to {self.base_url} reach the API, then run haul load --retry-failed",
            **bad.context(),
        )

    async def _attempt(
        self, request: httpx.Request, *, write: bool, repeatable: bool, stream: bool = False
    ) -> httpx.Response:
        """Send once within the write or the read budget; raise for any status but 2xx/3xx,
        and AmbiguousWriteError when a reply that is not `repeatable` was lost."""
        budget = self._write_budget if write else self._read_budget
        await budget.acquire()
        self.requests_sent += 1
        try:
            async with self._in_flight, asyncio.timeout(self._deadline):
                response = await self._send(request, stream=stream)
        except TimeoutError:
            late = httpx.ReadTimeout(self._deadline_note(), request=request)
            if not repeatable:  # the body was sent: the write may have been applied
                raise self._transport_error(
                    AmbiguousWriteError, request, late, "the write may have been applied"
                ) from None
            raise late from None
        except AFTER_SEND_ERRORS as exc:
            if not repeatable:
                raise self._transport_error(
                    AmbiguousWriteError, request, exc, "the write may have been applied"
                ) from exc
            raise
        self.answered = True
        self.server_clock.observe(response.headers.get("Date"))
        budget.on_reply(response.status_code, response.headers)
        if response.status_code < 400:
            return response
        if stream:
            await response.aread()  # the error body names the cause
            await response.aclose()
        if response.status_code in RETRY_STATUSES:
            raise RetryableStatus(response)
        raise self._status_error(error_class_for_status(response.status_code), request, response)

    def _status_error(
        self,
        cls: type[HaulHTTPError],
        request: httpx.Request,
        response: httpx.Response,
        note: str = "",
    ) -> HaulHTTPError:
        status = response.status_code
        server = self._redact(describe_error_body(response))
        if issubclass(cls, AuthError):
            message = f"{self.service} rejected the token for org {self.org_id} ({status})"
        else:
            message = f"{self.service} {request.method} {request.url} -> {status}"
        message += f" {note}" if note else ""
        message += f": {server}" if server else ""
        return cls(
            message,
            service=self.service,
            method=request.method,
            url=str(request.url),
            status=status,
            server_message=server,
            response=response,
        )

    def _transport_error(
        self, cls: type[HaulHTTPError], request: httpx.Request, exc: Exception, note: str
    ) -> HaulHTTPError:
        reason = self._redact(str(exc)) or type(exc).__name__
        what = f"{type(exc).__name__} ({note})"
        return cls(
            f"{self.service} {request.method} {request.url}: {what}: {reason}",
            service=self.service,
            method=request.method,
            url=str(request.url),
            server_message=reason,
        )

    def _redact(self, text: str) -> str:
        # a server may echo the Authorization header back in an error page
        return text.replace(self._token, "[token]") if self._token else text

    def _log_retry(self, request: httpx.Request, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        reason = (
            error.response.status_code
            if isinstance(error, RetryableStatus)
            else type(error).__name__
        )
        self.retries += 1
        if isinstance(reason, int) and is_throttle(reason):
            self.rate_limit_wait += state.upcoming_sleep
        log.warning(
            "http_retry",
            service=self.service,
            method=request.method,
            url=str(request.url),
            attempt=state.attempt_number,
            wait=round(state.upcoming_sleep, 3),
            reason=reason,
        )


@functools.lru_cache(maxsize=1024)
def _parsed_url(url: str) -> httpx.URL:
    """The URL parsed once: httpx's parser took about a third of building a request, and a
    load sends to the same few URLs per issue (an issue's comments, worklogs, files)."""
    return httpx.URL(url)


async def _read_or_close(response: httpx.Response) -> None:
    """Read the whole body; cut off (the request deadline, a broken connection), the reply is
    closed, so its connection is dropped rather than left to the garbage collector."""
    try:
        await response.aread()
    except BaseException:
        await response.aclose()
        raise


def _decoded(response: httpx.Response) -> Any:
    """The JSON body (None when empty); RetryableBadReply when it is not JSON."""
    if not response.content:
        return None
    try:
        return decode_json(response.content)
    except (ValueError, UnicodeDecodeError) as exc:
        kind = response.headers.get("Content-Type", "")
        raise RetryableBadReply(response, json_problem(response.content, kind, exc)) from None


class ServiceClient:
    """What every service's client shares: one HttpCore, closed with the client.

    A subclass names its `service` and adds its endpoints; `connect` builds the core.
    """

    service: ClassVar[str] = ""

    def __init__(self, core: HttpCore) -> None:
        self.core = core

    @classmethod
    def connect(
        cls,
        *,
        base_url: str,
        token: str,
        org_id: str | None = None,
        cloud_org_id: str | None = None,
        **core_options: Any,
    ) -> Self:
        """A client with its own core; ``core_options``: `CoreOptions`' fields, a transport and a
        sleep, as keywords (`HttpCore.of`)."""
        core = HttpCore.of(
            service=cls.service,
            base_url=base_url,
            token=token,
            org_id=org_id,
            cloud_org_id=cloud_org_id,
            **core_options,
        )
        return cls(core)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.core!r})"

    def server_now(self) -> datetime | None:
        """The service's own "now" from its replies' `Date` (None before any reply)."""
        return self.core.server_clock.now()

    async def _list(self, path: str, what: str) -> list[dict[str, Any]]:
        """A GET whose reply must be a list of objects (null: none); anything else is an
        UnexpectedReply naming `what` was expected, the record's problem."""
        body = await self.core.get_json(path)
        if body is None:
            return []
        if not isinstance(body, list) or not all(isinstance(item, dict) for item in body):
            snippet = json.dumps(body, ensure_ascii=False, default=str)[:200]
            raise UnexpectedReply(
                f"{self.service} GET {path}: expected a list of {what}, got {snippet}",
                service=self.service,
                method="GET",
                url=path,
            )
        return body

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the core's connections."""
        await self.core.aclose()
