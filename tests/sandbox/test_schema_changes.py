"""Custom fields created through the Metadata API, per sandbox: live at once in that sandbox
(describe, SOQL, REST writes, the Tooling API), absent in every other and in the template,
gone after a reset, back with a snapshot taken while they existed; and 16 sandboxes changing
their schemas at once while others query. On both back ends."""

from __future__ import annotations

import asyncio
from typing import Any
from xml.etree.ElementTree import Element

import httpx
import pytest
from defusedxml import ElementTree
from fastapi.testclient import TestClient

from app.main import create_app
from tests.conftest import ADMIN_HEADERS, API, login, make_settings
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import as_token, create, state_of

METADATA = "/services/Soap/m/59.0"
M = "http://soap.sforce.com/2006/04/metadata"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
CONTROL = "/__localforce/sandboxes"


def envelope(token: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<env:Envelope xmlns:env="http://schemas.xmlsoap.org/soap/envelope/" '
        f'xmlns:xsi="{XSI}"><env:Header><SessionHeader xmlns="{M}"><sessionId>{token}'
        f"</sessionId></SessionHeader></env:Header><env:Body>{body}</env:Body></env:Envelope>"
    )


def field_xml(full_name: str, label: str, kind: str, **elements: Any) -> str:
    inner = "".join(f"<{k}>{v}</{k}>" for k, v in elements.items())
    return (
        f'<metadata xsi:type="CustomField"><fullName>{full_name}</fullName>'
        f"<label>{label}</label><type>{kind}</type>{inner}</metadata>"
    )


def soap(client: TestClient, token: str, body: str) -> Element:
    response = client.post(
        METADATA, content=envelope(token, body), headers={"Content-Type": "text/xml"}
    )
    assert response.status_code == 200, response.text
    root: Element = ElementTree.fromstring(response.content)
    return root


def results(root: Element) -> list[dict[str, Any]]:
    found = []
    for result in root.iter(f"{{{M}}}result"):
        item: dict[str, Any] = {}
        for child in result:
            name = child.tag.rsplit("}", 1)[-1]
            if name == "errors":
                item.setdefault("errors", []).append(
                    {e.tag.rsplit("}", 1)[-1]: e.text for e in child}
                )
            else:
                item[name] = child.text
        found.append(item)
    return found


def create_fields(client: TestClient, token: str, *fields: str) -> list[dict[str, Any]]:
    return results(
        soap(client, token, f'<createMetadata xmlns="{M}">{"".join(fields)}</createMetadata>')
    )


def new_sandbox(client: TestClient, sandbox_id: str) -> tuple[str, TestClient]:
    token = str(create(client, id=sandbox_id)["access_token"])
    return token, as_token(client, token)


def field_names(sf: TestClient, sobject: str) -> set[str]:
    described = sf.get(f"{API}/sobjects/{sobject}/describe").json()
    return {field["name"] for field in described["fields"]}


RISK = field_xml("Account.Risk_Score__c", "Risk Score", "Number", precision=5, scale=2)


def test_a_field_created_in_one_sandbox_is_live_there_only(client: TestClient) -> None:
    token_a, sf_a = new_sandbox(client, "schema-a")
    _, sf_b = new_sandbox(client, "schema-b")
    assert create_fields(client, token_a, RISK) == [
        {"fullName": "Account.Risk_Score__c", "success": "true"}
    ]
    assert "Risk_Score__c" in field_names(sf_a, "Account")
    assert "Risk_Score__c" not in field_names(sf_b, "Account")
    described = sf_a.get(f"{API}/sobjects/Account/describe").json()
    risk = next(f for f in described["fields"] if f["name"] == "Risk_Score__c")
    assert (risk["type"], risk["precision"], risk["scale"], risk["custom"]) == (
        "double",
        5,
        2,
        True,
    )

    account = sf_a.post(f"{API}/sobjects/Account", json={"Name": "Risky", "Risk_Score__c": 42.5})
    assert account.status_code == 201, account.text
    rows = sf_a.get(
        f"{API}/query", params={"q": "SELECT Name FROM Account WHERE Risk_Score__c > 40"}
    ).json()
    assert [r["Name"] for r in rows["records"]] == ["Risky"]
    untouched = sf_a.get(
        f"{API}/query",
        params={"q": "SELECT COUNT() FROM Account WHERE Risk_Score__c = null"},
    ).json()
    assert untouched["totalSize"] > 0  # the existing accounts' new field is empty

    composite = sf_a.post(
        f"{API}/composite/sobjects",
        json={
            "allOrNone": True,
            "records": [
                {"attributes": {"type": "Account"}, "Name": "Riskier", "Risk_Score__c": 77}
            ],
        },
    )
    assert composite.json()[0]["success"] is True, composite.text
    found = sf_a.get(
        f"{API}/search",
        params={"q": "FIND {Riskier} IN NAME FIELDS RETURNING Account(Name, Risk_Score__c)"},
    ).json()
    assert [(r["Name"], r["Risk_Score__c"]) for r in found["searchRecords"]] == [("Riskier", 77.0)]

    refused = sf_b.get(f"{API}/query", params={"q": "SELECT Risk_Score__c FROM Account"})
    assert refused.status_code == 400
    assert refused.json()[0]["errorCode"] == "INVALID_FIELD"
    tooling = sf_a.get(
        f"{API}/tooling/query",
        params={
            "q": "SELECT DeveloperName, TableEnumOrId FROM CustomField"
            " WHERE TableEnumOrId = 'Account'"
        },
    ).json()
    assert {"DeveloperName": "Risk_Score", "TableEnumOrId": "Account"} in [
        {k: r[k] for k in ("DeveloperName", "TableEnumOrId")} for r in tooling["records"]
    ]

    # Every other field keeps its id (an id is its name's, not its place among the others).
    ids_query = {"q": "SELECT Id, DeveloperName FROM CustomField WHERE TableEnumOrId = 'Case'"}
    ids_a = sf_a.get(f"{API}/tooling/query", params=ids_query).json()["records"]
    ids_b = sf_b.get(f"{API}/tooling/query", params=ids_query).json()["records"]
    assert ids_a == ids_b and ids_a

    # A sandbox created now, from the same template, never sees it either.
    _, sf_c = new_sandbox(client, "schema-c")
    assert "Risk_Score__c" not in field_names(sf_c, "Account")

    diff = client.get(f"{CONTROL}/schema-a/diff").json()
    assert diff["schema"]["fields"]["Account"]["Risk_Score__c"]["type"] == "double"


def test_reset_takes_the_field_away_and_a_snapshot_brings_it_back(client: TestClient) -> None:
    token, sf = new_sandbox(client, "schema-reset")
    flag = field_xml("Case.Escalation_Flag__c", "Escalation Flag", "Checkbox", defaultValue="true")
    assert create_fields(client, token, flag)[0]["success"] == "true"
    flagged = sf.get(
        f"{API}/query", params={"q": "SELECT COUNT() FROM Case WHERE Escalation_Flag__c = true"}
    ).json()
    assert flagged["totalSize"] == 977  # every existing case reads the default
    assert client.post(
        f"{CONTROL}/schema-reset/snapshots", json={"name": "with-flag"}
    ).status_code in (200, 201)

    assert client.post(f"{CONTROL}/schema-reset/reset").status_code == 200
    assert "Escalation_Flag__c" not in field_names(sf, "Case")
    assert (
        sf.get(
            f"{API}/query", params={"q": "SELECT Escalation_Flag__c FROM Case LIMIT 1"}
        ).status_code
        == 400
    )

    restored = client.post(f"{CONTROL}/schema-reset/snapshots/with-flag/restore")
    assert restored.status_code == 200, restored.text
    assert "Escalation_Flag__c" in field_names(sf, "Case")
    again = sf.get(
        f"{API}/query", params={"q": "SELECT COUNT() FROM Case WHERE Escalation_Flag__c = true"}
    ).json()
    assert again["totalSize"] == 977


def test_the_metadata_apis_refusals(client: TestClient) -> None:
    token, _ = new_sandbox(client, "schema-refusals")
    found = create_fields(
        client,
        token,
        field_xml("Account.Risk_Score__c", "Risk", "Number", precision=5, scale=2),
        field_xml("Account.Risk_Score__c", "Again", "Number", precision=5, scale=2),
        field_xml("Nowhere__c.Thing__c", "Thing", "Text", length=10),
        field_xml("Account.Notes__c", "Notes", "Text"),
        field_xml("Account.Bad__Name__c", "Bad", "Text", length=10),
        field_xml("Account.Blob__c", "Blob", "EncryptedText", length=10),
    )
    assert [r["success"] for r in found] == ["true", "false", "false", "false", "false", "false"]
    codes = [r["errors"][0]["statusCode"] for r in found[1:]]
    assert codes == [
        "DUPLICATE_DEVELOPER_NAME",
        "INVALID_CROSS_REFERENCE_KEY",
        "FIELD_INTEGRITY_EXCEPTION",
        "FIELD_INTEGRITY_EXCEPTION",
        "FIELD_INTEGRITY_EXCEPTION",
    ]
    assert (
        found[2]["errors"][0]["message"]
        == "In field: fullName - no CustomObject named Nowhere__c found"
    )
    assert found[3]["errors"][0] == {
        "fields": "length",
        "message": "Must specify 'length' for a CustomField of type Text",
        "statusCode": "FIELD_INTEGRITY_EXCEPTION",
    }


WARRANTY = (
    '<metadata xsi:type="CustomObject"><fullName>Warranty_Claim__c</fullName>'
    "<label>Warranty Claim</label><pluralLabel>Warranty Claims</pluralLabel>"
    "<nameField><type>AutoNumber</type><label>Claim Number</label>"
    "<displayFormat>WC-{0000}</displayFormat></nameField>"
    "<deploymentStatus>Deployed</deploymentStatus><sharingModel>ReadWrite</sharingModel>"
    "<fields><fullName>Amount__c</fullName><label>Amount</label><type>Currency</type>"
    "<precision>10</precision><scale>2</scale></fields></metadata>"
)


def test_a_custom_object_created_in_one_sandbox(client: TestClient) -> None:
    token, sf = new_sandbox(client, "object-a")
    _, other = new_sandbox(client, "object-b")
    assert create_fields(client, token, WARRANTY) == [
        {"fullName": "Warranty_Claim__c", "success": "true"}
    ]
    names = {o["name"] for o in sf.get(f"{API}/sobjects").json()["sobjects"]}
    assert "Warranty_Claim__c" in names
    assert "Warranty_Claim__c" not in {
        o["name"] for o in other.get(f"{API}/sobjects").json()["sobjects"]
    }
    described = sf.get(f"{API}/sobjects/Warranty_Claim__c/describe").json()
    assert (described["label"], described["labelPlural"], described["custom"]) == (
        "Warranty Claim",
        "Warranty Claims",
        True,
    )
    prefix = described["keyPrefix"]
    assert len(prefix) == 3 and prefix.startswith("a")

    first = sf.post(f"{API}/sobjects/Warranty_Claim__c", json={"Amount__c": 120.5})
    assert first.status_code == 201, first.text
    assert first.json()["id"].startswith(prefix)
    second = sf.post(f"{API}/sobjects/Warranty_Claim__c", json={"Amount__c": 80})
    assert second.status_code == 201, second.text
    rows = sf.get(
        f"{API}/query",
        params={"q": "SELECT Name, Amount__c FROM Warranty_Claim__c ORDER BY Name"},
    ).json()["records"]
    assert [(r["Name"], r["Amount__c"]) for r in rows] == [("WC-0001", 120.5), ("WC-0002", 80.0)]
    assert other.get(f"{API}/sobjects/Warranty_Claim__c/describe").status_code == 404

    entity = sf.get(
        f"{API}/tooling/query",
        params={
            "q": "SELECT KeyPrefix FROM EntityDefinition"
            " WHERE QualifiedApiName = 'Warranty_Claim__c'"
        },
    ).json()["records"]
    assert entity == [
        {
            "attributes": entity[0]["attributes"],
            "KeyPrefix": prefix,
        }
    ]
    read = soap(
        client,
        token,
        f'<readMetadata xmlns="{M}"><type>CustomObject</type>'
        "<fullNames>Warranty_Claim__c</fullNames></readMetadata>",
    )
    record = read.find(f".//{{{M}}}records")
    assert record is not None
    assert record.findtext(f"{{{M}}}nameField/{{{M}}}displayFormat") == "WC-{0000}"
    assert record.findtext(f"{{{M}}}fields/{{{M}}}fullName") == "Amount__c"

    assert client.post(f"{CONTROL}/object-a/reset").status_code == 200
    assert sf.get(f"{API}/sobjects/Warranty_Claim__c/describe").status_code == 404
    # Created again after the reset: a new, empty object.
    assert create_fields(client, token, WARRANTY)[0]["success"] == "true"
    again = sf.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Warranty_Claim__c"}).json()
    assert again["totalSize"] == 0


def test_a_custom_objects_refusals_and_delete(client: TestClient) -> None:
    token, sf = new_sandbox(client, "object-refusals")
    no_name = (
        '<metadata xsi:type="CustomObject"><fullName>Bare__c</fullName><label>Bare</label>'
        "<pluralLabel>Bares</pluralLabel></metadata>"
    )
    found = create_fields(client, token, no_name, WARRANTY, WARRANTY)
    assert [r["success"] for r in found] == ["false", "true", "false"]
    assert found[0]["errors"][0] == {
        "fields": "nameField",
        "message": "Must specify a nameField of type Text or AutoNumber",
        "statusCode": "FIELD_INTEGRITY_EXCEPTION",
    }
    assert found[2]["errors"][0]["statusCode"] == "DUPLICATE_DEVELOPER_NAME"
    deleted = results(
        soap(
            client,
            token,
            f'<deleteMetadata xmlns="{M}"><type>CustomObject</type>'
            "<fullNames>Warranty_Claim__c</fullNames><fullNames>Issue__c</fullNames>"
            "</deleteMetadata>",
        )
    )
    assert deleted[0] == {"fullName": "Warranty_Claim__c", "success": "true"}
    assert deleted[1]["errors"][0]["statusCode"] == "FIELD_INTEGRITY_EXCEPTION"
    assert sf.get(f"{API}/sobjects/Warranty_Claim__c/describe").status_code == 404
    assert sf.get(f"{API}/sobjects/Issue__c/describe").status_code == 200


def test_a_lookup_field_and_its_related_list(client: TestClient) -> None:
    token, sf = new_sandbox(client, "object-lookup")
    lookup = field_xml(
        "Case.Warranty_Claim__c",
        "Warranty Claim",
        "Lookup",
        referenceTo="Warranty_Claim__c",
        relationshipName="Cases",
    )
    bad = field_xml(
        "Case.Nowhere__c", "Nowhere", "Lookup", referenceTo="Nope__c", relationshipName="X"
    )
    found = create_fields(client, token, WARRANTY, lookup, bad)
    assert [r["success"] for r in found] == ["true", "true", "false"]
    assert found[2]["errors"][0]["message"] == (
        "referenceTo value of 'Nope__c' does not resolve to a valid sObject type"
    )
    claim = sf.post(f"{API}/sobjects/Warranty_Claim__c", json={"Amount__c": 1}).json()["id"]
    case = sf.post(f"{API}/sobjects/Case", json={"Subject": "Claimed", "Warranty_Claim__c": claim})
    assert case.status_code == 201, case.text
    rows = sf.get(
        f"{API}/query",
        params={
            "q": "SELECT Name, (SELECT Subject FROM Cases__r) FROM Warranty_Claim__c"
            " WHERE Id IN (SELECT Warranty_Claim__c FROM Case)"
        },
    ).json()["records"]
    assert [(r["Name"], r["Cases__r"]["records"][0]["Subject"]) for r in rows] == [
        ("WC-0001", "Claimed")
    ]
    parent = sf.get(
        f"{API}/query",
        params={"q": "SELECT Warranty_Claim__r.Amount__c FROM Case WHERE Subject = 'Claimed'"},
    ).json()["records"]
    assert parent[0]["Warranty_Claim__r"]["Amount__c"] == 1.0


def test_a_created_object_renamed_keeps_its_records(client: TestClient) -> None:
    token, sf = new_sandbox(client, "object-rename")
    create_fields(client, token, WARRANTY)
    made = sf.post(f"{API}/sobjects/Warranty_Claim__c", json={"Amount__c": 5})
    assert made.status_code == 201, made.text
    renamed = results(
        soap(
            client,
            token,
            f'<renameMetadata xmlns="{M}"><type>CustomObject</type>'
            "<oldFullName>Warranty_Claim__c</oldFullName>"
            "<newFullName>Claim__c</newFullName></renameMetadata>",
        )
    )
    assert renamed == [{"fullName": "Warranty_Claim__c", "success": "true"}]
    rows = sf.get(f"{API}/query", params={"q": "SELECT Id, Name, Amount__c FROM Claim__c"}).json()
    assert [(r["Id"], r["Name"]) for r in rows["records"]] == [(made.json()["id"], "WC-0001")]
    following = sf.post(f"{API}/sobjects/Claim__c", json={"Amount__c": 6}).json()
    assert sf.get(f"{API}/sobjects/Claim__c/{following['id']}").json()["Name"] == "WC-0002"
    assert sf.get(f"{API}/sobjects/Warranty_Claim__c/describe").status_code == 404
    assert client.post(f"{CONTROL}/object-rename/reset").status_code == 200
    assert sf.get(f"{API}/sobjects/Claim__c/describe").status_code == 404


def test_a_call_takes_at_most_ten_components(client: TestClient) -> None:
    token, _ = new_sandbox(client, "schema-many")
    fields = [field_xml(f"Account.Many_{n}__c", f"Many {n}", "Text", length=5) for n in range(11)]
    body = f'<createMetadata xmlns="{M}">{"".join(fields)}</createMetadata>'
    response = client.post(
        METADATA, content=envelope(token, body), headers={"Content-Type": "text/xml"}
    )
    assert response.status_code == 500
    assert b"<faultcode>sf:EXCEEDED_ID_LIMIT</faultcode>" in response.content


def test_a_component_nested_too_deep_is_a_client_fault(client: TestClient) -> None:
    token, _ = new_sandbox(client, "schema-deep")
    deep = "<a>" * 5000 + "x" + "</a>" * 5000
    body = (
        f'<createMetadata xmlns="{M}"><metadata xsi:type="CustomField">'
        f"<fullName>Account.Deep__c</fullName>{deep}</metadata></createMetadata>"
    )
    response = client.post(
        METADATA, content=envelope(token, body), headers={"Content-Type": "text/xml"}
    )
    assert response.status_code == 500
    assert b"<faultcode>soapenv:Client</faultcode>" in response.content


def found_by_search(sf: TestClient, sosl: str) -> list[str]:
    response = sf.get(f"{API}/search", params={"q": sosl})
    assert response.status_code == 200, response.text
    return [record["attributes"]["type"] for record in response.json()["searchRecords"]]


SEARCHABLE = (
    '<metadata xsi:type="CustomObject"><fullName>Site_Visit__c</fullName>'
    "<label>Site Visit</label><pluralLabel>Site Visits</pluralLabel>"
    "<nameField><type>Text</type><label>Site Visit Name</label></nameField>"
    "<enableSearch>true</enableSearch>"
    "<deploymentStatus>Deployed</deploymentStatus><sharingModel>ReadWrite</sharingModel>"
    "</metadata>"
)


def test_sosl_searches_a_new_text_field_and_a_searchable_new_object(client: TestClient) -> None:
    """A text field added is searched at once (its object's index is made again over it, in
    this sandbox's copy of the table only); taken away, its words are found no more. A new
    object is searched when its metadata allows search, as Setup's "Allow Search"."""
    token, sf = new_sandbox(client, "search-a")
    _, other = new_sandbox(client, "search-b")
    motto = field_xml("Account.Motto__c", "Motto", "Text", length=80)
    assert create_fields(client, token, motto, SEARCHABLE, WARRANTY) == [
        {"fullName": "Account.Motto__c", "success": "true"},
        {"fullName": "Site_Visit__c", "success": "true"},
        {"fullName": "Warranty_Claim__c", "success": "true"},
    ]
    made = sf.post(f"{API}/sobjects/Account", json={"Name": "Plain Co", "Motto__c": "zanzibari"})
    assert made.status_code == 201, made.text
    visit = sf.post(f"{API}/sobjects/Site_Visit__c", json={"Name": "zanzibari visit"})
    assert visit.status_code == 201, visit.text
    everywhere = "FIND {zanzibari} IN ALL FIELDS"
    assert sorted(found_by_search(sf, everywhere)) == ["Account", "Site_Visit__c"]
    assert found_by_search(sf, f"{everywhere} RETURNING Account(Motto__c)") == ["Account"]
    assert found_by_search(sf, "FIND {zanzibari} IN NAME FIELDS RETURNING Account") == []
    refused = sf.get(f"{API}/search", params={"q": f"{everywhere} RETURNING Warranty_Claim__c"})
    assert refused.status_code == 400
    assert refused.json()[0]["errorCode"] == "INVALID_TYPE"
    assert found_by_search(other, everywhere) == []
    # Words elsewhere in the object are still found, the index whole.
    assert "Account" in found_by_search(sf, "FIND {Plain} IN ALL FIELDS RETURNING Account")
    seeded = sf.get(f"{API}/query", params={"q": "SELECT Name FROM Account LIMIT 1"})
    word = seeded.json()["records"][0]["Name"].split()[0]
    assert "Account" in found_by_search(sf, f"FIND {{{word}}} IN ALL FIELDS RETURNING Account")

    deleted = soap(
        client,
        token,
        f'<deleteMetadata xmlns="{M}"><type>CustomField</type>'
        "<fullNames>Account.Motto__c</fullNames></deleteMetadata>",
    )
    assert results(deleted) == [{"fullName": "Account.Motto__c", "success": "true"}]
    assert found_by_search(sf, everywhere) == ["Site_Visit__c"]
    assert sf.post(f"{API}/sobjects/Account", json={"Name": "Still Writable"}).status_code == 201
    assert client.post(f"{CONTROL}/search-a/reset").status_code == 200
    assert found_by_search(sf, "FIND {Writable} IN ALL FIELDS RETURNING Account") == []
    assert "Account" in found_by_search(sf, f"FIND {{{word}}} IN ALL FIELDS RETURNING Account")


def test_delete_and_upsert(client: TestClient) -> None:
    token, sf = new_sandbox(client, "schema-delete")
    create_fields(client, token, RISK)
    upserted = results(
        soap(
            client,
            token,
            f'<upsertMetadata xmlns="{M}">'
            + field_xml(
                "Account.Risk_Score__c", "Risk Score (renamed)", "Number", precision=6, scale=2
            )
            + field_xml("Account.Tier__c", "Tier", "Text", length=20)
            + "</upsertMetadata>",
        )
    )
    assert [(r["created"], r["success"]) for r in upserted] == [("false", "true"), ("true", "true")]
    described = {f["name"]: f for f in sf.get(f"{API}/sobjects/Account/describe").json()["fields"]}
    assert described["Risk_Score__c"]["label"] == "Risk Score (renamed)"
    deleted = results(
        soap(
            client,
            token,
            f'<deleteMetadata xmlns="{M}"><type>CustomField</type>'
            "<fullNames>Account.Tier__c</fullNames><fullNames>Account.Nope__c</fullNames>"
            "</deleteMetadata>",
        )
    )
    assert deleted[0] == {"fullName": "Account.Tier__c", "success": "true"}
    assert deleted[1]["errors"][0]["message"] == (
        "In field: fullName - no CustomField named Account.Nope__c found"
    )
    assert "Tier__c" not in field_names(sf, "Account")


def test_schema_changes_survive_a_restart(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> None:
    """A server started again on the same database serves the sandbox's field and the
    default sandbox's (the server's own database) as they were."""
    url = database_factory.new_url(template=sandbox_ready_template)
    settings = make_settings(url, database_factory.workdir)
    with TestClient(
        create_app(settings), base_url="https://testserver", headers=ADMIN_HEADERS
    ) as first:
        token, _ = new_sandbox(first, "schema-restart")
        assert create_fields(first, token, RISK)[0]["success"] == "true"
        default_token = login(first)
        tier = field_xml("Contact.Tier__c", "Tier", "Text", length=20)
        assert create_fields(first, default_token, tier)[0]["success"] == "true"
    with TestClient(
        create_app(settings), base_url="https://testserver", headers=ADMIN_HEADERS
    ) as second:
        assert "Risk_Score__c" in field_names(as_token(second, token), "Account")
        default = as_token(second, login(second))
        assert "Tier__c" in field_names(default, "Contact")
        written = default.post(
            f"{API}/sobjects/Contact", json={"LastName": "Tiered", "Tier__c": "Gold"}
        )
        assert written.status_code == 201, written.text
        assert second.post(f"{CONTROL}/default/reset").status_code == 200
        assert "Tier__c" not in field_names(default, "Contact")


@pytest.mark.asyncio
async def test_sixteen_sandboxes_change_their_schemas_while_others_query(
    client: TestClient,
) -> None:
    """16 sandboxes each add two fields while 16 others query Account: no 5xx, and each
    sandbox sees its own fields and no other's."""
    changing = [new_sandbox(client, f"schema-par-{n}")[0] for n in range(16)]
    reading = [new_sandbox(client, f"schema-read-{n}")[0] for n in range(16)]
    transport = httpx.ASGITransport(app=client.app)
    statuses: list[int] = []

    async with httpx.AsyncClient(transport=transport, base_url=str(client.base_url)) as http:

        async def change(n: int, token: str) -> None:
            for k in range(2):
                body = field_xml(f"Account.Par_{n}_{k}__c", f"Par {n} {k}", "Text", length=20)
                response = await http.post(
                    METADATA,
                    content=envelope(token, f'<createMetadata xmlns="{M}">{body}</createMetadata>'),
                    headers={"Content-Type": "text/xml"},
                )
                statuses.append(response.status_code)

        async def read(token: str) -> None:
            for _ in range(4):
                response = await http.get(
                    f"{API}/query",
                    params={"q": "SELECT Id, Name FROM Account LIMIT 5"},
                    headers={"Authorization": f"Bearer {token}"},
                )
                statuses.append(response.status_code)

        await asyncio.gather(
            *(change(n, token) for n, token in enumerate(changing)),
            *(read(token) for token in reading),
        )
    assert [s for s in statuses if s >= 500] == []
    assert set(statuses) == {200}
    for n, token in enumerate(changing):
        names = {f for f in field_names(as_token(client, token), "Account") if f.startswith("Par_")}
        assert names == {f"Par_{n}_0__c", f"Par_{n}_1__c"}
    for token in reading[:2]:
        assert not {
            f for f in field_names(as_token(client, token), "Account") if f.startswith("Par_")
        }
    assert state_of(client) is not None
