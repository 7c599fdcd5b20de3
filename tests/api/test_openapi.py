"""/openapi.json says what each route takes and answers (schemathesis holds the server to it in
`make fuzz`): the Salesforce error array on every failure, no 422, sessions as bearer security,
the parameters and bodies handlers read themselves, and the values the org accepts."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.routing import ERROR_ARRAY, JSON
from app.services.org import NEWEST_API_VERSION, OLDEST_API_VERSION

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
