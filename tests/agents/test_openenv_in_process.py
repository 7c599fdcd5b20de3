"""The OpenEnv environment in process, without a server: an app's lifespan run by LocalOrg,
the environment's synchronous methods from this thread and its async ones from this test's
own event loop; the admin key; and /openenv without openenv-core."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from starlette.websockets import WebSocketDisconnect

from app.agents.app_link import AppLink, LocalOrg
from app.agents.environment import EpisodeError, EpisodeObservation, LocalforceEnvironment
from app.agents.openenv_endpoint import OpenEnvEndpoint
from app.errors import SalesforceError
from tests.agents.conftest import KEY


def control_get(link: AppLink, path: str) -> tuple[int, Any]:
    async def get() -> tuple[int, Any]:
        async with link.http({"Authorization": f"Bearer {KEY}"}) as http:
            response = await http.get(f"/__localforce{path}")
            return response.status_code, response.json()

    return link.run_blocking(get())


def sandbox_status(link: AppLink, episode_id: str) -> int:
    return control_get(link, f"/sandboxes/{episode_id}")[0]


def kept_result(link: AppLink, episode_id: str) -> dict[str, Any]:
    """The episode's result, kept once its sandbox is gone."""
    status, shown = control_get(link, f"/episodes/{episode_id}")
    assert status == 200, shown
    assert shown["sandbox"] is None
    return dict(shown["result"])


def test_the_synchronous_methods_run_an_episode(link: AppLink, tasks: list[dict[str, Any]]) -> None:
    task = next(task for task in tasks if task["task"] == "top_issue_identification")
    env = LocalforceEnvironment(link, admin_key=KEY)
    # Naming the episode takes the key in the reset itself, even in a session opened with it.
    with pytest.raises(EpisodeError) as refused:
        env.reset(task=task["idx"], episode_id="in-process")
    assert refused.value.error_code == "INVALID_AUTH_HEADER"
    started = env.reset(task=task["idx"], episode_id="in-process", admin_key=KEY)
    counted = env.step(
        CallToolAction(tool_name="soql_query", arguments={"query": "SELECT COUNT() FROM Case"})
    )
    answered = env.step(
        CallToolAction(tool_name="submit_answer", arguments={"response": task["answer"]})
    )
    state = env.state
    assert isinstance(started, EpisodeObservation)
    assert started.prompt == task["query"]
    assert isinstance(counted, CallToolObservation) and counted.error is None
    assert counted.result["data"]["totalSize"] > 0
    assert (answered.done, answered.reward) == (True, 1.0)
    assert (state.episode_id, state.step_count, state.done) == ("in-process", 2, True)
    assert sandbox_status(link, "in-process") == 200
    env.close()
    assert sandbox_status(link, "in-process") == 404
    kept = kept_result(link, "in-process")
    assert (kept["reward"], kept["answer"], kept["channel"]) == (1.0, task["answer"], "openenv")
    assert [call["tool"] for call in kept["tool_calls"]] == ["soql_query", "submit_answer"]


@pytest.mark.asyncio
async def test_the_async_methods_run_on_the_apps_loop_from_another(
    link: AppLink, tasks: list[dict[str, Any]]
) -> None:
    env = LocalforceEnvironment(link)
    started = await env.reset_async(task=tasks[0]["idx"], admin_key=KEY)
    listed = await env.step_async(
        CallToolAction(tool_name="describe", arguments={"sobject": "Account"})
    )
    assert isinstance(started, EpisodeObservation)
    assert isinstance(listed, CallToolObservation) and listed.error is None
    assert listed.result["data"]["name"] == "Account"
    env.close()
    assert sandbox_status(link, started.episode_id) == 404
    assert kept_result(link, started.episode_id)["reward"] is None  # never answered


def test_starting_an_episode_needs_the_admin_key(link: AppLink) -> None:
    env = LocalforceEnvironment(link)
    with pytest.raises(EpisodeError) as refused:
        env.reset(task=0)
    assert refused.value.status_code == 401
    assert str(refused.value) == (
        "INVALID_AUTH_HEADER: The localforce control plane needs the admin key "
        "(LOCALFORCE_ADMIN_KEY, or the one `localforce admin-key` prints), as "
        "'Authorization: Bearer <key>' or "
        "'X-Localforce-Admin-Key: <key>'."
    )
    with pytest.raises(EpisodeError):
        env.reset(task=0, admin_key="wrong")


def test_a_reset_without_the_key_starts_only_a_task_of_the_servers_file(
    link: AppLink, tasks: list[dict[str, Any]]
) -> None:
    env = LocalforceEnvironment(link)
    env.reset(task=0, admin_key=KEY)  # the session holds the key from here
    for reset in (
        {"task": {**tasks[0], "idx": 9001}},
        {"task": 0, "episode_id": "in-process-placed"},
        {"task": 0, "org": "original"},
        {"task": 0, "run": "not-mine-to-file"},
    ):
        with pytest.raises(EpisodeError) as refused:
            env.reset(**reset)
        assert (refused.value.error_code, refused.value.status_code) == ("INVALID_AUTH_HEADER", 401)
        assert str(refused.value).startswith("INVALID_AUTH_HEADER: reset: only a task of ")
    assert sandbox_status(link, "in-process-placed") == 404
    again = env.reset(task=tasks[1]["idx"])  # a task of the file, by idx
    with_key = env.reset(task=0, episode_id="in-process-placed", admin_key=KEY)
    assert isinstance(again, EpisodeObservation) and again.prompt == tasks[1]["query"]
    assert isinstance(with_key, EpisodeObservation)
    assert with_key.episode_id == "in-process-placed"
    env.close()


def test_a_blocking_call_on_the_apps_own_loop_is_refused(link: AppLink) -> None:
    env = LocalforceEnvironment(link, admin_key=KEY)

    async def reset_from_the_loop() -> object:
        return env.reset(task=0)

    with pytest.raises(RuntimeError) as refused:
        link.run_blocking(reset_from_the_loop())
    assert str(refused.value).startswith("A blocking call from the app's own event loop")


def test_after_the_app_stops_a_call_says_so() -> None:
    # An app of its own: the module's app has its lifespan running (the link), one at a time.
    with LocalOrg(FastAPI()) as stopped:
        pass
    env = LocalforceEnvironment(stopped, admin_key=KEY)
    with pytest.raises(SalesforceError) as refused:
        env.reset(task=0)
    assert refused.value.error_code == "SERVER_UNAVAILABLE"
    assert refused.value.status_code == 503


def test_a_second_lifespan_of_a_running_app_is_refused(app: FastAPI, link: AppLink) -> None:
    # It would stop the threads and engines the running one serves with.
    with pytest.raises(RuntimeError) as refused, TestClient(app):
        pass
    assert str(refused.value) == (
        "This app's lifespan is running already: one app serves one lifespan at a time"
    )
    assert control_get(link, "/tasks")[0] == 200  # the running one serves on


def test_without_openenv_core_the_endpoint_names_the_extra(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint: OpenEnvEndpoint = client.app.state.openenv  # type: ignore[attr-defined]
    monkeypatch.setattr(endpoint, "available", False)
    response = client.get("/openenv/health")
    assert response.status_code == 501
    assert response.json() == [
        {
            "message": "The OpenEnv environment needs openenv-core: pip install "
            "'localforce[openenv]'",
            "errorCode": "FUNCTIONALITY_NOT_ENABLED",
        }
    ]
    with pytest.raises(WebSocketDisconnect) as closed, client.websocket_connect("/openenv/ws"):
        pass  # refused before it opens
    assert (closed.value.code, closed.value.reason) == (1011, response.json()[0]["message"])


def test_the_endpoint_answers_openenvs_health_check(client: TestClient) -> None:
    response = client.get("/openenv/health")
    assert response.status_code == 200
    assert response.json() == {"status": "healthy"}


def test_the_task_list_leaves_the_answers_out(link: AppLink, tasks: list[dict[str, Any]]) -> None:
    listed = control_get(link, "/tasks")
    given = ("idx", "task", "query", "metadata")
    assert listed == (200, {"tasks": [{key: t[key] for key in given} for t in tasks]})

    async def get_without_the_key() -> int:
        async with link.http() as http:
            return (await http.get("/__localforce/tasks")).status_code

    assert link.run_blocking(get_without_the_key()) == 401
