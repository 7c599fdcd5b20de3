"""What the task types' reference solvers share: the org's REST API with an episode's token
(`HttpApi`), and the pieces of SOQL and of a task's words that several of them read. A solver
reads a task as an agent must, from its words and metadata alone, through the API, never the
database or the answer."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

import httpx

from app.metadata import metadata_wire
from app.tasks.model import TODAY, Api, NotScripted
from app.tasks.periods import Period, read_period

API_VERSION = "v59.0"


class HttpApi:
    """The org's REST API with a session token: every record of a query, page after page."""

    def __init__(self, client: httpx.Client, token: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"}

    def query(self, soql: str) -> list[dict[str, Any]]:
        url = f"/services/data/{API_VERSION}/query"
        response = self.client.get(url, params={"q": soql}, headers=self.headers)
        records: list[dict[str, Any]] = []
        while True:
            response.raise_for_status()
            body = response.json()
            records += body["records"]
            if body["done"]:
                return records
            response = self.client.get(body["nextRecordsUrl"], headers=self.headers)

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None:
        url = f"/services/data/{API_VERSION}/sobjects/{sobject}/{record_id}"
        self.client.patch(url, json=fields, headers=self.headers).raise_for_status()

    def fields(self, sobject: str) -> set[str]:
        url = f"/services/data/{API_VERSION}/sobjects/{sobject}/describe"
        response = self.client.get(url, headers=self.headers)
        response.raise_for_status()
        return {field["name"] for field in response.json()["fields"]}

    def sobjects(self) -> set[str]:
        response = self.client.get(f"/services/data/{API_VERSION}/sobjects", headers=self.headers)
        response.raise_for_status()
        return {sobject["name"] for sobject in response.json()["sobjects"]}

    def _metadata(self, operation: str, body: str) -> list[Any]:
        token = self.headers["Authorization"].removeprefix("Bearer ")
        response = self.client.post(
            metadata_wire.PATH,
            content=metadata_wire.envelope(token, operation, body),
            headers={"Content-Type": "text/xml; charset=utf-8", "SOAPAction": '""'},
        )
        return metadata_wire.results(response.content)

    def read_metadata(self, metadata_type: str, full_names: list[str]) -> list[Any]:
        body = metadata_wire.read_body(metadata_type, full_names)
        return metadata_wire.read_records(self._metadata("readMetadata", body))

    def change_metadata(
        self, operation: str, metadata_type: str, components: list[dict[str, Any]]
    ) -> list[Any]:
        """createMetadata or updateMetadata: each component's SaveResult."""
        return self._metadata(operation, metadata_wire.components_body(metadata_type, components))


# --- SOQL -------------------------------------------------------------------------------------


def literal(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ids(values: Iterable[str]) -> str:
    return "(" + ", ".join(quoted(value) for value in values) + ")"


def moment(wire: str) -> datetime:
    """A datetime as the API writes it, in UTC without its zone."""
    return datetime.strptime(wire, "%Y-%m-%dT%H:%M:%S.%f%z").replace(tzinfo=None)


def created_in(period: Period) -> str:
    return f"CreatedDate >= {literal(period.start)} AND CreatedDate < {literal(period.end)}"


def days_in(field: str, period: Period) -> str:
    start, end = period.start.date().isoformat(), period.end.date().isoformat()
    return f"{field} >= {start} AND {field} < {end}"


def counts(api: Api, soql: str, key: str) -> dict[str, int]:
    """A grouped query's COUNT (aliased n) by its key, rows without a key left out."""
    return {row[key]: int(row["n"]) for row in api.query(soql) if row[key] is not None}


def product_items(api: Api, product: str) -> list[str]:
    rows = api.query(f"SELECT Id FROM OrderItem WHERE Product2Id = {quoted(product)}")
    return [row["Id"] for row in rows]


def case_conversation(api: Api, case_id: str) -> list[str]:
    """The texts of a case's chat transcripts and e-mails."""
    case = quoted(case_id)
    chats = api.query(f"SELECT Body FROM LiveChatTranscript WHERE CaseId = {case}")
    emails = api.query(f"SELECT TextBody FROM EmailMessage WHERE ParentId = {case}")
    return [row["Body"] or "" for row in chats] + [row["TextBody"] or "" for row in emails]


def article_titled(api: Api, title: str) -> str:
    (article,) = api.query(
        f"SELECT Id FROM Knowledge__kav WHERE PublishStatus = 'Online' AND Title = {quoted(title)}"
    )
    return str(article["Id"])


def org_of(api: Api) -> str:
    """Which org's texts the org speaks: only the Pro orgs record calls (a custom object), b2c
    sells to people (person accounts), b2b to companies."""
    if "VoiceCallTranscript__c" not in api.sobjects():
        return "original"
    return "b2c" if "IsPersonAccount" in api.fields("Account") else "b2b"


# --- a task's words ---------------------------------------------------------------------------


def today_of(task: dict[str, Any]) -> date:
    found = TODAY.search(task["metadata"]["required"])
    if found is None:
        raise NotScripted("the task names no today")
    return date.fromisoformat(found[1])


def period_of(task: dict[str, Any]) -> Period:
    return read_period(task["query"], today_of(task))


def named_id(task: dict[str, Any], prefix: str, what: str) -> str:
    """The record Id of key prefix `prefix` that the task's query names."""
    found = re.search(rf"\b{prefix}[0-9A-Za-z]{{15}}\b", task["query"])
    if found is None:
        raise NotScripted(f"the query names no {what}")
    return found[0]


def extreme_of(query: str) -> str:
    """Whether the query asks for the lowest ("min") or the highest ("max")."""
    return "min" if re.search(r"\b(shortest|fewest|lowest)\b", query) else "max"


def pick(values: dict[str, float], extreme: str) -> str:
    """The key of the lowest or highest value; "None" when there is nothing to compare."""
    if not values:
        return "None"
    return (min if extreme == "min" else max)(values, key=lambda key: values[key])


# --- a product's specification tables ---------------------------------------------------------

_CELL = re.compile(r"<t[hd]>(.*?)</t[hd]>")


def spec_values(text: str, product: str, column: str) -> list[str]:
    """What an article's tables state in `column` for the product named in a row's first cell."""
    values: list[str] = []
    for table in re.findall(r"<table>(.*?)</table>", text, re.S):
        rows = [[html.unescape(cell) for cell in _CELL.findall(row)] for row in table.split("<tr>")]
        header = next((row for row in rows if row), [])
        if column not in header:
            continue
        at = header.index(column)
        values += [row[at] for row in rows[1:] if len(row) > at and row[0] == product]
    return values


def product_question(question: str) -> re.Pattern[str]:
    """A question about a product ({product}: its name) as a pattern that captures the name."""
    before, after = question.split("{product}")
    return re.compile(re.escape(before) + "(?P<product>.+)" + re.escape(after))
