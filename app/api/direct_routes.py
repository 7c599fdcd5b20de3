"""Routes answered without FastAPI's general dependency solver, where nothing needs it.

FastAPI solves a route's dependencies for every request: it walks each dependency's own, checks
caches and scopes, and reads the path, query, header and cookie parameters of every one of
them: about 20 us per dependency named, most of a small request's cost beside its query. Nearly
every route here takes only the request, `str` path parameters, and dependencies that take the
same (deps.py): the session, the sandbox, the transaction, the org context, the body. For such a
route `DirectRoute` calls the dependencies itself, each once per request, in the order the
route names them, then the route. Anything else (a body model, a query parameter, a dependency
with dependencies of its own, a generator) goes to FastAPI's handler, as do all requests while
the app overrides a dependency.

Errors are raised as FastAPI's would be, to the same exception handlers; the route's OpenAPI
document is FastAPI's own.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, cast

from fastapi.encoders import jsonable_encoder
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

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


def _direct(dependant: Any, *, with_dependencies: bool) -> _Call | None:
    """How to call `dependant` directly, or None when only FastAPI's solver can."""
    call = dependant.call
    if not inspect.iscoroutinefunction(call) or not dependant.use_cache:
        return None
    if (
        dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.body_params
        or dependant.websocket_param_name
        or dependant.http_connection_param_name
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
    ):
        return None
    if any(param.field_info.annotation is not str for param in dependant.path_params):
        return None
    dependencies: list[tuple[str, _Call]] = []
    for sub in dependant.dependencies:
        direct = None if not with_dependencies else _direct(sub, with_dependencies=False)
        if direct is None or sub.name is None:
            return None
        dependencies.append((sub.name, direct))
    return _Call(
        function=call,
        request_name=dependant.request_param_name,
        path_names=tuple(param.name for param in dependant.path_params),
        dependencies=tuple(dependencies),
    )


class DirectRoute(APIRoute):
    """An APIRoute answered directly when its dependencies allow (see the module's text)."""

    def get_route_handler(self) -> Handler:
        general = super().get_route_handler()
        direct = _direct(self.dependant, with_dependencies=True)
        if direct is None:
            return general
        status_code = self.status_code or 200
        response_class = _response_class(self)
        writes_json = isinstance(response_class, type) and issubclass(response_class, JSONResponse)

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


def _response_class(route: APIRoute) -> Callable[..., Response]:
    chosen = route.response_class
    return cast(Callable[..., Response], getattr(chosen, "value", chosen))  # a Default's value
