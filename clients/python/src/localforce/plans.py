"""One declaration of every call, for the blocking and the asyncio clients alike.

A method of the client is written once, as a plan: a generator that yields the HTTP calls it
makes (`Call`) and is sent each one's response. `blocking` and `awaiting` turn a plan method
into a method of the blocking client (on an `httpx.Client`) or of the asyncio one (on an
`httpx.AsyncClient`); neither holds any logic of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar

import httpx

from localforce.errors import SalesforceError

T = TypeVar("T")
P = ParamSpec("P")

# What a plan is: calls out, responses in, its result at the end.
Plan = Generator["Call", httpx.Response, T]


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
    """What a client holds: its HTTP client (blocking or asyncio)."""

    http: httpx.Client | httpx.AsyncClient


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


def run(plan: Plan[T], http: httpx.Client) -> T:
    """Carry out a plan on a blocking client."""
    try:
        call = next(plan)
        while True:
            response = http.request(call.method, call.path, **call.request())
            call = plan.send(call.checked(response))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def arun(plan: Plan[T], http: httpx.AsyncClient) -> T:
    """Carry out a plan on an asyncio client."""
    try:
        call = next(plan)
        while True:
            response = await http.request(call.method, call.path, **call.request())
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
            return run(self.plan(owner, *args, **kwargs), owner.http)

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
            return await arun(self.plan(owner, *args, **kwargs), owner.http)

        method.__doc__ = self.plan.__doc__
        return method
