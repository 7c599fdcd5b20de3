"""The fuzzer of `make fuzz` (bench/fuzz.py) in miniature, so that it keeps working: its
generated requests, through the app, all get an answer it judges a Salesforce answer."""

from __future__ import annotations

import os

import httpx
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings

from app.api.state import AppState
from bench.fuzz import judge
from bench.fuzz_requests import Call, calls

EXAMPLES = int(os.environ.get("LOCALFORCE_FUZZ_SMOKE_EXAMPLES", "150"))


def test_generated_requests_get_salesforce_answers(api: TestClient) -> None:
    state: AppState = api.app.state.localforce  # type: ignore[attr-defined]
    objects = list(state.registry)
    headers = {"Authorization": api.headers["Authorization"]}

    @settings(
        max_examples=EXAMPLES,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(call=calls(objects, headers))
    def answered(call: Call) -> None:
        raw = {name.encode(): value.encode() for name, value in call.headers.items()}
        try:
            response = api.request(call.method, call.path, headers=raw, content=call.body)
        except httpx.InvalidURL:  # over httpx's own 64 kB: the server is never asked
            return
        assert judge(call, response) is None, (call.method, call.path[:300], response.text[:300])

    answered()
