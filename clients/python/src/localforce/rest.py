"""The Salesforce REST surface an agent needs: SOQL and SOSL, records, describe, limits; with
a token of the org, a sandbox or an episode (which reaches its own sandbox and nothing else)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from localforce.plans import Awaiting, Blocking, Call, Http, Plan, awaiting, blocking, body

API_VERSION = "59.0"
TIMEOUT = 60.0


def _segment(value: str) -> str:
    return quote(value, safe="")


class OrgClient(Http):
    """What the blocking and asyncio clients hold: the instance, the token, the API's path."""

    def __init__(self, instance_url: str, access_token: str, version: str) -> None:
        self.instance_url = instance_url.rstrip("/")
        self.access_token = access_token
        self.api = f"/services/data/v{version}"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.access_token}"}


class OrgPlans(OrgClient):
    """The calls, declared once: `Org` runs them blocking, `AsyncOrg` awaits them."""

    def query(self, soql: str) -> Plan[dict[str, Any]]:
        """A SOQL query's first page: totalSize, done, records and nextRecordsUrl."""
        found = yield Call("GET", f"{self.api}/query", params={"q": soql})
        return dict(body(found))

    def query_more(self, next_records_url: str) -> Plan[dict[str, Any]]:
        """The page a query's nextRecordsUrl names."""
        found = yield Call("GET", next_records_url)
        return dict(body(found))

    def query_all(self, soql: str) -> Plan[dict[str, Any]]:
        """Every record of a SOQL query, page after page."""
        page = body((yield Call("GET", f"{self.api}/query", params={"q": soql})))
        records = list(page["records"])
        while not page["done"]:
            page = body((yield Call("GET", page["nextRecordsUrl"])))
            records += page["records"]
        return {"totalSize": page["totalSize"], "done": True, "records": records}

    def search(self, sosl: str) -> Plan[dict[str, Any]]:
        """A SOSL search: {"searchRecords": [...]}."""
        found = yield Call("GET", f"{self.api}/search", params={"q": sosl})
        return dict(body(found))

    def describe_global(self) -> Plan[dict[str, Any]]:
        """The org's objects: names, labels and what may be done with each."""
        return dict(body((yield Call("GET", f"{self.api}/sobjects"))))

    def describe(self, sobject: str) -> Plan[dict[str, Any]]:
        """An object's fields, child relationships and record types."""
        return dict(body((yield Call("GET", f"{self.api}/sobjects/{_segment(sobject)}/describe"))))

    def get(
        self, sobject: str, record_id: str, fields: list[str] | None = None
    ) -> Plan[dict[str, Any]]:
        """One record by Id (only `fields`, when given)."""
        params = {"fields": ",".join(fields)} if fields else None
        path = f"{self.api}/sobjects/{_segment(sobject)}/{_segment(record_id)}"
        return dict(body((yield Call("GET", path, params=params))))

    def create(self, sobject: str, fields: dict[str, Any]) -> Plan[dict[str, Any]]:
        """A new record: {"id", "success", "errors"}."""
        path = f"{self.api}/sobjects/{_segment(sobject)}"
        return dict(body((yield Call("POST", path, json=fields, expect=(201,)))))

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> Plan[None]:
        """Set fields of a record."""
        path = f"{self.api}/sobjects/{_segment(sobject)}/{_segment(record_id)}"
        yield Call("PATCH", path, json=fields, expect=(204,))

    def delete(self, sobject: str, record_id: str) -> Plan[None]:
        """Delete a record (to the recycle bin)."""
        path = f"{self.api}/sobjects/{_segment(sobject)}/{_segment(record_id)}"
        yield Call("DELETE", path, expect=(204,))

    def limits(self) -> Plan[dict[str, Any]]:
        """The org's limits, as /limits gives them (the daily API requests among them)."""
        return dict(body((yield Call("GET", f"{self.api}/limits"))))


class Org(OrgClient, Blocking):
    """The REST API of an org, sandbox or episode, with its access token (blocking)."""

    def __init__(
        self,
        instance_url: str,
        access_token: str,
        *,
        version: str = API_VERSION,
        timeout: float = TIMEOUT,
        verify: bool | str = True,
    ) -> None:
        super().__init__(instance_url, access_token, version)
        self.http = httpx.Client(
            base_url=self.instance_url, headers=self._headers(), timeout=timeout, verify=verify
        )

    query = blocking(OrgPlans.query)
    query_more = blocking(OrgPlans.query_more)
    query_all = blocking(OrgPlans.query_all)
    search = blocking(OrgPlans.search)
    describe_global = blocking(OrgPlans.describe_global)
    describe = blocking(OrgPlans.describe)
    get = blocking(OrgPlans.get)
    create = blocking(OrgPlans.create)
    update = blocking(OrgPlans.update)
    delete = blocking(OrgPlans.delete)
    limits = blocking(OrgPlans.limits)


class AsyncOrg(OrgClient, Awaiting):
    """The REST API of an org, sandbox or episode, with its access token (asyncio)."""

    def __init__(
        self,
        instance_url: str,
        access_token: str,
        *,
        version: str = API_VERSION,
        timeout: float = TIMEOUT,
        verify: bool | str = True,
    ) -> None:
        super().__init__(instance_url, access_token, version)
        self.http = httpx.AsyncClient(
            base_url=self.instance_url, headers=self._headers(), timeout=timeout, verify=verify
        )

    query = awaiting(OrgPlans.query)
    query_more = awaiting(OrgPlans.query_more)
    query_all = awaiting(OrgPlans.query_all)
    search = awaiting(OrgPlans.search)
    describe_global = awaiting(OrgPlans.describe_global)
    describe = awaiting(OrgPlans.describe)
    get = awaiting(OrgPlans.get)
    create = awaiting(OrgPlans.create)
    update = awaiting(OrgPlans.update)
    delete = awaiting(OrgPlans.delete)
    limits = awaiting(OrgPlans.limits)


def _token_call(username: str, password: str) -> Call:
    form = {"grant_type": "password", "username": username, "password": password}
    return Call("POST", "/services/oauth2/token", data=form)


def login(
    url: str, username: str, password: str, *, version: str = API_VERSION, verify: bool | str = True
) -> Org:
    """An `Org` logged in by OAuth's password grant (a sandbox's user is
    `agent@example.com.<sandbox id>`, with the password its creation gave)."""
    call = _token_call(username, password)
    with httpx.Client(base_url=url.rstrip("/"), timeout=TIMEOUT, verify=verify) as http:
        token = call.checked(http.request(call.method, call.path, **call.request())).json()
    return Org(token["instance_url"], token["access_token"], version=version, verify=verify)


async def alogin(
    url: str, username: str, password: str, *, version: str = API_VERSION, verify: bool | str = True
) -> AsyncOrg:
    """An `AsyncOrg` logged in by OAuth's password grant."""
    call = _token_call(username, password)
    async with httpx.AsyncClient(base_url=url.rstrip("/"), timeout=TIMEOUT, verify=verify) as http:
        answered = await http.request(call.method, call.path, **call.request())
        token = call.checked(answered).json()
    return AsyncOrg(token["instance_url"], token["access_token"], version=version, verify=verify)
