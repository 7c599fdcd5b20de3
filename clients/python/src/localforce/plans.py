"""One declaration of every call, for the blocking and the asyncio clients alike.

A method of the client is written once, as a plan: a generator that yields the HTTP calls it
makes (`Call`) and is sent each one's response. `blocking` and `awaiting` turn a plan method
into a method of the blocking client (on an `httpx.Client`) or of the asyncio one (on an
`httpx.AsyncClient`); neither holds any logic of its own.

Servers behind a balancer come and go, so a call that finds none may be sent again (`Retry`):
a read always; a write only when it surely never reached a server (its connection was never
made). A write whose fate is unknown (the connection dropped after it was sent, or the balancer
answered 502 or 504 for a server it lost) is thrown into its plan as `Unanswered`, where the
plan may find out what happened (an episode's start and answer do) or let it go to the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar

import httpx

from localforce.errors import SalesforceError, Unanswered

T = TypeVar("T")
P = ParamSpec("P")

# What a plan is: calls out, responses in, its result at the end.
Plan = Generator["Call", httpx.Response, T]

# Statuses a balancer (or a server going away) answers for a call no server carried out or
# finished: a read is sent again on them; a write's fate is unknown on 502 and 504.
GONE = frozenset({502, 503, 504})
UNKNOWN_FATE = frozenset({502, 504})
# Failures before the request left: no server saw it, so any call may be sent again.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
READS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class Call:
    """One HTTP request, and the statuses that are answers (any other raises SalesforceError)."""

    method: str
    path: str
    params: Mapping[str, str] | None = None
    json: Any = None
    data: Mapping[str, str] | None = None  # a form (OAuth's token request)
    headers: Mapping[str, str] = field(default_factory=dict)
    expect: tuple[int, ...] = (200,)
    # Whether sending it twice does what sending it once does (None: a read's method).
    idempotent: bool | None = None

    @property
    def resendable(self) -> bool:
        return self.method in READS if self.idempotent is None else self.idempotent

    def request(self) -> dict[str, Any]:
        """The keywords of httpx's `request()`."""
        return {
            "params": self.params,
            "json": self.json,
            "data": self.data,
            "headers": dict(self.headers),
        }

    def checked(self, response: httpx.Response) -> httpx.Response:
        if response.status_code not in self.expect:
            raise SalesforceError.of(response)
        return response


def body(response: httpx.Response) -> Any:
    """A response's JSON (None for an empty body, as a 204's)."""
    return response.json() if response.content else None


class Http:
    """What a client holds: its HTTP client (blocking or asyncio), and how it sends again a
    call that found no server."""

    http: httpx.Client | httpx.AsyncClient
    retry: Retry


class Blocking(Http):
    """A blocking client: closed by `close()` or at the end of a `with` block."""

    http: httpx.Client

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Awaiting(Http):
    """An asyncio client: closed by `aclose()` or at the end of an `async with` block."""

    http: httpx.AsyncClient

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass(frozen=True)
class Retry:
    """How often, and how long apart, a call that found no server is sent again."""

    attempts: int = 6
    first_wait: float = 0.1
    longest_wait: float = 2.0

    def wait(self, attempt: int) -> float:
        return float(min(self.longest_wait, self.first_wait * 2**attempt))

    def again(self, call: Call, attempt: int, outcome: httpx.Response | Exception) -> bool:
        """Whether to send `call` again after `outcome`; raises Unanswered when its fate is
        unknown and it may not be."""
        last = attempt + 1 >= self.attempts
        if isinstance(outcome, httpx.Response):
            if outcome.status_code not in GONE or outcome.status_code in call.expect:
                return False
            if call.resendable:
                return not last
            if outcome.status_code in UNKNOWN_FATE:
                raise Unanswered(call.method, call.path, f"HTTP {outcome.status_code}")
            return False  # a 503: the server's own answer, raised as its error
        if (isinstance(outcome, NOT_SENT) or call.resendable) and not last:
            return True
        raise Unanswered(call.method, call.path, repr(outcome)) from outcome


Http.retry = Retry()


def run(plan: Plan[T], http: httpx.Client, retry: Retry) -> T:
    """Carry out a plan on a blocking client."""

    def send(call: Call) -> httpx.Response:
        for attempt in range(retry.attempts):
            try:
                outcome: httpx.Response | Exception = http.request(
                    call.method, call.path, **call.request()
                )
            except httpx.TransportError as error:
                outcome = error
            if not retry.again(call, attempt, outcome):
                assert isinstance(outcome, httpx.Response)
                return outcome
            time.sleep(retry.wait(attempt))
        raise AssertionError("Retry.again stops at the last attempt")

    try:
        call = next(plan)
        while True:
            try:
                response = send(call)
            except Unanswered as unanswered:
                call = plan.throw(unanswered)
                continue
            call = plan.send(call.checked(response))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def arun(plan: Plan[T], http: httpx.AsyncClient, retry: Retry) -> T:
    """Carry out a plan on an asyncio client."""

    async def send(call: Call) -> httpx.Response:
        for attempt in range(retry.attempts):
            try:
                outcome: httpx.Response | Exception = await http.request(
                    call.method, call.path, **call.request()
                )
            except httpx.TransportError as error:
                outcome = error
            if not retry.again(call, attempt, outcome):
                assert isinstance(outcome, httpx.Response)
                return outcome
            await asyncio.sleep(retry.wait(attempt))
        raise AssertionError("Retry.again stops at the last attempt")

    try:
        call = next(plan)
        while True:
            try:
                response = await send(call)
            except Unanswered as unanswered:
                call = plan.throw(unanswered)
                continue
            call = plan.send(call.checked(response))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


class blocking(Generic[P, T]):
    """A plan method as a method of a blocking client (whose `http` is an httpx.Client)."""

    # The plan is a method of the client's plans class, run with the client as its `self`
    # (both share the client's attributes and nothing else).
    def __init__(self, plan: Callable[Concatenate[Any, P], Plan[T]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    def __get__(self, owner: Http, kind: type | None = None) -> Callable[P, T]:
        def method(*args: P.args, **kwargs: P.kwargs) -> T:
            assert isinstance(owner.http, httpx.Client)
            return run(self.plan(owner, *args, **kwargs), owner.http, owner.retry)

        method.__doc__ = self.plan.__doc__
        return method


class awaiting(Generic[P, T]):
    """A plan method as a coroutine method of an asyncio client (an httpx.AsyncClient)."""

    # The plan is a method of the client's plans class, run with the client as its `self`
    # (both share the client's attributes and nothing else).
    def __init__(self, plan: Callable[Concatenate[Any, P], Plan[T]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    def __get__(self, owner: Http, kind: type | None = None) -> Callable[P, Awaitable[T]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> T:
            assert isinstance(owner.http, httpx.AsyncClient)
            return await arun(self.plan(owner, *args, **kwargs), owner.http, owner.retry)

        method.__doc__ = self.plan.__doc__
        return method
