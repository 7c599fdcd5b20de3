"""Objects' describe envelopes against real orgs' recorded describes, one row an object at the
API version of its recording (fixtures/recorded_envelopes.yaml, with each row's source), over
HTTP on both back ends: the keys, the scalar values, and the urls listed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

ROWS = yaml.safe_load((Path(__file__).parent / "fixtures" / "recorded_envelopes.yaml").read_text())[
    "rows"
]


def described(api: TestClient, row: dict[str, Any]) -> dict[str, Any]:
    response = api.get(f"/services/data/v{row['version']}/sobjects/{row['object']}/describe")
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['object']}-v{r['version']}" for r in ROWS])
def test_an_envelope_has_the_recorded_keys_and_values(api: TestClient, row: dict[str, Any]) -> None:
    left_out = row.get("left_out", {})
    envelope = described(api, row)
    keys = set(row["keys"]) - set(left_out.get("keys", {}))
    assert set(envelope) - set(left_out.get("keys", {})) == keys, row["source"]
    shown = {key: envelope[key] for key in row["flags"] if key in keys}
    assert shown == {key: row["flags"][key] for key in shown}, row["source"]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['object']}-v{r['version']}" for r in ROWS])
def test_an_envelope_lists_the_recorded_urls(api: TestClient, row: dict[str, Any]) -> None:
    left_out = set(row.get("left_out", {}).get("urls", {}))
    urls = described(api, row)["urls"]
    assert set(urls) - left_out == set(row["urls"]) - left_out, row["source"]
    host = str(api.base_url).rstrip("/")
    assert urls["uiNewRecord"] == f"{host}/{described(api, row)['keyPrefix']}/e"


GLOBAL_ROWS = yaml.safe_load(
    (Path(__file__).parent / "fixtures" / "recorded_envelopes.yaml").read_text()
)["global_rows"]


@pytest.mark.parametrize(
    "row", GLOBAL_ROWS, ids=[f"{r['object']}-v{r['version']}" for r in GLOBAL_ROWS]
)
def test_a_global_entry_has_the_recorded_keys(api: TestClient, row: dict[str, Any]) -> None:
    """The keys and the urls listed: the recording's values were edited (Lead's keyPrefix is
    null there)."""
    response = api.get(f"/services/data/v{row['version']}/sobjects")
    assert response.status_code == 200, response.text
    [entry] = [e for e in response.json()["sobjects"] if e["name"] == row["object"]]
    assert sorted(entry) == row["keys"], row["source"]
    left_out = set(row.get("left_out", {}).get("urls", {}))
    recorded = set(row.get("urls", entry["urls"]))
    assert set(entry["urls"]) - left_out == recorded - left_out, row["source"]
