"""Routes answered without FastAPI's general dependency solver, where nothing needs it.

FastAPI solves a route's dependencies for every request: it walks each dependency's own, checks
caches and scopes, and reads the path, query, header and cookie parameters of every one of
them: about 20 us per dependency named, most of a small request's cost beside its query. Nearly
every route here takes only the request, `str` path parameters, and dependencies that take the
same (deps.py): the session, the sandbox, the transaction, the org context, the body, the
sObject. For such a route `DirectRoute` calls the dependencies itself, each once per request,
in the order the route names them, then the route.

What a route takes is read from its own declaration, as written: its signature and type hints,
`Request`, a `str` parameter its path names, or `Annotated[T, Depends(f)]` (FastAPI's public
`Depends` marker: the function and `use_cache` given to it). Anything else (a body model, a
query parameter, a `Depends` default value, a dependency with dependencies of its own, a
generator, a route or router-wide `dependencies=` list, a response class left to a default) goes
to FastAPI's handler, as do all requests while the app overrides a dependency. Nothing of
FastAPI's solved model (its `Dependant`) is read.

Errors are raised as FastAPI's would be, to the same exception handlers; the route's OpenAPI
document is FastAPI's own.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import params
from fastapi.encoders import jsonable_encoder
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import compile_path

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@dataclass(frozen=True)
class _Call:
    """How to call a route or a dependency: its request parameter, its `str` path parameters,
    and (a route's) the dependencies whose values its parameters take."""

    function: Callable[..., Any]
    request_name: str | None
    path_names: tuple[str, ...]
    dependencies: tuple[tuple[str, _Call], ...] = ()

    async def __call__(self, request: Request, cache: dict[Any, Any]) -> Any:
        values: dict[str, Any] = {name: request.path_params[name] for name in self.path_names}
        if self.request_name is not None:
            values[self.request_name] = request
        for name, dependency in self.dependencies:
            function = dependency.function
            if function not in cache:
                cache[function] = await dependency(request, cache)
            values[name] = cache[function]
        return await self.function(**values)


def _dependency(annotation: Any) -> Callable[..., Any] | None:
    """`f` of `Annotated[T, Depends(f)]` (cached, the marker alone), or None."""
    if typing.get_origin(annotation) is not Annotated:
        return None
    markers = annotation.__metadata__
    if len(markers) != 1 or type(markers[0]) is not params.Depends:
        return None  # Security(), Query(), Path(), several markers: FastAPI's to solve
    marker = markers[0]
    return marker.dependency if marker.use_cache else None


def _hints(function: Callable[..., Any]) -> dict[str, Any] | None:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # a hint that does not resolve here: FastAPI decides what it means
        return None


_PLAIN = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _plan(function: Any, path_names: frozenset[str], *, outer: bool) -> _Call | None:
    """How to call `function` directly, or None when only FastAPI's solver can: a coroutine
    function taking the request, `str` path parameters and (the route, `outer`) dependencies
    that take only the same two."""
    hints = _hints(function) if inspect.iscoroutinefunction(function) else None
    if hints is None:
        return None
    request_name: str | None = None
    path_params: list[str] = []
    dependencies: list[tuple[str, _Call]] = []
    for name, parameter in inspect.signature(function).parameters.items():
        hint = hints.get(name)
        if parameter.kind not in _PLAIN:
            return None
        if hint is Request:
            request_name = name
        elif hint is str and name in path_names:
            path_params.append(name)
        elif (sub := _dependency_plan(hint, path_names) if outer else None) is not None:
            dependencies.append((name, sub))
        else:
            return None
    return _Call(function, request_name, tuple(path_params), tuple(dependencies))


def _dependency_plan(hint: Any, path_names: frozenset[str]) -> _Call | None:
    dependency = _dependency(hint)
    return None if dependency is None else _plan(dependency, path_names, outer=False)


class DirectRoute(APIRoute):
    """An APIRoute answered directly when its declaration allows (see the module's text)."""

    def direct_call(self) -> _Call | None:
        """How this route is answered without FastAPI's solver, or None when it is not."""
        if self.dependencies or not isinstance(self.response_class, type):
            return None
        path_names = frozenset(compile_path(self.path)[2])
        return _plan(self.endpoint, path_names, outer=True)

    def get_route_handler(self) -> Handler:
        general = super().get_route_handler()
        direct = self.direct_call()
        response_class = self.response_class
        if direct is None or not isinstance(response_class, type):
            return general
        status_code = self.status_code or 200
        writes_json = issubclass(response_class, JSONResponse)

        async def handle(request: Request) -> Response:
            if request.app.dependency_overrides:
                return await general(request)
            result = await direct(request, {})
            if isinstance(result, Response):
                return result
            if writes_json:
                try:  # most results are JSON already: FastAPI's encoder would walk them for nothing
                    return response_class(result, status_code=status_code)
                except TypeError:  # a value the JSON writer does not know
                    pass
            return response_class(jsonable_encoder(result), status_code=status_code)

        return handle
