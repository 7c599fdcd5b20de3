"""The fuzzer of `make fuzz` (bench/fuzz.py) in miniature, so that it keeps working: its
generated requests, through the app, all get an answer it judges a Salesforce answer."""

from __future__ import annotations

import os

from fastapi.testclient import TestClient
from hypothesis import given

from app.api.state import AppState
from bench.fuzz import judge
from bench.fuzz_requests import Call, calls, run_settings, send

EXAMPLES = int(os.environ.get("LOCALFORCE_FUZZ_SMOKE_EXAMPLES", "150"))


def test_generated_requests_get_salesforce_answers(api: TestClient) -> None:
    state: AppState = api.app.state.localforce  # type: ignore[attr-defined]
    objects = list(state.registry)
    headers = {"Authorization": api.headers["Authorization"]}

    @run_settings(EXAMPLES)
    @given(call=calls(objects, headers))
    def answered(call: Call) -> None:
        response = send(api, call)
        if response is None:
            return
        assert judge(call, response) is None, (call.method, call.path[:300], response.text[:300])

    answered()
