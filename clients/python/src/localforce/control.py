"""localforce's control plane (/__localforce), with the server's admin key: sandboxes,
episodes, their results, and the tasks and splits an episode may name."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from localforce.errors import Unanswered
from localforce.plans import Awaiting, Blocking, Call, Http, Plan, awaiting, blocking, body

ADMIN_HEADER = "X-Localforce-Admin-Key"
CONTROL = "/__localforce"
# A first episode of an org and seed builds its template (seconds to a minute), and a split's
# first use draws it (up to a couple of minutes for a Pro train part).
TIMEOUT = 300.0


def _segment(value: str) -> str:
    return quote(value, safe="")


def _given(**values: Any) -> dict[str, Any]:
    """A request body of the values given (None: the server's default)."""
    return {key: value for key, value in values.items() if value is not None}


class ControlClient(Http):
    """What the blocking and asyncio clients hold: the server's URL and the admin key."""

    def __init__(self, url: str, admin_key: str | None) -> None:
        self.url = url.rstrip("/")
        self.admin_key = admin_key

    def _call(self, method: str, path: str, **options: Any) -> Call:
        """A call of the control plane, with the admin key (each call carries it, so that an
        environment's one HTTP client also sends episodes' tokens elsewhere)."""
        headers = {ADMIN_HEADER: self.admin_key} if self.admin_key else {}
        return Call(method, f"{CONTROL}{path}", headers=headers, **options)


class ControlPlans(ControlClient):
    """The calls, declared once: `Control` runs them blocking, `AsyncControl` awaits them."""

    # Sandboxes

    def create_sandbox(
        self,
        id: str | None = None,
        org: str | None = None,
        seed: int | None = None,
        clock: str | None = None,
        clock_mode: str | None = None,
    ) -> Plan[dict[str, Any]]:
        """A fresh copy of the org: its description, instance_url, access_token, and the
        username and password its logins take (shown this once)."""
        sent = _given(id=id, org=org, seed=seed, clock=clock, clockMode=clock_mode)
        made = yield self._call("POST", "/sandboxes", json=sent, expect=(201,))
        return dict(body(made))

    def sandboxes(self) -> Plan[list[dict[str, Any]]]:
        """Every live sandbox."""
        return list(body((yield self._call("GET", "/sandboxes")))["sandboxes"])

    def sandbox(self, sandbox_id: str) -> Plan[dict[str, Any]]:
        return dict(body((yield self._call("GET", f"/sandboxes/{_segment(sandbox_id)}"))))

    def delete_sandbox(self, sandbox_id: str) -> Plan[None]:
        path = f"/sandboxes/{_segment(sandbox_id)}"
        yield self._call("DELETE", path, expect=(204,))

    def reset_sandbox(self, sandbox_id: str) -> Plan[dict[str, Any]]:
        """Undo every write since the last reset."""
        path = f"/sandboxes/{_segment(sandbox_id)}/reset"
        return dict(body((yield self._call("POST", path))))

    def diff(self, sandbox_id: str) -> Plan[dict[str, Any]]:
        """Records created, updated (field by field) and deleted since the last reset."""
        return dict(body((yield self._call("GET", f"/sandboxes/{_segment(sandbox_id)}/diff"))))

    def calls(self, sandbox_id: str) -> Plan[list[dict[str, Any]]]:
        """The API calls made in the sandbox since the last reset."""
        logged = yield self._call("GET", f"/sandboxes/{_segment(sandbox_id)}/log")
        return list(body(logged)["calls"])

    def snapshot(self, sandbox_id: str, name: str) -> Plan[dict[str, Any]]:
        path = f"/sandboxes/{_segment(sandbox_id)}/snapshots"
        return dict(body((yield self._call("POST", path, json={"name": name}, expect=(201,)))))

    def restore(self, sandbox_id: str, name: str) -> Plan[dict[str, Any]]:
        path = f"/sandboxes/{_segment(sandbox_id)}/snapshots/{_segment(name)}/restore"
        return dict(body((yield self._call("POST", path))))

    # Episodes and results

    def start_episode(
        self,
        task: int | dict[str, Any],
        *,
        split: str | None = None,
        id: str | None = None,
        run: str | None = None,
        agent: str | None = None,
        org: str | None = None,
        seed: int | None = None,
    ) -> Plan[dict[str, Any]]:
        """An episode of a task (a task row, its idx in the server's task file, or in
        `split`'s part): its id, prompt, metadata and tools, and its sandbox's access_token.
        The answer is never in it.

        With an `id`, a start whose answer was lost is settled: an episode that never began
        is started again; one that began, whose token the lost answer held, is ended (its
        result shows it unanswered) and Unanswered raised, for the caller to start another."""
        sent = _given(task=task, split=split, id=id, run=run, agent=agent, org=org, seed=seed)
        try:
            made = yield self._call("POST", "/episodes", json=sent, expect=(201,))
        except Unanswered:
            if id is None:
                raise  # nothing to look it up by
            path = f"/episodes/{_segment(id)}"
            found = yield self._call("GET", path, expect=(200, 404))
            if found.status_code == 200:
                yield self._call("DELETE", path, expect=(204, 404), idempotent=True)
                raise
            made = yield self._call("POST", "/episodes", json=sent, expect=(201,))
        return dict(body(made))

    def episode(self, episode_id: str) -> Plan[dict[str, Any]]:
        """The operator's view of an episode: its task, its sandbox while it lives, its result
        (the expected answer included)."""
        return dict(body((yield self._call("GET", f"/episodes/{_segment(episode_id)}"))))

    def answer(self, episode_id: str, response: str) -> Plan[dict[str, Any]]:
        """Grade the episode's answer, once (a second answers 409 EPISODE_ENDED): its reward,
        diff and calls. An answer whose reply was lost is sent again, and a 409 then read
        from the episode's result."""
        path = f"/episodes/{_segment(episode_id)}/answer"
        sent = {"response": response}
        try:
            return dict(body((yield self._call("POST", path, json=sent))))
        except Unanswered:
            # Sent again: a 409 EPISODE_ENDED says the first was graded and kept, as the
            # episode's result shows (an answer is kept once, whichever server took it).
            again = yield self._call("POST", path, json=sent, expect=(200, 409))
            if again.status_code == 200:
                return dict(body(again))
            shown = body((yield self._call("GET", f"/episodes/{_segment(episode_id)}")))
            return {"id": episode_id, **shown["result"], "done": True}

    def end_episode(self, episode_id: str) -> Plan[None]:
        """Delete the episode's sandbox; its result stays. An episode already gone is no
        error."""
        path = f"/episodes/{_segment(episode_id)}"
        yield self._call("DELETE", path, expect=(204, 404))

    def results(
        self,
        *,
        run: str | None = None,
        agent: str | None = None,
        task: str | None = None,
        answered: bool = False,
    ) -> Plan[list[dict[str, Any]]]:
        """Every episode's result (oldest first), with its trajectory."""
        params = _given(run=run, agent=agent, task=task, answered="true" if answered else None)
        return list(body((yield self._call("GET", "/results", params=params)))["results"])

    def purge_result(self, episode_id: str) -> Plan[None]:
        yield self._call("DELETE", f"/results/{_segment(episode_id)}", expect=(204,))

    def purge_run(self, run: str) -> Plan[int]:
        purged = yield self._call("DELETE", "/results", params={"run": run})
        return int(body(purged)["purged"])

    def tasks(self) -> Plan[list[dict[str, Any]]]:
        """The tasks of the server's task file: idx, type, query and metadata of each (and the
        seed of its org where the row names one), never the answer."""
        return list(body((yield self._call("GET", "/tasks")))["tasks"])

    def splits(self) -> Plan[list[dict[str, Any]]]:
        """The fixed splits' parts: name, org, seeds, types, size, SHA-256."""
        return list(body((yield self._call("GET", "/splits")))["splits"])

    def split_tasks(self, name: str) -> Plan[list[dict[str, Any]]]:
        """A split's part's tasks (idx, type, query, metadata, seed), drawn by the server on
        first use."""
        listed = yield self._call("GET", f"/splits/{_segment(name)}/tasks")
        return list(body(listed)["tasks"])


class Control(ControlClient, Blocking):
    """The control plane of a localforce server (blocking)."""

    def __init__(
        self,
        url: str,
        admin_key: str | None = None,
        *,
        timeout: float = TIMEOUT,
        verify: bool | str = True,
    ) -> None:
        super().__init__(url, admin_key)
        self.http = httpx.Client(base_url=self.url, timeout=timeout, verify=verify)

    create_sandbox = blocking(ControlPlans.create_sandbox)
    sandboxes = blocking(ControlPlans.sandboxes)
    sandbox = blocking(ControlPlans.sandbox)
    delete_sandbox = blocking(ControlPlans.delete_sandbox)
    reset_sandbox = blocking(ControlPlans.reset_sandbox)
    diff = blocking(ControlPlans.diff)
    calls = blocking(ControlPlans.calls)
    snapshot = blocking(ControlPlans.snapshot)
    restore = blocking(ControlPlans.restore)
    start_episode = blocking(ControlPlans.start_episode)
    episode = blocking(ControlPlans.episode)
    answer = blocking(ControlPlans.answer)
    end_episode = blocking(ControlPlans.end_episode)
    results = blocking(ControlPlans.results)
    purge_result = blocking(ControlPlans.purge_result)
    purge_run = blocking(ControlPlans.purge_run)
    tasks = blocking(ControlPlans.tasks)
    splits = blocking(ControlPlans.splits)
    split_tasks = blocking(ControlPlans.split_tasks)


class AsyncControl(ControlClient, Awaiting):
    """The control plane of a localforce server (asyncio)."""

    def __init__(
        self,
        url: str,
        admin_key: str | None = None,
        *,
        timeout: float = TIMEOUT,
        verify: bool | str = True,
    ) -> None:
        super().__init__(url, admin_key)
        self.http = httpx.AsyncClient(base_url=self.url, timeout=timeout, verify=verify)

    create_sandbox = awaiting(ControlPlans.create_sandbox)
    sandboxes = awaiting(ControlPlans.sandboxes)
    sandbox = awaiting(ControlPlans.sandbox)
    delete_sandbox = awaiting(ControlPlans.delete_sandbox)
    reset_sandbox = awaiting(ControlPlans.reset_sandbox)
    diff = awaiting(ControlPlans.diff)
    calls = awaiting(ControlPlans.calls)
    snapshot = awaiting(ControlPlans.snapshot)
    restore = awaiting(ControlPlans.restore)
    start_episode = awaiting(ControlPlans.start_episode)
    episode = awaiting(ControlPlans.episode)
    answer = awaiting(ControlPlans.answer)
    end_episode = awaiting(ControlPlans.end_episode)
    results = awaiting(ControlPlans.results)
    purge_result = awaiting(ControlPlans.purge_result)
    purge_run = awaiting(ControlPlans.purge_run)
    tasks = awaiting(ControlPlans.tasks)
    splits = awaiting(ControlPlans.splits)
    split_tasks = awaiting(ControlPlans.split_tasks)
