"""Routes whose dependencies take only the request and `str` path parameters are answered
without FastAPI's dependency solver, with the same results; any other route, and every request
while the app overrides a dependency, goes through the solver. What a route takes is read from
its declaration, never from FastAPI's solved model."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Annotated, Any

import fastapi
import fastapi.routing
import pytest
from fastapi import Depends, FastAPI, Request
from fastapi import Path as PathParameter
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from app.api.direct_routes import DirectRoute
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.errors import SalesforceError
from app.main import create_app
from tests.conftest import make_settings

CALLS: list[str] = []


async def get_name(request: Request, name: str) -> str:
    CALLS.append(name)
    if name == "bad":
        raise SalesforceError("A bad name", error_code="INVALID_NAME")
    return name.upper()


NameDep = Annotated[str, Depends(get_name)]

router = SalesforceRouter(prefix="/things")


@router.get("/{name}")
async def read(name: str, shout: NameDep, again: NameDep) -> dict[str, Any]:
    return {"name": name, "shout": shout, "again": again}


@router.post("/{name}", status_code=201)
def make(name: str, shout: NameDep) -> dict[str, Any]:  # synchronous: run in the pool
    return {"made": shout}


@router.get("/{name}/price")
async def price(name: str) -> dict[str, Any]:
    return {"name": name, "price": Decimal("1.50"), "tags": ("a", "b")}


@router.get("/{name}/search")
async def search(name: str, q: str, shout: NameDep) -> SalesforceJSONResponse:
    return SalesforceJSONResponse({"q": q, "shout": shout})


@router.get("/{name}/default")
async def by_default(name: str, shout: str = Depends(get_name)) -> dict[str, Any]:
    return {"shout": shout}


@router.get("/{name}/marked")
async def marked(name: Annotated[str, PathParameter()]) -> dict[str, Any]:
    return {"name": name}


async def get_loud(shout: NameDep) -> str:
    return shout + "!"


@router.get("/{name}/nested")
async def nested(loud: Annotated[str, Depends(get_loud)]) -> dict[str, Any]:
    return {"loud": loud}


@router.get("/{name}/uncached")
async def uncached(shout: Annotated[str, Depends(get_name, use_cache=False)]) -> dict[str, Any]:
    return {"shout": shout}


guarded = SalesforceRouter(prefix="/guarded", dependencies=[Depends(get_name)])


@guarded.get("/{name}")
async def read_guarded(name: str) -> dict[str, Any]:
    return {"name": name}


def salesforce_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    assert isinstance(error, SalesforceError)
    return SalesforceJSONResponse(error.to_body(), status_code=error.status_code)


@pytest.fixture
def client() -> Iterator[TestClient]:
    app = FastAPI()
    app.include_router(router)
    app.include_router(guarded)
    app.add_exception_handler(SalesforceError, salesforce_error)
    CALLS.clear()
    with TestClient(app) as client:
        yield client


@pytest.fixture
def no_solver(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """FastAPI's solver, counting its calls."""
    solved: list[str] = []
    original = getattr(fastapi.routing, "solve_dependencies", None)
    assert original is not None, (
        f"FastAPI {fastapi.__version__} has no fastapi.routing.solve_dependencies: these tests "
        "count the solver's calls through it (FastAPI 0.165.0 had it)"
    )

    async def counting(**kwargs: Any) -> Any:
        solved.append(kwargs["request"].url.path)
        return await original(**kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    return solved


def test_a_route_of_request_lookups_is_answered_without_the_solver(
    client: TestClient, no_solver: list[str]
) -> None:
    response = client.get("/things/widget")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json;charset=UTF-8"
    assert response.json() == {"name": "widget", "shout": "WIDGET", "again": "WIDGET"}
    assert CALLS == ["widget"]  # named twice, called once
    assert no_solver == []


def test_a_synchronous_route_answers_with_its_status(
    client: TestClient, no_solver: list[str]
) -> None:
    response = client.post("/things/widget")
    assert (response.status_code, response.json()) == (201, {"made": "WIDGET"})
    assert no_solver == []


def test_a_value_json_does_not_know_is_written_as_fastapi_writes_it(client: TestClient) -> None:
    response = client.get("/things/widget/price")
    assert response.json() == {"name": "widget", "price": 1.5, "tags": ["a", "b"]}


def test_a_dependencys_error_reaches_the_exception_handlers(client: TestClient) -> None:
    response = client.get("/things/bad")
    assert response.status_code == 400
    assert response.json() == [{"message": "A bad name", "errorCode": "INVALID_NAME"}]


def test_a_route_with_a_query_parameter_goes_through_the_solver(
    client: TestClient, no_solver: list[str]
) -> None:
    response = client.get("/things/widget/search", params={"q": "x"})
    assert response.json() == {"q": "x", "shout": "WIDGET"}
    assert no_solver == ["/things/widget/search"]
    assert _route("/things/{name}/search").direct_call() is None


@pytest.mark.parametrize(
    ("path", "answer"),
    [
        ("/things/widget/default", {"shout": "WIDGET"}),  # Depends as a default value
        ("/things/widget/marked", {"name": "widget"}),  # a marker other than Depends
        ("/things/widget/nested", {"loud": "WIDGET!"}),  # a dependency with its own
        ("/things/widget/uncached", {"shout": "WIDGET"}),  # use_cache=False
        ("/guarded/widget", {"name": "widget"}),  # the router's own dependencies
    ],
)
def test_what_only_the_solver_knows_goes_through_it(
    client: TestClient, no_solver: list[str], path: str, answer: dict[str, Any]
) -> None:
    response = client.get(path)
    assert (response.status_code, response.json()) == (200, answer)
    assert no_solver == [path]


def test_the_app_adds_no_dependencies_where_a_direct_route_would_not_see_them(
    tmp_path: Any,
) -> None:
    """A direct route reads the dependencies its own declaration names, its router's among
    them: none may come from where it was included (`include_router(dependencies=...)`)."""
    app = create_app(make_settings("", tmp_path, bulk_runner=False))
    try:
        direct = 0
        for context in iter_route_contexts(app.routes):
            route = context.original_route
            if isinstance(route, DirectRoute):
                assert list(context.dependencies) == list(route.dependencies), route.path
                direct += route.direct_call() is not None
        assert direct >= 90
    finally:
        app.state.localforce.engine.dispose()
        app.state.localforce.platform.dispose()


def test_an_overridden_dependency_is_honoured(client: TestClient, no_solver: list[str]) -> None:
    async def fixed(request: Request) -> str:
        return "FIXED"

    app: Any = client.app
    app.dependency_overrides[get_name] = fixed
    response = client.get("/things/widget")
    assert response.json() == {"name": "widget", "shout": "FIXED", "again": "FIXED"}
    assert no_solver == ["/things/widget"]


def _route(path: str) -> DirectRoute:
    found = next(route for route in router.routes if getattr(route, "path", None) == path)
    assert isinstance(found, DirectRoute)
    return found
