"""/openapi.json says what each route takes and answers (schemathesis holds the server to it in
`make fuzz`): the Salesforce error array on every failure, no 422, sessions as bearer security,
the parameters and bodies handlers read themselves, and the values the org accepts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.routing import ERROR_ARRAY, JSON
from app.services.org import NEWEST_API_VERSION, OLDEST_API_VERSION
from tests.conftest import API, login

DATA = "/services/data/{version}"
OWN_ERROR_FORMAT_PATHS = ("/services/oauth2", "/id/")


@pytest.fixture(scope="module")
def document(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def operation(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    found: dict[str, Any] = document["paths"][path][method]
    return found


def test_no_operation_promises_a_422_and_every_failure_is_the_error_array(
    document: dict[str, Any],
) -> None:
    for path, methods in document["paths"].items():
        for method, declared in methods.items():
            assert "422" not in declared["responses"], (method, path)
            for status, response in declared["responses"].items():
                # OAuth's errors are its own JSON; the identity service's, plain text.
                if status.startswith("4") and not path.startswith(OWN_ERROR_FORMAT_PATHS):
                    schema = response["content"][JSON]["schema"]
                    assert ERROR_ARRAY in (schema, *schema.get("anyOf", [])), (method, path)
    assert "HTTPValidationError" not in document["components"]["schemas"]


@pytest.mark.parametrize(
    ("method", "path", "statuses"),
    [
        ("get", f"{DATA}/query", {"200", "400", "401", "404"}),
        ("post", f"{DATA}/sobjects/{{sobject}}", {"201", "400", "401", "404", "413", "415"}),
        (
            "patch",
            f"{DATA}/sobjects/{{sobject}}/{{record_id}}",
            {"204", "400", "401", "404", "413", "415"},
        ),
        (
            "patch",
            f"{DATA}/sobjects/{{sobject}}/{{field}}/{{value}}",
            {"200", "201", "204", "300", "400", "401", "404", "413", "415"},
        ),
        ("delete", f"{DATA}/sobjects/{{sobject}}/{{record_id}}", {"204", "400", "401", "404"}),
        ("post", f"{DATA}/composite/tree/{{sobject}}", {"201", "400", "401", "404", "413", "415"}),
        ("get", "/services/data", {"200", "400"}),
        ("post", "/services/oauth2/token", {"200", "400", "413"}),
        ("post", "/__localforce/sandboxes", {"201", "400", "401", "403", "409"}),
    ],
)
def test_each_route_declares_the_statuses_it_answers(
    document: dict[str, Any], method: str, path: str, statuses: set[str]
) -> None:
    assert set(operation(document, method, path)["responses"]) == statuses


def test_session_routes_declare_bearer_security_and_login_routes_none(
    document: dict[str, Any],
) -> None:
    assert document["components"]["securitySchemes"]["salesforceSession"]["scheme"] == "bearer"
    assert operation(document, "get", f"{DATA}/query")["security"] == [{"salesforceSession": []}]
    for method, path in [("post", "/services/oauth2/token"), ("get", "/services/data")]:
        assert "security" not in operation(document, method, path)


def test_parameters_handlers_read_themselves_are_declared(document: dict[str, Any]) -> None:
    parameters = operation(document, "get", f"{DATA}/query")["parameters"]
    [q] = [item for item in parameters if item["name"] == "q"]
    assert q == {
        "name": "q",
        "in": "query",
        "required": True,
        "description": "A SOQL query",
        "schema": {"type": "string", "minLength": 1},
    }
    body = operation(document, "post", f"{DATA}/composite")["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema["required"] == ["compositeRequest"]
    assert schema["properties"]["compositeRequest"]["maxItems"] == 25


def test_path_values_are_what_the_org_accepts(document: dict[str, Any]) -> None:
    parameters = {
        item["name"]: item["schema"]
        for item in operation(document, "get", f"{DATA}/sobjects/{{sobject}}/{{record_id}}")[
            "parameters"
        ]
    }
    versions = [f"v{major}.0" for major in range(OLDEST_API_VERSION, NEWEST_API_VERSION + 1)]
    assert parameters["version"]["enum"] == versions
    assert {"Account", "Case", "Knowledge__kav"} <= set(parameters["sobject"]["enum"])
    assert parameters["record_id"]["pattern"] == "^[a-zA-Z0-9]{15}(?:[a-zA-Z0-9]{3})?$"
    org = document["components"]["schemas"]["SandboxCreate"]["properties"]["org"]
    assert org["anyOf"][0]["enum"] == ["b2b", "b2c", "original"]


def test_soap_is_left_to_its_wsdl(document: dict[str, Any]) -> None:
    assert not [path for path in document["paths"] if path.startswith("/services/Soap")]


# A value for each path parameter that names no literal segment of another route.
PATH_VALUES = {
    "version": f"v{NEWEST_API_VERSION}",
    "sobject": "Account",
    "record_id": "001000000000001AAA",
    "part": "successfulResults",
}
IMPLICIT_METHODS = {"HEAD", "OPTIONS"}  # served wherever GET is, and everywhere


def _concrete(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda name: PATH_VALUES.get(name[1], "x1"), path)


def test_the_allow_header_of_each_path_lists_the_methods_the_document_gives_it(
    client: TestClient, document: dict[str, Any]
) -> None:
    wrong = {}
    for path, operations in document["paths"].items():
        answer = client.options(_concrete(path))
        allowed = {method.strip() for method in answer.headers.get("allow", "").split(",")}
        declared = {method.upper() for method in operations}
        if answer.status_code != 200 or allowed - IMPLICIT_METHODS != declared:
            wrong[path] = (answer.status_code, sorted(allowed), sorted(declared))
    assert wrong == {}


def test_patch_on_a_describe_path_is_a_405_not_an_upsert_by_a_field_describe(
    client: TestClient,
) -> None:
    token = login(client)
    answer = client.patch(
        f"{API}/sobjects/Account/describe/layouts",
        json={"Name": "x"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 405
    assert answer.headers["allow"] == "HEAD, GET, OPTIONS"
    assert answer.json() == [
        {
            "message": "HTTP Method 'PATCH' not allowed. Allowed are HEAD,GET",
            "errorCode": "METHOD_NOT_ALLOWED",
        }
    ]


def test_a_bulk_result_part_is_one_of_the_three_and_batches_takes_only_put(
    client: TestClient,
) -> None:
    headers = {"Authorization": f"Bearer {login(client)}"}
    batches = client.get(f"{API}/jobs/ingest/750000000000001AAA/batches", headers=headers)
    assert (batches.status_code, batches.headers["allow"]) == (405, "PUT, OPTIONS")
    unknown = client.get(f"{API}/jobs/ingest/750000000000001AAA/otherResults", headers=headers)
    assert unknown.status_code == 404


# What schemathesis sent as schema-valid and the server refused: each is now either refused
# by the document too, or accepted by the server.
def test_a_recent_limit_is_documented_as_a_positive_count(document: dict[str, Any]) -> None:
    [limit] = operation(document, "get", f"{DATA}/recent")["parameters"][1:]
    pattern = re.compile(limit["schema"]["pattern"])
    assert [
        text for text in ("", "0", "000", "-1", "1.5", "1234567890") if pattern.search(text)
    ] == []
    assert all(pattern.search(text) for text in ("1", "007", "200", "999999999"))


def test_a_bulk_job_needs_its_body_and_names_what_it_does(document: dict[str, Any]) -> None:
    required = {"ingest": ["object", "operation"], "query": ["operation", "query"]}
    operations = {
        "ingest": ["insert", "update", "upsert", "delete"],
        "query": ["query", "queryAll"],
    }
    for kind in ("ingest", "query"):
        body = operation(document, "post", f"{DATA}/jobs/{kind}")["requestBody"]
        assert body["required"] is True
        schema = body["content"]["application/json"]["schema"]
        assert (schema["type"], schema["required"]) == ("object", required[kind])
        assert schema["properties"]["operation"] == {"enum": operations[kind]}
        assert schema["properties"]["contentType"] == {"enum": ["CSV"]}
        assert schema["properties"]["lineEnding"] == {"enum": ["CRLF", "LF"]}


def test_without_a_task_file_an_episode_names_its_task_by_row_and_none_are_listed(
    client: TestClient, document: dict[str, Any]
) -> None:
    task = document["components"]["schemas"]["EpisodeCreate"]["properties"]["task"]
    assert task["anyOf"] == [{"type": "object"}]
    listed = client.get("/__localforce/tasks")
    assert (listed.status_code, listed.json()) == (200, {"tasks": []})


def test_results_document_each_format_they_answer_in(
    client: TestClient, document: dict[str, Any]
) -> None:
    content = operation(document, "get", "/__localforce/results")["responses"]["200"]["content"]
    for format_, media in (("json", JSON), ("jsonl", "application/x-ndjson"), ("csv", "text/csv")):
        answer = client.get("/__localforce/results", params={"format": format_})
        assert answer.status_code == 200
        assert answer.headers["content-type"].split(";")[0] == media.split(";")[0]
        assert media in content
