"""Each org, seeded by its generator at server start and served: /limits/recordCount reports
the published record counts (CRMArena; CRMArena-Pro Table 6 for b2b and b2c)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.conftest import login, make_settings
from tests.crmarena import CRMARENA_COUNTS, PRO_ORGS, pro_counts, served_counts
from tests.databases import DatabaseFactory

COUNTS = {"original": dict(CRMARENA_COUNTS)} | {org: pro_counts(org) for org in PRO_ORGS}


@pytest.fixture(scope="module", params=sorted(COUNTS))
def served(
    request: pytest.FixtureRequest, database_factory: DatabaseFactory
) -> Iterator[tuple[str, TestClient]]:
    """A server on an empty database: its start-up seeds the org by generator."""
    org = str(request.param)
    url = database_factory.new_url()
    settings = make_settings(url, database_factory.workdir, org=org, sandbox_pool_size=0)
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        client.headers["Authorization"] = f"Bearer {login(client)}"
        yield org, client


def test_record_counts_are_the_published_ones(served: tuple[str, TestClient]) -> None:
    org, client = served
    expected = COUNTS[org]
    response = client.get(
        "/services/data/v60.0/limits/recordCount", params={"sObjects": ",".join(expected)}
    )
    assert response.status_code == 200, response.text
    counts = {entry["name"]: entry["count"] for entry in response.json()["sObjects"]}
    assert counts == expected


def test_every_object_is_counted(served: tuple[str, TestClient]) -> None:
    org, client = served
    response = client.get("/services/data/v60.0/limits/recordCount")
    assert response.status_code == 200, response.text
    names = {entry["name"] for entry in response.json()["sObjects"]}
    assert names == set(served_counts(org))
