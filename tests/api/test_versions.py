"""Versions, resources, limits and record counts."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.conftest import API
from tests.crmarena import served_counts


def test_versions_need_no_login_and_ascend(client: TestClient) -> None:
    for path in ("/services/data", "/services/data/"):
        response = client.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json;charset=UTF-8"
        versions = response.json()
        assert versions[0] == {
            "label": "Winter '11",
            "url": "/services/data/v20.0",
            "version": "20.0",
        }
        assert {"label": "Winter '24", "url": "/services/data/v59.0", "version": "59.0"} in versions
        numbers = [float(v["version"]) for v in versions]
        assert numbers == sorted(numbers)


def test_resources_echo_the_requested_version(api: TestClient) -> None:
    for version in ("v20.0", "v59.0", "v62.0"):
        response = api.get(f"/services/data/{version}/")
        assert response.status_code == 200
        body = response.json()
        assert body["sobjects"] == f"/services/data/{version}/sobjects"
        assert body["query"] == f"/services/data/{version}/query"
        assert body["identity"].startswith("https://testserver/id/00D")


def test_unknown_versions_are_not_found(api: TestClient) -> None:
    for version in ("v38", "v19.0", "v99.0", "59.0", "vabc.0"):
        response = api.get(f"/services/data/{version}/sobjects")
        assert response.status_code == 404, version
        assert response.json() == [
            {"message": "The requested resource does not exist", "errorCode": "NOT_FOUND"}
        ]


def test_missing_or_unknown_token_is_invalid_session(client: TestClient) -> None:
    expected = [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
        response = client.get(f"{API}/sobjects", headers=headers)
        assert response.status_code == 401
        assert response.json() == expected


def test_limits_report_api_usage(api: TestClient) -> None:
    response = api.get(f"{API}/limits/")
    assert response.status_code == 200
    body = response.json()
    assert body["DailyApiRequests"]["Max"] == 15000
    assert 0 < body["DailyApiRequests"]["Remaining"] < 15000
    assert body["DataStorageMB"] == {"Max": 1024, "Remaining": 1024}
    assert response.headers["sforce-limit-info"].startswith("api-usage=")


def test_record_count_matches_the_crmarena_dump(api: TestClient) -> None:
    response = api.get(f"{API}/limits/recordCount")
    assert response.status_code == 200
    counts = {entry["name"]: entry["count"] for entry in response.json()["sObjects"]}
    assert counts == served_counts("original")


def test_record_count_filters_by_object(api: TestClient) -> None:
    response = api.get(f"{API}/limits/recordCount", params={"sObjects": "Case,Issue__c"})
    assert response.json() == {
        "sObjects": [{"count": 977, "name": "Case"}, {"count": 10, "name": "Issue__c"}]
    }


def test_composite_is_built_and_unknown_resources_are_404(api: TestClient) -> None:
    response = api.post(f"{API}/composite", content=b"{}")
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_INPUT"
    assert api.get(f"{API}/nonsense").status_code == 404
