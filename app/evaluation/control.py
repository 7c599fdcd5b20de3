"""localforce's control plane, as the runner reaches it over HTTP with the admin key: episodes
started under an id the runner chooses, answered, looked up and ended."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

ADMIN_HEADER = "X-Localforce-Admin-Key"


class ControlError(Exception):
    """The control plane refused a call or could not be reached: the run cannot go on."""


@dataclass(frozen=True)
class StartedEpisode:
    """What an episode's agent is given: the task's words, never its answer, and a token
    that reaches the episode's sandbox only."""

    id: str
    prompt: str
    metadata: dict[str, Any]
    org: str
    access_token: str


class Control:
    """The episodes of one localforce server."""

    def __init__(self, base_url: str, admin_key: str | None, *, timeout: float = 120) -> None:
        headers = {ADMIN_HEADER: admin_key} if admin_key else {}
        self.base_url = base_url.rstrip("/")
        self.http = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise ControlError(f"localforce at {self.base_url} did not answer: {error}") from error

    async def start(
        self,
        episode_id: str,
        task: dict[str, Any],
        *,
        run: str,
        agent: str,
        org: str | None = None,
        seed: int | None = None,
    ) -> StartedEpisode:
        """An episode of the task on the org generated from `seed` (None: the server's org,
        and the seed the task's row names, else the server's)."""
        body = {
            "id": episode_id,
            "task": task,
            "run": run,
            "agent": agent,
            "org": org,
            "seed": seed,
        }
        response = await self._call("POST", "/__localforce/episodes", json=body)
        made = _json(response, 201)
        return StartedEpisode(
            id=made["id"],
            prompt=made["prompt"],
            metadata=made["metadata"],
            org=made["sandbox"]["org"],
            access_token=made["access_token"],
        )

    async def result(self, episode_id: str) -> dict[str, Any] | None:
        """The episode's result row (None: no such episode)."""
        response = await self._call("GET", f"/__localforce/episodes/{episode_id}")
        if response.status_code == 404:
            return None
        found: dict[str, Any] = _json(response, 200)["result"]
        return found

    async def answer(self, episode_id: str, response: str) -> dict[str, Any]:
        """Grade the episode's answer (its first is final)."""
        answered = await self._call(
            "POST", f"/__localforce/episodes/{episode_id}/answer", json={"response": response}
        )
        graded: dict[str, Any] = _json(answered, 200)
        return graded

    async def close(self, episode_id: str) -> None:
        """Delete the episode's sandbox; its result stays."""
        response = await self._call("DELETE", f"/__localforce/episodes/{episode_id}")
        if response.status_code not in (204, 404):
            _json(response, 204)

    async def discard(self, episode_id: str) -> None:
        """Delete an episode the run left unanswered, sandbox and result row."""
        await self.close(episode_id)
        response = await self._call("DELETE", f"/__localforce/results/{episode_id}")
        if response.status_code not in (204, 404):
            _json(response, 204)


def _json(response: httpx.Response, status: int) -> Any:
    if response.status_code != status:
        raise ControlError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}: {response.text[:500]}"
        )
    return response.json() if response.content else None
