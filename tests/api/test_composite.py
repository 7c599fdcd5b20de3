"""The composite family: success, partial failure and allOrNone rollback, with nothing
half-written afterwards."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import API

HALTED = [
    {
        "errorCode": "PROCESSING_HALTED",
        "message": "The transaction was rolled back since another operation in the same "
        "transaction failed.",
    }
]
ROLLED_BACK = {
    "statusCode": "ALL_OR_NONE_OPERATION_ROLLED_BACK",
    "message": "Record rolled back because not all records were valid and the request was "
    "using AllOrNone header",
    "fields": [],
}


def count(api: TestClient, soql: str) -> int:
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    return int(response.json()["totalSize"])


def account_and_contact(name: str, email: str = "a@example.com") -> list[dict[str, Any]]:
    return [
        {
            "method": "POST",
            "url": f"{API}/sobjects/Account",
            "referenceId": "refAccount",
            "body": {"Name": name},
        },
        {
            "method": "POST",
            "url": f"{API}/sobjects/Contact",
            "referenceId": "refContact",
            "body": {"LastName": "Smith", "Email": email, "AccountId": "@{refAccount.id}"},
        },
        {
            "method": "GET",
            "url": f"{API}/query?q=SELECT+Id,AccountId+FROM+Contact"
            "+WHERE+AccountId='@{refAccount.id}'",
            "referenceId": "refQuery",
        },
        {
            "method": "PATCH",
            "url": f"{API}/sobjects/Contact/@{{refQuery.records[0].Id}}",
            "referenceId": "refUpdate",
            "body": {"FirstName": "Jo"},
        },
    ]


def test_composite_references_and_response_shape(api: TestClient) -> None:
    body = {"allOrNone": True, "compositeRequest": account_and_contact("Composite Co")}
    response = api.post(f"{API}/composite", json=body)
    assert response.status_code == 200, response.text
    answers = response.json()["compositeResponse"]
    assert [a["referenceId"] for a in answers] == [
        "refAccount",
        "refContact",
        "refQuery",
        "refUpdate",
    ]
    account = answers[0]
    assert list(account) == ["body", "httpHeaders", "httpStatusCode", "referenceId"]
    assert account["httpStatusCode"] == 201
    account_id = account["body"]["id"]
    assert account["body"] == {"id": account_id, "success": True, "errors": []}
    assert account["httpHeaders"] == {"Location": f"{API}/sobjects/Account/{account_id}"}
    query = answers[2]
    assert query["httpStatusCode"] == 200
    assert query["body"]["totalSize"] == 1
    assert query["body"]["records"][0]["AccountId"] == account_id
    assert answers[3] == {
        "body": None,
        "httpHeaders": {},
        "httpStatusCode": 204,
        "referenceId": "refUpdate",
    }
    contact = api.get(f"{API}/sobjects/Contact/{answers[1]['body']['id']}").json()
    assert contact["AccountId"] == account_id
    assert contact["FirstName"] == "Jo"


def test_composite_all_or_none_rolls_everything_back(api: TestClient) -> None:
    subrequests = account_and_contact("Rolled Back Co", email="not an email")
    response = api.post(
        f"{API}/composite", json={"allOrNone": True, "compositeRequest": subrequests}
    )
    assert response.status_code == 200
    answers = response.json()["compositeResponse"]
    assert answers[0]["httpStatusCode"] == 400 and answers[0]["body"] == HALTED
    assert answers[1]["httpStatusCode"] == 400
    assert answers[1]["body"][0]["errorCode"] == "INVALID_EMAIL_ADDRESS"
    assert answers[1]["body"][0]["fields"] == ["Email"]
    assert [a["body"] for a in answers[2:]] == [HALTED, HALTED]
    assert count(api, "SELECT Id FROM Account WHERE Name = 'Rolled Back Co'") == 0


def test_composite_partial_failure_keeps_the_rest(api: TestClient) -> None:
    subrequests = account_and_contact("Partial Co", email="not an email")
    response = api.post(
        f"{API}/composite", json={"allOrNone": False, "compositeRequest": subrequests}
    )
    answers = response.json()["compositeResponse"]
    assert answers[0]["httpStatusCode"] == 201
    assert answers[1]["body"][0]["errorCode"] == "INVALID_EMAIL_ADDRESS"
    assert answers[2]["httpStatusCode"] == 200 and answers[2]["body"]["totalSize"] == 0
    assert answers[3]["httpStatusCode"] == 400
    assert answers[3]["body"] == [
        {
            "errorCode": "PROCESSING_HALTED",
            "message": "Invalid reference specified. No value for refQuery.records[0].Id "
            "found in refQuery.",
        }
    ]
    assert count(api, "SELECT Id FROM Account WHERE Name = 'Partial Co'") == 1
    assert count(api, "SELECT Id FROM Contact WHERE Account.Name = 'Partial Co'") == 0


def test_composite_bad_requests(api: TestClient) -> None:
    duplicate = [
        {"method": "GET", "url": f"{API}/sobjects/Account/describe", "referenceId": "a"},
        {"method": "GET", "url": f"{API}/sobjects/Account/describe", "referenceId": "a"},
    ]
    response = api.post(f"{API}/composite", json={"compositeRequest": duplicate})
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_INPUT"
    too_many = [
        {"method": "GET", "url": f"{API}/limits", "referenceId": f"r{i}"} for i in range(26)
    ]
    response = api.post(f"{API}/composite", json={"compositeRequest": too_many})
    assert response.status_code == 400
    unsupported = [
        {"method": "GET", "url": f"{API}/limits", "referenceId": "limits"},
        {"method": "GET", "url": f"{API}/nowhere", "referenceId": "nowhere"},
    ]
    answers = api.post(f"{API}/composite", json={"compositeRequest": unsupported}).json()
    assert answers["compositeResponse"][0]["httpStatusCode"] == 501
    assert answers["compositeResponse"][0]["body"][0]["errorCode"] == "FUNCTIONALITY_NOT_ENABLED"
    assert answers["compositeResponse"][1]["httpStatusCode"] == 404
    assert api.post(f"{API}/composite", content=b"{").json()[0]["errorCode"] == (
        "JSON_PARSER_ERROR"
    )


def test_batch_results_and_halt_on_error(api: TestClient) -> None:
    account_id = api.post(f"{API}/sobjects/Account", json={"Name": "Batch Co"}).json()["id"]
    requests = [
        {
            "method": "PATCH",
            "url": f"v59.0/sobjects/Account/{account_id}",
            "richInput": {"Name": "Batch 2"},
        },
        {"method": "GET", "url": "v59.0/query/?q=SELECT+Name+FROM+Account+WHERE+Name='Batch 2'"},
        {"method": "POST", "url": "v59.0/sobjects/Contact", "richInput": {"FirstName": "x"}},
        {"method": "POST", "url": f"{API}/sobjects/Account", "richInput": {"Name": "After"}},
    ]
    body = api.post(f"{API}/composite/batch", json={"batchRequests": requests}).json()
    assert body["hasErrors"] is True
    statuses = [result["statusCode"] for result in body["results"]]
    assert statuses == [204, 200, 400, 201]
    assert body["results"][0] == {"statusCode": 204, "result": None}
    assert body["results"][1]["result"]["totalSize"] == 1
    assert body["results"][2]["result"][0]["errorCode"] == "REQUIRED_FIELD_MISSING"

    halted = api.post(
        f"{API}/composite/batch",
        json={"haltOnError": True, "batchRequests": [requests[2], requests[3]]},
    ).json()
    assert halted == {
        "hasErrors": True,
        "results": [
            halted["results"][0],
            {
                "statusCode": 412,
                "result": [
                    {
                        "errorCode": "BATCH_PROCESSING_HALTED",
                        "message": "Batch processing halted per request",
                    }
                ],
            },
        ],
    }
    assert count(api, "SELECT Id FROM Account WHERE Name = 'After'") == 1
    ok = api.post(f"{API}/composite/batch", json={"batchRequests": requests[:2]}).json()
    assert ok["hasErrors"] is False


def tree(name: str, email: str) -> dict[str, Any]:
    return {
        "records": [
            {
                "attributes": {"type": "Account", "referenceId": "ref1"},
                "name": name,
                "Contacts": {
                    "records": [
                        {
                            "attributes": {"type": "Contact", "referenceId": "ref2"},
                            "LastName": "Tree",
                            "Email": email,
                        },
                        {
                            "attributes": {"type": "Contact", "referenceId": "ref3"},
                            "LastName": f"Leaf {name}",
                        },
                    ]
                },
            }
        ]
    }


def test_tree_creates_parents_and_children(api: TestClient) -> None:
    response = api.post(f"{API}/composite/tree/Account", json=tree("Tree Co", "t@example.com"))
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["hasErrors"] is False
    assert [r["referenceId"] for r in body["results"]] == ["ref1", "ref2", "ref3"]
    account_id = body["results"][0]["id"]
    assert list(body["results"][0]) == ["referenceId", "id"]
    contact = api.get(f"{API}/sobjects/Contact/{body['results'][1]['id']}").json()
    assert contact["AccountId"] == account_id


def test_tree_failure_writes_nothing(api: TestClient) -> None:
    response = api.post(f"{API}/composite/tree/Account", json=tree("Bad Tree Co", "bad"))
    assert response.status_code == 400
    assert response.json() == {
        "hasErrors": True,
        "results": [
            {
                "referenceId": "ref2",
                "errors": [
                    {
                        "statusCode": "INVALID_EMAIL_ADDRESS",
                        "message": "Email: invalid email address: bad",
                        "fields": ["Email"],
                    }
                ],
            }
        ],
    }
    assert count(api, "SELECT Id FROM Account WHERE Name = 'Bad Tree Co'") == 0
    assert count(api, "SELECT Id FROM Contact WHERE LastName = 'Leaf Bad Tree Co'") == 0


def test_collections_create_update_delete(api: TestClient) -> None:
    records = [
        {"attributes": {"type": "Account"}, "Name": "Coll A"},
        {"attributes": {"type": "Contact"}, "LastName": "Coll B"},
        {"attributes": {"type": "Contact"}, "FirstName": "no last name"},
    ]
    created = api.post(f"{API}/composite/sobjects", json={"allOrNone": False, "records": records})
    assert created.status_code == 200
    results = created.json()
    assert results[0] == {"id": results[0]["id"], "success": True, "errors": []}
    assert results[1]["success"] is True
    assert results[2] == {
        "id": None,
        "success": False,
        "errors": [
            {
                "statusCode": "REQUIRED_FIELD_MISSING",
                "message": "Required fields are missing: [LastName]",
                "fields": ["LastName"],
            }
        ],
    }
    ids = [results[0]["id"], results[1]["id"]]
    updates = [
        {"attributes": {"type": "Account"}, "id": ids[0], "Name": "Coll A2"},
        {"attributes": {"type": "Contact"}, "Id": ids[1], "Email": "nope"},
    ]
    updated = api.patch(f"{API}/composite/sobjects", json={"records": updates}).json()
    assert updated[0] == {"id": ids[0], "success": True, "errors": []}
    assert updated[1]["id"] == ids[1] and updated[1]["success"] is False
    assert updated[1]["errors"][0]["statusCode"] == "INVALID_EMAIL_ADDRESS"
    assert "errorCode" not in updated[1]["errors"][0]

    deleted = api.delete(f"{API}/composite/sobjects", params={"ids": ",".join(ids)}).json()
    assert deleted == [{"id": i, "success": True, "errors": []} for i in ids]
    again = api.delete(f"{API}/composite/sobjects", params={"ids": ids[0]}).json()
    assert again[0]["errors"][0]["statusCode"] == "ENTITY_IS_DELETED"
    assert count(api, "SELECT Id FROM Account WHERE Name LIKE 'Coll A%'") == 0


def test_collections_all_or_none(api: TestClient) -> None:
    records = [
        {"attributes": {"type": "Account"}, "Name": "AON A"},
        {"attributes": {"type": "Contact"}, "FirstName": "no last name"},
    ]
    results = api.post(
        f"{API}/composite/sobjects", json={"allOrNone": True, "records": records}
    ).json()
    assert results[0] == {"id": None, "success": False, "errors": [ROLLED_BACK]}
    assert results[1]["errors"][0]["statusCode"] == "REQUIRED_FIELD_MISSING"
    assert count(api, "SELECT Id FROM Account WHERE Name = 'AON A'") == 0

    account_id = api.post(f"{API}/sobjects/Account", json={"Name": "AON B"}).json()["id"]
    deleted = api.delete(
        f"{API}/composite/sobjects",
        params={"ids": f"{account_id},001000000000000AAA", "allOrNone": "true"},
    ).json()
    assert deleted[0] == {"id": account_id, "success": False, "errors": [ROLLED_BACK]}
    assert deleted[1]["success"] is False
    assert count(api, "SELECT Id FROM Account WHERE Name = 'AON B'") == 1


def test_collections_limits_retrieve_and_upsert(api: TestClient) -> None:
    records = [{"attributes": {"type": "Account"}, "Name": f"Many {i}"} for i in range(201)]
    response = api.post(f"{API}/composite/sobjects", json={"records": records})
    assert response.status_code == 400
    assert response.json() == [
        {
            "message": "record limit reached. cannot submit more than 200 records into this call",
            "errorCode": "EXCEEDED_ID_LIMIT",
        }
    ]
    assert count(api, "SELECT Id FROM Account WHERE Name LIKE 'Many %'") == 0

    upserts = [
        {"attributes": {"type": "Product2"}, "External_ID__c": "CU-1", "Name": "Coll Up"},
    ]
    first = api.patch(
        f"{API}/composite/sobjects/Product2/External_ID__c", json={"records": upserts}
    ).json()
    assert first[0]["created"] is True and first[0]["success"] is True
    second = api.patch(
        f"{API}/composite/sobjects/Product2/External_ID__c", json={"records": upserts}
    ).json()
    assert second == [{"id": first[0]["id"], "success": True, "errors": [], "created": False}]

    found = api.get(
        f"{API}/composite/sobjects/Product2",
        params={"ids": f"{first[0]['id']},01t000000000000AAA", "fields": "Name"},
    ).json()
    assert found[0]["Name"] == "Coll Up" and found[1] is None
    posted = api.post(
        f"{API}/composite/sobjects/Product2", json={"ids": [first[0]["id"]], "fields": ["Name"]}
    ).json()
    assert posted == [found[0]]

    # A retrieve by POST takes up to 2,000 ids; by GET, 200.
    product_ids = [
        row["Id"]
        for row in api.get(f"{API}/query", params={"q": "SELECT Id FROM Product2"}).json()[
            "records"
        ]
    ]
    many = (product_ids * 2000)[:2000]
    posted = api.post(f"{API}/composite/sobjects/Product2", json={"ids": many, "fields": ["Id"]})
    assert posted.status_code == 200
    assert [row["Id"] for row in posted.json()] == many
    too_many = api.post(
        f"{API}/composite/sobjects/Product2", json={"ids": [*many, many[0]], "fields": ["Id"]}
    )
    assert too_many.status_code == 400
    assert too_many.json()[0]["message"] == (
        "record limit reached. cannot submit more than 2000 records into this call"
    )
    by_get = api.get(
        f"{API}/composite/sobjects/Product2", params={"ids": ",".join(many[:201]), "fields": "Id"}
    )
    assert by_get.status_code == 400
    assert by_get.json()[0]["errorCode"] == "EXCEEDED_ID_LIMIT"


def test_resources_list_composite(api: TestClient) -> None:
    assert api.get(f"{API}/").json()["composite"] == f"{API}/composite"


def test_collections_upsert_on_id_creates_a_record_whose_id_is_null(api: TestClient) -> None:
    records = [{"attributes": {"type": "Account"}, "Id": None, "Name": "Null Id Upsert"}]
    response = api.patch(f"{API}/composite/sobjects/Account/Id", json={"records": records})
    assert response.status_code == 200, response.text
    [made] = response.json()
    assert made == {"id": made["id"], "success": True, "errors": [], "created": True}
    assert count(api, "SELECT Id FROM Account WHERE Name = 'Null Id Upsert'") == 1


def test_a_rolled_back_upsert_still_says_whether_it_would_have_created(api: TestClient) -> None:
    existing = api.patch(
        f"{API}/sobjects/Product2/External_ID__c/RB-0", json={"Name": "Rolled back 0"}
    ).json()["id"]
    records = [
        {"attributes": {"type": "Product2"}, "External_ID__c": "RB-0", "Name": "Renamed"},
        {"attributes": {"type": "Product2"}, "External_ID__c": "RB-1", "Name": "Rolled back"},
        {"attributes": {"type": "Product2"}, "External_ID__c": "RB-2", "Name": None},
    ]
    response = api.patch(
        f"{API}/composite/sobjects/Product2/External_ID__c",
        json={"allOrNone": True, "records": records},
    )
    assert response.status_code == 200, response.text
    updated, created, bad = response.json()
    assert updated == {"id": None, "success": False, "errors": [ROLLED_BACK], "created": False}
    assert created == {"id": None, "success": False, "errors": [ROLLED_BACK], "created": True}
    assert (bad["success"], bad["created"], bad["errors"][0]["statusCode"]) == (
        False,
        False,
        "REQUIRED_FIELD_MISSING",
    )
    assert count(api, "SELECT Id FROM Product2 WHERE External_ID__c LIKE 'RB-%'") == 1
    assert api.get(f"{API}/sobjects/Product2/{existing}").json()["Name"] == "Rolled back 0"
