"""What localforce-client sends again when a server behind a balancer is lost, against a
scripted transport (each request answered by the next step of a script): reads are sent again,
a write whose fate is unknown raises Unanswered, a connection never made is sent again, and an
episode's start and answer settle a lost reply by reading. tests/test_multi_host.py runs the
same rules against real hosts, one of them killed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from localforce import AsyncControl, Control, Org, SalesforceError, Unanswered
from localforce.plans import Retry

Step = httpx.Response | type[httpx.TransportError]
EPISODE = {"id": "ep-1", "access_token": "00Dtoken", "prompt": "?"}
RESULT = {"episode": "ep-1", "reward": 1.0, "metric": "exact_match", "answer": "42"}


def scripted(steps: list[Step], seen: list[str]) -> httpx.MockTransport:
    """A transport answering each request with the next step: a response, or a transport
    error raised as if the connection failed."""

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        step = steps.pop(0)
        if isinstance(step, httpx.Response):
            return step
        raise step("scripted failure", request=request)

    return httpx.MockTransport(answer)


def json_of(status: int, body: Any = None) -> httpx.Response:
    return httpx.Response(status, json=body)


NO_WAITING = Retry(first_wait=0.0)


def org(steps: list[Step], seen: list[str]) -> Org:
    client = Org("http://lb", "00Dtoken")
    client.http = httpx.Client(base_url="http://lb", transport=scripted(steps, seen))
    client.retry = NO_WAITING
    return client


def control(steps: list[Step], seen: list[str]) -> Control:
    client = Control("http://lb", "key")
    client.http = httpx.Client(base_url="http://lb", transport=scripted(steps, seen))
    client.retry = NO_WAITING
    return client


QUERY_PATH = "GET /services/data/v59.0/query"


@pytest.mark.parametrize(
    "failure",
    [json_of(502), json_of(503), json_of(504), httpx.ReadError, httpx.RemoteProtocolError],
    ids=["502", "503", "504", "read-error", "dropped"],
)
def test_a_read_is_sent_again_when_no_server_answered(failure: Step) -> None:
    seen: list[str] = []
    found = {"totalSize": 0, "done": True, "records": []}
    assert org([failure, failure, json_of(200, found)], seen).query("SELECT Id FROM Account") == (
        found
    )
    assert seen == [QUERY_PATH] * 3


def test_a_read_gives_up_after_six_attempts() -> None:
    seen: list[str] = []
    with pytest.raises(SalesforceError) as raised:
        org([json_of(503)] * 6, seen).query("SELECT Id FROM Account")
    assert raised.value.status == 503
    assert len(seen) == 6
    with pytest.raises(Unanswered):
        org([httpx.ReadError] * 6, []).query("SELECT Id FROM Account")


@pytest.mark.parametrize(
    "failure",
    [json_of(502), json_of(504), httpx.ReadError, httpx.RemoteProtocolError],
    ids=["502", "504", "read-error", "dropped"],
)
def test_a_write_whose_fate_is_unknown_is_not_sent_again(failure: Step) -> None:
    seen: list[str] = []
    with pytest.raises(Unanswered, match="may or may not have been done"):
        org([failure], seen).create("Account", {"Name": "x"})
    assert seen == ["POST /services/data/v59.0/sobjects/Account"]


def test_a_write_whose_connection_was_never_made_is_sent_again() -> None:
    seen: list[str] = []
    made = {"id": "001000000000001AAA", "success": True, "errors": []}
    steps: list[Step] = [httpx.ConnectError, json_of(201, made)]
    assert org(steps, seen).create("Account", {"Name": "x"}) == made
    assert len(seen) == 2


def test_a_write_answered_503_is_the_servers_refusal() -> None:
    error = [{"errorCode": "SERVER_UNAVAILABLE", "message": "busy"}]
    with pytest.raises(SalesforceError) as raised:
        org([json_of(503, error)], []).create("Account", {"Name": "x"})
    assert (raised.value.status, raised.value.error_code) == (503, "SERVER_UNAVAILABLE")


def test_an_answer_whose_reply_was_lost_is_read_back_from_the_result() -> None:
    seen: list[str] = []
    ended = [{"errorCode": "EPISODE_ENDED", "message": "Episode ep-1 has ended"}]
    steps: list[Step] = [json_of(502), json_of(409, ended), json_of(200, {"result": RESULT})]
    answered = control(steps, seen).answer("ep-1", "42")
    assert answered == {"id": "ep-1", **RESULT, "done": True}
    assert seen == [
        "POST /__localforce/episodes/ep-1/answer",
        "POST /__localforce/episodes/ep-1/answer",
        "GET /__localforce/episodes/ep-1",
    ]


def test_an_answer_that_never_landed_is_graded_when_sent_again() -> None:
    graded = {"id": "ep-1", "reward": 1.0, "done": True}
    steps: list[Step] = [httpx.ReadError, json_of(200, graded)]
    assert control(steps, []).answer("ep-1", "42") == graded


def test_a_start_that_never_began_is_sent_again() -> None:
    seen: list[str] = []
    missing = [{"errorCode": "NOT_FOUND", "message": "no episode ep-1"}]
    steps: list[Step] = [json_of(504), json_of(404, missing), json_of(201, EPISODE)]
    assert control(steps, seen).start_episode({"idx": 0}, id="ep-1") == EPISODE
    assert seen == [
        "POST /__localforce/episodes",
        "GET /__localforce/episodes/ep-1",
        "POST /__localforce/episodes",
    ]


def test_a_start_that_began_with_its_token_lost_is_ended_and_raised() -> None:
    seen: list[str] = []
    steps: list[Step] = [httpx.ReadError, json_of(200, {"id": "ep-1"}), httpx.Response(204)]
    with pytest.raises(Unanswered):
        control(steps, seen).start_episode({"idx": 0}, id="ep-1")
    assert seen == [
        "POST /__localforce/episodes",
        "GET /__localforce/episodes/ep-1",
        "DELETE /__localforce/episodes/ep-1",
    ]


def test_a_start_without_an_id_cannot_be_settled() -> None:
    seen: list[str] = []
    with pytest.raises(Unanswered):
        control([json_of(502)], seen).start_episode({"idx": 0})
    assert seen == ["POST /__localforce/episodes"]


@pytest.mark.asyncio
async def test_the_asyncio_client_follows_the_same_rules() -> None:
    seen: list[str] = []
    ended = [{"errorCode": "EPISODE_ENDED", "message": "ended"}]
    steps: list[Step] = [httpx.ReadError, json_of(409, ended), json_of(200, {"result": RESULT})]
    client = AsyncControl("http://lb", "key")
    client.http = httpx.AsyncClient(base_url="http://lb", transport=scripted(steps, seen))
    client.retry = NO_WAITING
    async with client:
        assert await client.answer("ep-1", "42") == {"id": "ep-1", **RESULT, "done": True}
    assert seen == [
        "POST /__localforce/episodes/ep-1/answer",
        "POST /__localforce/episodes/ep-1/answer",
        "GET /__localforce/episodes/ep-1",
    ]
