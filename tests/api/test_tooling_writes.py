"""The Tooling API's writes of StaticResource: created from JSON (Body as base64) or from
multipart/form-data (Body's bytes as a part of their own), retrieved with Body as the URL of
its content, its content read as bytes (through the Tooling API and the REST API alike),
queried, updated and deleted; Salesforce's refusals of a bad name, a name taken, a body that is
not base64, a missing field and a multipart body that cannot be read. The other Tooling
objects' writes still answer the 501 that names them. On both back ends."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from typing import Any

import pytest
from fastapi.testclient import TestClient

V = "/services/data/v59.0"
T = f"{V}/tooling"
RESOURCES = f"{T}/sobjects/StaticResource"


def small_zip() -> bytes:
    """A zip of one file: bytes that are not UTF-8 text."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "hello, world\n")
    return out.getvalue()


ZIP = small_zip()
ZIP_BASE64 = base64.b64encode(ZIP).decode()


def resource(name: str, **overrides: Any) -> dict[str, Any]:
    return {
        "Name": name,
        "ContentType": "application/zip",
        "CacheControl": "Private",
        "Body": ZIP_BASE64,
        **overrides,
    }


def create(api: TestClient, body: dict[str, Any]) -> str:
    response = api.post(RESOURCES, json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def multipart(record: dict[str, Any], parts: list[tuple[str, bytes]], boundary: str) -> bytes:
    """A body as jsforce's `multipartFileFields` sends it: the record's JSON, then each binary
    part named after its field."""
    lines = [
        f"--{boundary}".encode(),
        b'Content-Disposition: form-data; name="StaticResource"',
        b"Content-Type: application/json",
        b"",
        json.dumps(record).encode(),
    ]
    for name, content in parts:
        lines += [
            f"--{boundary}".encode(),
            f'Content-Disposition: form-data; name="{name}"; filename="test.zip"'.encode(),
            b"Content-Type: application/zip",
            b"",
            content,
        ]
    return b"\r\n".join([*lines, f"--{boundary}--".encode(), b""])


def post_multipart(api: TestClient, body: bytes, boundary: str | None = "XyZ") -> Any:
    declared = "multipart/form-data" + (f"; boundary={boundary}" if boundary else "")
    return api.post(RESOURCES, content=body, headers={"Content-Type": declared})


def error(message: str, code: str, fields: list[str] | None = None) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"message": message, "errorCode": code}
    if fields is not None:
        body["fields"] = fields
    return [body]


def test_a_created_resource_is_retrieved_with_its_body_as_a_url(api: TestClient) -> None:
    response = api.post(RESOURCES, json=resource("Tw_Created", Description="A zip"))
    assert response.status_code == 201
    record_id = response.json()["id"]
    assert response.json() == {"id": record_id, "success": True, "errors": []}
    assert record_id.startswith("081") and len(record_id) == 18
    assert response.headers["Location"] == f"{RESOURCES}/{record_id}"
    record = api.get(f"{RESOURCES}/{record_id}").json()
    audit = {key: record[key] for key in ("CreatedDate", "CreatedById")}
    assert record == {
        "attributes": {"type": "StaticResource", "url": f"{RESOURCES}/{record_id}"},
        "Id": record_id,
        "Name": "Tw_Created",
        "NamespacePrefix": None,
        "ContentType": "application/zip",
        "CacheControl": "Private",
        "Description": "A zip",
        "Body": f"{RESOURCES}/{record_id}/Body",
        "BodyLength": len(ZIP),
        "IsDeleted": False,
        "CreatedDate": audit["CreatedDate"],
        "CreatedById": audit["CreatedById"],
        "LastModifiedDate": audit["CreatedDate"],
        "LastModifiedById": audit["CreatedById"],
        "SystemModstamp": audit["CreatedDate"],
    }


def test_the_body_url_answers_the_bytes_through_both_apis(api: TestClient) -> None:
    record_id = create(api, resource("Tw_Bytes"))
    for url in (f"{RESOURCES}/{record_id}/Body", f"{V}/sobjects/StaticResource/{record_id}/Body"):
        blob = api.get(url)
        assert blob.status_code == 200
        assert blob.headers["content-type"] == "application/octet-stream"
        assert blob.content == ZIP
    # The REST API's record names its own URL for the same content.
    record = api.get(f"{V}/sobjects/StaticResource/{record_id}", params={"fields": "Body"})
    assert record.json() == {
        "attributes": {
            "type": "StaticResource",
            "url": f"{V}/sobjects/StaticResource/{record_id}",
        },
        "Body": f"{V}/sobjects/StaticResource/{record_id}/Body",
        "Id": record_id,
    }


def test_a_blob_url_that_names_no_content_is_not_found(api: TestClient) -> None:
    record_id = create(api, resource("Tw_NoBlob"))
    not_found = error("The requested resource does not exist", "NOT_FOUND")
    for url in (
        f"{RESOURCES}/{record_id}/Name",
        f"{RESOURCES}/081000000000000AAA/Body",
        f"{T}/sobjects/ApexClass/01p000000000000AAA/Body",
    ):
        response = api.get(url)
        assert (response.status_code, response.json()) == (404, not_found), url


def test_a_tooling_query_reads_the_sandbox_records(api: TestClient) -> None:
    record_id = create(api, resource("Tw_Queried", CacheControl="Public"))
    soql = (
        "SELECT Id, Name, CacheControl, Body, BodyLength FROM StaticResource "
        "WHERE Name = 'tw_queried'"
    )
    response = api.get(f"{T}/query", params={"q": soql})
    assert response.status_code == 200
    assert response.json() == {
        "totalSize": 1,
        "done": True,
        "records": [
            {
                "attributes": {"type": "StaticResource", "url": f"{RESOURCES}/{record_id}"},
                "Id": record_id,
                "Name": "Tw_Queried",
                "CacheControl": "Public",
                "Body": f"{RESOURCES}/{record_id}/Body",
                "BodyLength": len(ZIP),
            }
        ],
    }
    rest = api.get(f"{V}/query", params={"q": soql}).json()
    assert rest["records"][0]["Body"] == f"{V}/sobjects/StaticResource/{record_id}/Body"


def test_a_body_is_neither_filtered_nor_sorted(api: TestClient) -> None:
    soql = "SELECT Id FROM StaticResource WHERE Body = 'eA=='"
    response = api.get(f"{T}/query", params={"q": soql})
    assert response.status_code == 400
    assert response.json() == error(
        "\nSELECT Id FROM StaticResource WHERE Body = 'eA=='\n"
        "                                    ^\n"
        "ERROR at Row:1:Column:37\n"
        "field 'Body' can not be filtered in a query call",
        "INVALID_FIELD",
    )


def test_a_multipart_create_takes_the_body_bytes_as_they_are(api: TestClient) -> None:
    content = b"\xff\xfe\x00PK\r\n--not-a-boundary\r\n" + ZIP
    body = multipart(
        {"Name": "Tw_Multipart", "ContentType": "application/zip", "CacheControl": "Private"},
        [("Body", content)],
        "XyZ",
    )
    response = post_multipart(api, body)
    assert response.status_code == 201, response.text
    record_id = response.json()["id"]
    assert response.json() == {"id": record_id, "success": True, "errors": []}
    assert api.get(f"{RESOURCES}/{record_id}/Body").content == content
    length = api.get(f"{RESOURCES}/{record_id}", params={"fields": "BodyLength"}).json()
    assert length["BodyLength"] == len(content)


@pytest.mark.parametrize(
    ("body", "boundary", "message"),
    [
        (b'--XyZ\r\nContent-Disposition: form-data; name="a"\r\n\r\n{}', "XyZ", "BOUNDARY"),
        (b"no parts at all", "XyZ", "BOUNDARY"),
        (b"--XyZ--\r\n", None, "BOUNDARY"),
        (
            b'--XyZ\r\nContent-Disposition: form-data; name="Body"\r\n\r\nabc\r\n--XyZ--\r\n',
            "XyZ",
            "A multipart/form-data body needs a part of type application/json",
        ),
        (
            b"--XyZ\r\nContent-Type: application/json\r\n\r\n{}\r\n--XyZ--\r\n",
            "XyZ",
            "Each part of a multipart/form-data body must be form-data",
        ),
    ],
)
def test_a_multipart_body_that_cannot_be_read_is_refused(
    api: TestClient, body: bytes, boundary: str | None, message: str
) -> None:
    if message == "BOUNDARY":
        message = "The multipart/form-data body could not be read: check its boundary"
    response = post_multipart(api, body, boundary)
    assert response.status_code == 400
    assert response.json() == error(message, "INVALID_MULTIPART_REQUEST")


def test_a_binary_part_must_name_a_base64_field(api: TestClient) -> None:
    record = {"Name": "Tw_Parts", "ContentType": "application/zip", "CacheControl": "Private"}
    named = post_multipart(api, multipart(record, [("Description", b"text")], "XyZ"))
    assert named.status_code == 400
    assert named.json() == error(
        "Description is not a binary field: send it in the JSON part", "INVALID_MULTIPART_REQUEST"
    )
    unknown = post_multipart(api, multipart(record, [("Nope", b"x")], "XyZ"))
    assert unknown.status_code == 400
    assert unknown.json() == error(
        "No such column 'Nope' on sobject of type StaticResource", "INVALID_FIELD"
    )
    twice = post_multipart(api, multipart(record, [("Body", b"a"), ("Body", b"b")], "XyZ"))
    assert twice.status_code == 400
    assert twice.json() == error("More than one part is named Body", "INVALID_MULTIPART_REQUEST")


def test_a_body_of_another_media_type_is_refused(api: TestClient) -> None:
    response = api.post(RESOURCES, content=b"x", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert response.json() == error(
        "MediaType of 'text/plain' is not supported by this resource", "UNSUPPORTED_MEDIA_TYPE"
    )


def test_name_content_type_cache_control_and_body_are_required(api: TestClient) -> None:
    response = api.post(RESOURCES, json={})
    assert response.status_code == 400
    missing = ["Name", "ContentType", "CacheControl"]
    assert response.json() == error(
        "Required fields are missing: [Name, ContentType, CacheControl]",
        "REQUIRED_FIELD_MISSING",
        missing,
    )
    without_body = {k: v for k, v in resource("Tw_NoBody").items() if k != "Body"}
    response = api.post(RESOURCES, json=without_body)
    assert response.status_code == 400
    assert response.json() == error(
        "Required fields are missing: [Body]", "REQUIRED_FIELD_MISSING", ["Body"]
    )


@pytest.mark.parametrize("name", ["Two words", "9lives", "_lead", "trail_", "dou__ble", "dé"])
def test_a_name_must_be_a_developer_name(api: TestClient, name: str) -> None:
    response = api.post(RESOURCES, json=resource(name))
    assert response.status_code == 400
    assert response.json() == error(
        "The Name field can only contain underscores and alphanumeric characters. It must be "
        "unique, begin with a letter, not include spaces, not end with an underscore, and not "
        "contain two consecutive underscores.",
        "FIELD_INTEGRITY_EXCEPTION",
        ["Name"],
    )


def test_a_name_is_unique_in_the_org_whatever_its_case(api: TestClient) -> None:
    first = create(api, resource("Tw_Unique"))
    response = api.post(RESOURCES, json=resource("TW_UNIQUE"))
    assert response.status_code == 400
    assert response.json() == error(
        f"duplicate value found: Name duplicates value on record with id: {first}",
        "DUPLICATE_VALUE",
        [],
    )
    second = create(api, resource("Tw_Unique2"))
    renamed = api.patch(f"{RESOURCES}/{second}", json={"Name": "tw_unique"})
    assert renamed.status_code == 400
    assert renamed.json() == response.json()
    # A deleted resource's name is free again.
    assert api.delete(f"{RESOURCES}/{first}").status_code == 204
    create(api, resource("tw_Unique"))


def test_a_body_must_be_base64(api: TestClient) -> None:
    text = json.dumps(resource("Tw_Bad64", Body="not base64!"))
    response = api.post(RESOURCES, content=text, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    column = text.index('"not base64!"') + len('"not base64!"') + 1
    assert response.json() == error(
        "Cannot deserialize instance of base64 from VALUE_STRING value not base64! or request "
        f"may be missing a required field at [line:1, column:{column}]",
        "JSON_PARSER_ERROR",
    )
    # Line breaks, as MIME writes base64, are no fault.
    wrapped = "\n".join(ZIP_BASE64[i : i + 76] for i in range(0, len(ZIP_BASE64), 76))
    record_id = create(api, resource("Tw_Wrapped", Body=wrapped))
    assert api.get(f"{RESOURCES}/{record_id}/Body").content == ZIP


def test_a_restricted_cache_control(api: TestClient) -> None:
    response = api.post(RESOURCES, json=resource("Tw_Cache", CacheControl="Sometimes"))
    assert response.status_code == 400
    assert response.json() == error(
        "Cache Control: bad value for restricted picklist field: Sometimes",
        "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
        ["CacheControl"],
    )


def test_an_update_replaces_the_body_and_its_length(api: TestClient) -> None:
    record_id = create(api, resource("Tw_Updated"))
    new_body = base64.b64encode(b"console.log(1);").decode()
    response = api.patch(
        f"{RESOURCES}/{record_id}",
        json={"Body": new_body, "ContentType": "text/javascript", "Name": "Tw_Updated_Js"},
    )
    assert (response.status_code, response.content) == (204, b"")
    record = api.get(
        f"{RESOURCES}/{record_id}", params={"fields": "Name,ContentType,BodyLength"}
    ).json()
    assert record == {
        "attributes": {"type": "StaticResource", "url": f"{RESOURCES}/{record_id}"},
        "Name": "Tw_Updated_Js",
        "ContentType": "text/javascript",
        "BodyLength": len(b"console.log(1);"),
        "Id": record_id,
    }
    assert api.get(f"{RESOURCES}/{record_id}/Body").content == b"console.log(1);"
    length = api.patch(f"{RESOURCES}/{record_id}", json={"BodyLength": 3})
    assert length.status_code == 400
    assert length.json()[0]["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"


def test_a_multipart_update_replaces_the_body(api: TestClient) -> None:
    record_id = create(api, resource("Tw_MultiUpdate"))
    body = multipart({"Description": "v2"}, [("Body", b"\x00\x01\x02")], "b0undary")
    response = api.patch(
        f"{RESOURCES}/{record_id}",
        content=body,
        headers={"Content-Type": "multipart/form-data; boundary=b0undary"},
    )
    assert response.status_code == 204, response.text
    assert api.get(f"{RESOURCES}/{record_id}/Body").content == b"\x00\x01\x02"
    fields = {"fields": "Description,BodyLength"}
    record = api.get(f"{RESOURCES}/{record_id}", params=fields).json()
    assert (record["Description"], record["BodyLength"]) == ("v2", 3)


def test_a_deleted_resource_is_gone(api: TestClient) -> None:
    record_id = create(api, resource("Tw_Deleted"))
    response = api.delete(f"{RESOURCES}/{record_id}")
    assert (response.status_code, response.content) == (204, b"")
    deleted = error("entity is deleted", "ENTITY_IS_DELETED", [])
    for url in (f"{RESOURCES}/{record_id}", f"{RESOURCES}/{record_id}/Body"):
        gone = api.get(url)
        assert (gone.status_code, gone.json()) == (404, deleted)
    soql = "SELECT Id FROM StaticResource WHERE Name = 'Tw_Deleted'"
    assert api.get(f"{T}/query", params={"q": soql}).json()["totalSize"] == 0
    assert api.get(f"{T}/queryAll", params={"q": soql}).json()["totalSize"] == 1


def test_the_describe_gives_body_as_base64(api: TestClient) -> None:
    described = api.get(f"{RESOURCES}/describe").json()
    assert described["urls"]["sobject"] == RESOURCES
    body = next(field for field in described["fields"] if field["name"] == "Body")
    picked = {key: body[key] for key in ("type", "soapType", "filterable", "sortable", "nillable")}
    assert picked == {
        "type": "base64",
        "soapType": "xsd:base64Binary",
        "filterable": False,
        "sortable": False,
        "nillable": True,
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "sobjects/ApexClass"),
        ("PATCH", "sobjects/ApexClass/01p000000000001AAA"),
        ("DELETE", "sobjects/EntityDefinition/Account"),
    ],
)
def test_the_other_objects_writes_still_name_what_is_missing(
    api: TestClient, method: str, path: str
) -> None:
    response = api.request(method, f"{T}/{path}", json={"Name": "X"})
    assert response.status_code == 501
    assert response.json() == error(
        "localforce does not support writing the Tooling API's records yet",
        "FUNCTIONALITY_NOT_ENABLED",
    )
