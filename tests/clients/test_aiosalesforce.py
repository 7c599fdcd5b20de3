"""aiosalesforce, unmodified, against localforce through its httpx client.

aiosalesforce only accepts a `https://<name>.my.salesforce.com` base URL; the test hands it an
`httpx.AsyncClient` whose ASGI transport serves that origin from the localforce app in process.
It logs in by SOAP (its `SoapLogin`), as it would against a real org.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from aiosalesforce import Salesforce, SoapLogin
from aiosalesforce.exceptions import NotFoundError, SalesforceError

from app.main import create_app
from tests.conftest import make_settings
from tests.databases import DatabaseFactory

BASE_URL = "https://localforce.my.salesforce.com"
SCENARIO_SECONDS = 120

Scenario = Callable[[Salesforce], Awaitable[None]]


@pytest.fixture(scope="module")
def run(database_factory: DatabaseFactory, seeded_template: str) -> Callable[[Scenario], None]:
    url = database_factory.new_url(template=seeded_template)
    app = create_app(make_settings(url, database_factory.workdir))

    def runner(scenario: Scenario) -> None:
        async def main() -> None:
            async with app.router.lifespan_context(app):
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
                    sf = Salesforce(
                        httpx_client=http,
                        base_url=BASE_URL,
                        auth=SoapLogin("agent@example.com", "password", "token"),
                        version="59.0",
                        retry_policy=None,
                    )
                    # Bounded: a client that polls a job which never ends must not hang CI.
                    await asyncio.wait_for(scenario(sf), SCENARIO_SECONDS)

        asyncio.run(main())

    return runner


def test_query_follows_pagination(run: Callable[[Scenario], None]) -> None:
    async def scenario(sf: Salesforce) -> None:
        ids = [record["Id"] async for record in sf.query("SELECT Id FROM PricebookEntry")]
        assert len(ids) == 22000
        assert len(set(ids)) == 22000
        cases = [record async for record in sf.query("SELECT Id, Subject FROM Case LIMIT 5")]
        assert len(cases) == 5
        assert cases[0]["attributes"]["type"] == "Case"
        deleted_aware = [r async for r in sf.query("SELECT Id FROM Issue__c", True)]
        assert len(deleted_aware) == 10

    run(scenario)


def test_sobject_crud_and_upsert(run: Callable[[Scenario], None]) -> None:
    async def scenario(sf: Salesforce) -> None:
        record_id = await sf.sobject.create("Contact", {"FirstName": "Ada", "LastName": "Lovelace"})
        assert record_id.startswith("003") and len(record_id) == 18
        record = await sf.sobject.get("Contact", record_id)
        assert record["Name"] == "Ada Lovelace"
        partial = await sf.sobject.get("Contact", record_id, fields=["LastName"])
        assert partial["LastName"] == "Lovelace"
        await sf.sobject.update("Contact", record_id, {"LastName": "King"})
        assert (await sf.sobject.get("Contact", record_id))["Name"] == "Ada King"
        await sf.sobject.delete("Contact", record_id)
        with pytest.raises(NotFoundError) as deleted:
            await sf.sobject.get("Contact", record_id)
        assert deleted.value.error_code == "ENTITY_IS_DELETED"

        created = await sf.sobject.upsert(
            "Product2", "AIO-1", external_id_field="External_ID__c", data={"Name": "Async"}
        )
        assert created.created is True
        updated = await sf.sobject.upsert(
            "Product2", "AIO-1", external_id_field="External_ID__c", data={"Name": "Renamed"}
        )
        assert updated.created is False
        assert updated.id == created.id
        by_external = await sf.sobject.get("Product2", "AIO-1", external_id_field="External_ID__c")
        assert by_external["Name"] == "Renamed"

    run(scenario)


def test_errors_carry_error_codes(run: Callable[[Scenario], None]) -> None:
    async def scenario(sf: Salesforce) -> None:
        with pytest.raises(SalesforceError) as bad_field:
            [record async for record in sf.query("SELECT Nope__c FROM Case")]
        assert bad_field.value.error_code == "INVALID_FIELD"
        with pytest.raises(SalesforceError) as missing:
            await sf.sobject.create("Contact", {"FirstName": "No Last Name"})
        assert missing.value.error_code == "REQUIRED_FIELD_MISSING"
        with pytest.raises(NotFoundError) as unknown:
            await sf.sobject.get("Contact", "003000000000000AAA")
        assert unknown.value.error_code == "NOT_FOUND"
        limits: dict[str, Any] = await sf.get_limits()
        assert limits["DailyApiRequests"]["Max"] == 15000

    run(scenario)


def test_bulk_v2_ingest_jobs(run: Callable[[Scenario], None]) -> None:
    """`bulk_v2`: insert then upsert and delete, each a Bulk API 2.0 ingest job."""

    async def scenario(sf: Salesforce) -> None:
        ingest = sf.bulk_v2.ingest
        records = [{"LastName": f"Bulkv2 {i}", "Email": f"bv2-{i}@example.com"} for i in range(4)]
        results = [
            result
            async for result in ingest.perform_operation(
                "insert", "Contact", records, polling_interval=0.05
            )
        ]
        [inserted] = results
        assert inserted.job_info.state == "JobComplete"
        assert len(inserted.successful_results) == 4 and inserted.failed_results == []
        assert all(row["sf__Created"] == "true" for row in inserted.successful_results)
        ids = [row["sf__Id"] for row in inserted.successful_results]
        bad = [{"Id": ids[0], "Email": "changed@example.com"}, {"Id": "003000000000000AAA"}]
        [updated] = [
            r
            async for r in ingest.perform_operation("update", "Contact", bad, polling_interval=0.05)
        ]
        assert len(updated.successful_results) == 1
        [failure] = updated.failed_results
        assert failure["sf__Error"] == "INVALID_CROSS_REFERENCE_KEY:invalid cross reference id: --"
        [deleted] = [
            r
            async for r in ingest.perform_operation(
                "delete", "Contact", [{"Id": i} for i in ids], polling_interval=0.05
            )
        ]
        assert len(deleted.successful_results) == 4
        remaining = [
            r async for r in sf.query("SELECT Id FROM Contact WHERE LastName LIKE 'Bulkv2 %'")
        ]
        assert remaining == []
        jobs = [job async for job in ingest.list_jobs()]
        assert {inserted.job_info.id, updated.job_info.id, deleted.job_info.id} <= {
            j.id for j in jobs
        }

    run(scenario)
