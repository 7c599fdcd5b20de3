"""What the fuzzer sends: hypothesis strategies for whole HTTP requests, built from the org's
schema and a corpus of seed queries, with the inputs that broke servers before (numbers past
64 bits and past 4,300 digits, far dates and offsets, lone surrogates, deep nesting, long
patterns) mixed into every part: SOQL, SOSL, JSON bodies, headers and paths."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import httpx2
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from app.metadata.model import FieldType, SObjectDef
from app.soql.literals import N_DATE_LITERALS
from tests.sosl.test_search_cases import CASES as SOSL_CASES

API = "/services/data/v59.0"
SOQL_FIXTURES = Path(__file__).parents[1] / "tests" / "soql" / "fixtures"


@dataclass(frozen=True)
class Call:
    """One request: `family` names the strategy that made it, for the report."""

    family: str
    method: str
    path: str  # already percent-encoded, query string included
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


def run_settings(examples: int) -> settings:
    """Generation only: no shrinking, no example database, no deadline, no health checks."""
    return settings(
        max_examples=examples,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


# A client of a live server (httpx), or an app's TestClient (Starlette's is httpx2's client
# once httpx2 is installed), and what either answers.
Client = httpx.Client | httpx2.Client
Response = httpx.Response | httpx2.Response


def send(client: Client, call: Call) -> Response | None:
    """The call's answer, or None for a URL over httpx's own 64 kB (the server is never asked).
    Header values go as the bytes they are: httpx would refuse non-ASCII text."""
    raw = {name.encode(): value.encode() for name, value in call.headers.items()}
    try:
        return client.request(call.method, call.path, headers=raw, content=call.body)
    except (httpx.InvalidURL, httpx2.InvalidURL):
        return None


def soql_seeds() -> list[str]:
    """The queries of parse_ok.txt: blocks split by blank lines, before any `=>` line."""
    seeds, block = [], []
    lines = (SOQL_FIXTURES / "parse_ok.txt").read_text(encoding="utf-8").splitlines()
    for line in [*lines, ""]:
        if line.strip() and not line.startswith("#"):
            block.append(line)
            continue
        query = " ".join(part for part in block if not part.startswith("=>")).strip()
        if query:
            seeds.append(query)
        block = []
    return seeds


# Literals that reached past a bound somewhere before: digits, exponents, 64-bit edges, years
# and offsets out of range, date literals with huge N, and text with quotes and escapes.
HOSTILE_NUMBERS = [
    "0", "-1", "1.5", "9" * 20, "9" * 5000, "-" + "9" * 400, "1e308", "1e309", "-1e999999",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "2147483648",
    "0x10", "1_000", "١٢٣", "²", "NaN", "Infinity", ".5", "5.", "00000000000000000001",
    "9" * 300 + ".5", "-" + "9" * 5000, "1e-400", "3000000000",
]  # fmt: skip
# Nesting depths that reached Python's recursion limit somewhere before, or come close to it.
NESTING_DEPTHS = [50, 150, 499, 600, 990, 3000]
HOSTILE_DATES = [
    "2024-01-01", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00+99:00", "2024-01-01T00:00:00-18:01",
    "0000-01-01", "9999-12-31T23:59:59Z", "10000-01-01", "252027-01-01", "-2997974-01-01",
    "2024-02-30", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:00.9999999Z",
    "TODAY", "LAST_N_DAYS:99999999999999999999", "NEXT_N_YEARS:" + "9" * 5000, "THIS_FISCAL_YEAR",
]  # fmt: skip
HOSTILE_TEXT = [
    "", "'", "\\'", "\\", "\\u0041", "\\ud800", "%", "_", "%" * 300, "a" * 20_000, "\x00", "\n",
    "é", "東京", "😀", "' OR '1'='1", "); DROP TABLE Account; --", "{", "}", "\u202e",
]  # fmt: skip
OPERATORS = ["=", "!=", "<", "<=", ">", ">=", "LIKE", "IN", "NOT IN", "INCLUDES", "EXCLUDES"]
PIECES = [
    "(", ")", ",", ".", " AND ", " OR ", " NOT ", " WHERE ", " GROUP BY ", " ORDER BY ", " LIMIT ",
    " OFFSET ", " HAVING ", " FROM ", " SELECT ", " TYPEOF ", " USING SCOPE ", " FOR VIEW ",
    " WITH SECURITY_ENFORCED ", "COUNT(Id)", "FIELDS(ALL)", "(SELECT Id FROM Contacts)",
    "Id, " * 300, "(" * 200, ")" * 200, "'", "\\", "\x00", *HOSTILE_NUMBERS[:8], "TODAY", "NULL",
    ":x",
]  # fmt: skip


# The strategies below are built once (per object), not at each draw: a strategy built in a
# draw costs hypothesis a validation each time, and a nested @st.composite a compile.
@functools.cache
def _literal() -> st.SearchStrategy[str]:
    quoted = st.sampled_from(HOSTILE_TEXT) | st.text(max_size=12)
    return st.one_of(
        st.sampled_from(HOSTILE_NUMBERS),
        st.sampled_from(HOSTILE_DATES),
        quoted.map(lambda text: "'" + text.replace("'", "\\'") + "'"),
        st.sampled_from(["null", "true", "false", "TRUE"]),
        st.lists(st.sampled_from(["'a'", "1", "null", "'\\ud800'"]), max_size=5).map(
            lambda items: "(" + ", ".join(items) + ")"
        ),
    )


@functools.cache
def _names(sobject: SObjectDef) -> st.SearchStrategy[str]:
    known = [f.name for f in sobject.fields]
    parents = [f"{f.relationship_name}.Name" for f in sobject.fields if f.relationship_name]
    return st.one_of(
        st.sampled_from(known),
        st.sampled_from(known),
        st.sampled_from(parents or known),
        st.sampled_from(["Nope__c", "Id" * 200, "Owner.Manager.Manager.Manager.Manager.Name"]),
        st.text(alphabet="abcXYZ_._0123", min_size=1, max_size=12),
    )


# Literals of the right kind for a field, so that most generated queries run, not just parse.
TYPED_LITERALS: dict[FieldType, list[str]] = {
    FieldType.BOOLEAN: ["true", "false"],
    FieldType.INT: ["0", "1", "-5", "2147483647", "2147483648"],
    FieldType.DOUBLE: ["0", "1.5", "-2.25", "1e3"],
    FieldType.CURRENCY: ["0", "99.99", "100"],
    FieldType.PERCENT: ["0", "50"],
    FieldType.DATE: ["2023-01-15", "TODAY", "LAST_N_DAYS:30", "THIS_YEAR", "NEXT_N_MONTHS:2"],
    FieldType.DATETIME: ["2023-01-15T10:00:00Z", "2023-01-15T10:00:00+05:30", "LAST_WEEK"],
}
TEXT_LITERALS = ["'a'", "'%a%'", "'New'", "'Closed'", "null", "('a', 'b')", "''"]


@functools.cache
def _condition(sobject: SObjectDef) -> st.SearchStrategy[str]:
    @st.composite
    def typed(draw: st.DrawFn) -> str:
        field = draw(st.sampled_from(sobject.fields))
        operator = draw(st.sampled_from(["=", "!=", "<", ">=", "IN", "LIKE"]))
        literal = draw(st.sampled_from(TYPED_LITERALS.get(field.type, TEXT_LITERALS)))
        if operator == "IN" and not literal.startswith("("):
            literal = f"({literal})"
        return f"{field.name} {operator} {literal}"

    hostile = st.tuples(_names(sobject), st.sampled_from(OPERATORS), _literal()).map(" ".join)
    huge = st.sampled_from(HOSTILE_NUMBERS)
    numeric = [
        f.name for f in sobject.fields if f.type in TYPED_LITERALS and f.type.value != "boolean"
    ]
    # A number past every bound in each place a number goes: compared, listed, a date's N.
    past_bounds = st.one_of(
        st.tuples(st.sampled_from(numeric or ["Id"]), st.sampled_from(["=", "<", ">="]), huge).map(
            " ".join
        ),
        st.tuples(st.sampled_from(numeric or ["Id"]), st.lists(huge, min_size=1, max_size=3)).map(
            lambda parts: f"{parts[0]} IN ({', '.join(parts[1])})"
        ),
        st.tuples(st.sampled_from(sorted(N_DATE_LITERALS)), huge).map(
            lambda parts: f"CreatedDate = {parts[0]}:{parts[1]}"
        ),
    )
    return typed() | typed() | hostile | past_bounds


@st.composite
def generated_soql(draw: st.DrawFn, objects: list[SObjectDef]) -> str:
    sobject = draw(st.sampled_from(objects))
    names = _names(sobject)
    fields = ", ".join(draw(st.lists(names, min_size=1, max_size=6)))
    text = f"SELECT {fields} FROM {sobject.name}"
    conditions = draw(st.lists(_condition(sobject), max_size=3))
    if conditions:
        joiner = draw(st.sampled_from([" AND ", " OR "]))
        text += " WHERE " + joiner.join(conditions)
    if draw(st.booleans()):
        text += f" ORDER BY {draw(names)} {draw(st.sampled_from(['', 'DESC', 'NULLS LAST']))}"
    if draw(st.booleans()):
        text += f" LIMIT {draw(st.sampled_from(['1', '10', '200', *HOSTILE_NUMBERS]))}"
    if draw(st.integers(0, 4)) == 0:
        text += f" OFFSET {draw(st.sampled_from(HOSTILE_NUMBERS))}"
    return text


@st.composite
def past_bounds_soql(draw: st.DrawFn, objects: list[SObjectDef]) -> str:
    """Aggregates compared with numbers past every bound, and conditions nested past the
    parser's depth (parentheses, NOT chains, semi-joins)."""
    sobject = draw(st.sampled_from(objects))
    number = draw(st.sampled_from(HOSTILE_NUMBERS))
    depth = draw(st.sampled_from(NESTING_DEPTHS))
    shapes = [
        f"SELECT Name, COUNT(Id) FROM {sobject.name} GROUP BY Name HAVING COUNT(Id) = {number}",
        f"SELECT COUNT(Id) FROM {sobject.name} HAVING COUNT(Id) IN (1, {number})",
        f"SELECT Id FROM {sobject.name} WHERE " + "(" * depth + "Id != null" + ")" * depth,
        f"SELECT Id FROM {sobject.name} WHERE " + "(NOT " * depth + "Id = null" + ")" * depth,
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE " * (depth // 10)
        + "Id != null"
        + ")" * (depth // 10),
    ]
    return draw(st.sampled_from(shapes))


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed changed in up to four places: pieces inserted, spans dropped, doubled or replaced."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        end = at + draw(st.integers(min_value=1, max_value=16))
        action = draw(st.sampled_from(["insert", "delete", "replace", "double"]))
        piece = draw(_piece())
        text = {
            "insert": text[:at] + piece + text[at:],
            "delete": text[:at] + text[end:],
            "replace": text[:at] + piece + text[end:],
            "double": text[:at] + text[at:end] * draw(st.integers(2, 50)) + text[end:],
        }[action]
    return text


@functools.cache
def _piece() -> st.SearchStrategy[str]:
    return st.sampled_from(PIECES) | _literal() | st.text(max_size=6)


def _q(text: str) -> str:
    # Lone surrogates cannot be UTF-8: they travel as the bytes a careless client sends.
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


@functools.cache
def json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=2**63 - 2, max_value=2**70),
        st.floats(allow_nan=False),
        st.sampled_from(HOSTILE_TEXT + HOSTILE_DATES),
        st.text(max_size=20),
    )
    return st.recursive(
        scalars,
        lambda kids: (
            st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3)
        ),
        max_leaves=8,
    )


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode()


# Stands in an outline for the deep text `_deep` writes.
DEEP = "<deep>"


def _deep(depth: int, leaf: str = '"x"') -> str:
    """JSON text of objects and arrays nested `depth` deep (json.dumps would recurse)."""
    return '{"a": [' * (depth // 2) + leaf + "]}" * (depth // 2)


# JSON texts no serializer would write: raw numbers past every bound, deep nesting, junk.
RAW_BODIES = [
    b"", b"{", b"[]", b"null", b'"x"', b"{" * 5000, b"[" * 100_000,
    b'{"Name": 1' + b"0" * 5000 + b"}",
    b'{"Name": "\\ud800"}', b'{"Name": "\xff\xfe"}', b'{"Name": 1e999}', b'{"a": NaN}',
    b'{"Name": "x", "Name": "y"}', b"\x00" * 10, b'{"attributes": {"type": "Account"}}',
]  # fmt: skip


@st.composite
def record_bodies(draw: st.DrawFn, sobject: SObjectDef) -> bytes:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(RAW_BODIES))
    return _json(draw(_record_values(sobject)))


@functools.cache
def _record_values(sobject: SObjectDef) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from([f.name for f in sobject.fields]) | st.text(max_size=10)
    return st.dictionaries(keys, json_values(), max_size=5)


CONTENT_TYPES = [
    "application/json", "application/json; charset=UTF-8", "text/plain", "application/xml",
    "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "json", "", "*/*",
]  # fmt: skip
VERSIONS = ["v59.0", "v20.0", "v66.0", "v19.0", "v67.0", "v59", "59.0", "v" + "9" * 5000, "v5e1.0"]


def record_ids(objects: list[SObjectDef]) -> st.SearchStrategy[str]:
    prefixed = st.tuples(
        st.sampled_from([o.key_prefix or "001" for o in objects]),
        st.text(alphabet="0123456789ABCDEFabcdef", min_size=12, max_size=15),
    ).map("".join)
    return prefixed | st.text(max_size=40) | st.sampled_from(["x" * 300, "000000000000000AAA"])


def calls(objects: list[SObjectDef], headers: dict[str, str]) -> st.SearchStrategy[Call]:
    """Every family of request, each with the session's headers (sometimes spoiled)."""
    soql = st.one_of(
        generated_soql(objects),
        mutated(soql_seeds()),
        past_bounds_soql(objects),
        st.text(max_size=200),
    )
    sosl_past_bounds = (
        st.tuples(st.sampled_from(HOSTILE_NUMBERS), st.sampled_from(NESTING_DEPTHS))
        .map(
            lambda parts: st.sampled_from(
                [
                    f"FIND {{acme}} RETURNING Account(Name LIMIT {parts[0]}) LIMIT {parts[0]}",
                    f"FIND {{acme}} RETURNING Account(Name WHERE AnnualRevenue IN (1, {parts[0]}))",
                    f"FIND {{acme}} RETURNING Account(Name OFFSET {parts[0]})",
                    "FIND {acme} RETURNING Account(Name WHERE "
                    + "(" * parts[1]
                    + "Name = 'x'"
                    + ")" * parts[1]
                    + ")",
                    "FIND {" + "(" * parts[1] + "acme" + ")" * parts[1] + "}",
                ]
            )
        )
        .flatmap(lambda strategy: strategy)
    )
    sosl = st.one_of(
        mutated([case.statement for case in SOSL_CASES]), sosl_past_bounds, st.text(max_size=120)
    )
    auth = st.one_of(
        st.just(headers),
        st.sampled_from(
            [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Bearer " + "x" * 5000},
             {"Authorization": headers["Authorization"] + "x"}, {"Authorization": "Basic Og=="}]
        ),
    )  # fmt: skip
    sobjects = st.sampled_from(objects)

    def query_call(text: str, all_rows: bool, options: str | None) -> Call:
        extra = {"Sforce-Query-Options": options} if options is not None else {}
        resource = "queryAll" if all_rows else "query"
        return Call("soql", "GET", f"{API}/{resource}?q={_q(text)}", {**headers, **extra})

    batch_sizes = st.none() | st.sampled_from(
        ["batchSize=200", "batchSize=1", "batchSize=" + "9" * 5000, "batchSize=²", "junk"]
    )
    soql_calls = st.builds(query_call, soql, st.booleans(), batch_sizes)
    sosl_calls = st.builds(
        lambda text: Call("sosl", "GET", f"{API}/search?q={_q(text)}", headers), sosl
    )
    parameterized = st.builds(
        lambda text, sobject, limit: Call(
            "parameterizedSearch",
            "GET",
            f"{API}/parameterizedSearch?q={_q(text)}&sobject={_q(sobject)}&overallLimit={_q(limit)}",
            headers,
        ),
        st.text(max_size=30) | st.sampled_from(HOSTILE_TEXT),
        st.sampled_from([o.name for o in objects] + ["Nope", ""]),
        st.sampled_from(HOSTILE_NUMBERS),
    )
    parameterized_post = st.builds(
        lambda body, ctype: Call(
            "parameterizedSearch", "POST", f"{API}/parameterizedSearch",
            {**headers, "Content-Type": ctype}, body,
        ),
        st.dictionaries(st.sampled_from(["q", "fields", "sobjects", "overallLimit", "in"]),
                        json_values(), max_size=4).map(_json) | st.sampled_from(RAW_BODIES),
        st.sampled_from(CONTENT_TYPES[:2]),
    )  # fmt: skip

    @st.composite
    def writes(draw: st.DrawFn) -> Call:
        sobject = draw(sobjects)
        body = draw(record_bodies(sobject))
        content_type = draw(st.sampled_from(CONTENT_TYPES) | st.just("application/json"))
        spoiled = {**draw(auth), "Content-Type": content_type}
        target = draw(st.sampled_from(["create", "update", "upsert", "delete"]))
        path = f"{API}/sobjects/{sobject.name}"
        record = _q(draw(record_ids(objects)))
        method, path = {
            "create": ("POST", path),
            "update": ("PATCH", f"{path}/{record}"),
            "upsert": ("PATCH", f"{path}/{_q(draw(_names(sobject)))}/{record}"),
            "delete": ("DELETE", f"{path}/{record}"),
        }[target]
        return Call(f"record {target}", method, path, spoiled, body)

    @st.composite
    def composites(draw: st.DrawFn) -> Call:
        sub_url = st.sampled_from(
            [f"/services/data/v59.0/sobjects/{o.name}" for o in objects]
            + [f"/services/data/v59.0/query?q={_q('SELECT Id FROM Account')}", "/x", "", "@{a.id}"]
        ) | st.text(max_size=30)
        sub = st.fixed_dictionaries(
            {"method": st.sampled_from(["GET", "POST", "PATCH", "DELETE", "PUT", "X"]),
             "url": sub_url, "referenceId": st.sampled_from(["a", "b", "1", "_", "a" * 300])},
            optional={"body": json_values()},
        )  # fmt: skip
        kind = draw(st.sampled_from(["composite", "batch", "collection", "tree"]))
        shape = {
            "composite": ("", {"compositeRequest": st.lists(sub, max_size=30),
                               "allOrNone": json_values()}),
            "batch": ("/batch", {"batchRequests": st.lists(sub, max_size=30),
                                 "haltOnError": json_values()}),
            "collection": ("/sobjects", {"records": st.lists(json_values(), max_size=5),
                                         "allOrNone": json_values()}),
            "tree": (f"/tree/{draw(sobjects).name}",
                     {"records": st.lists(json_values(), max_size=5)}),
        }[kind]  # fmt: skip
        body = draw(st.fixed_dictionaries({}, optional=shape[1]).map(_json))
        if draw(st.integers(0, 6)) == 0:
            body = draw(st.sampled_from(RAW_BODIES))
        elif draw(st.integers(0, 5)) == 0:  # a subrequest or record nested deep, references in it
            deep = _deep(draw(st.sampled_from(NESTING_DEPTHS)), '"@{a.id}"')
            record = {"attributes": {"type": "Account", "referenceId": "a"}, "Name": DEEP}
            create = {"method": "POST", "url": f"{API}/sobjects/Account", "referenceId": "b"}
            patch = {"method": "PATCH", "url": "v59.0/sobjects/Account/x", "richInput": DEEP}
            outline = {
                "composite": {"compositeRequest": [{**create, "body": DEEP}]},
                "batch": {"batchRequests": [patch]},
                "collection": {"records": [record]},
                "tree": {"records": [record]},
            }[kind]
            body = json.dumps(outline).replace(json.dumps(DEEP), deep).encode()
        method = "PATCH" if kind == "collection" and draw(st.booleans()) else "POST"
        return Call(f"composite {kind}", method, f"{API}/composite{shape[0]}",
                    {**headers, "Content-Type": "application/json"}, body)  # fmt: skip

    @st.composite
    def paths(draw: st.DrawFn) -> Call:
        version = draw(st.sampled_from(VERSIONS))
        name = draw(st.sampled_from([o.name for o in objects]) | st.text(max_size=20))
        record = _q(draw(record_ids(objects)))
        fields = _q(draw(st.text(max_size=20)))
        rest = draw(
            st.sampled_from(
                [
                    "",
                    "/describe",
                    "/updated?start=x&end=y",
                    "/deleted",
                    f"/{record}?fields={fields}",
                ]
            )
        )
        offset = _q(draw(st.sampled_from(HOSTILE_NUMBERS)))
        data = f"/services/data/{_q(version)}"
        path = {
            "sobjects": f"{data}/sobjects/{_q(name)}{rest}",
            "query-locator": f"{data}/query/{_q(name)}-{offset}",
            "limits": f"{data}/limits/recordCount?sObjects={_q(name)}",
            "id": f"/id/{_q(name)}/{record}",
        }
        target = draw(st.sampled_from(sorted(path)))
        method = draw(st.sampled_from(["GET", "GET", "HEAD", "OPTIONS", "PUT", "TRACE"]))
        return Call(f"path {target}", method, path[target], draw(auth))

    @st.composite
    def bulk_jobs(draw: st.DrawFn) -> Call:
        """Bulk API 2.0 job definitions, mostly wrong, and hostile job ids."""
        kind = draw(st.sampled_from(["ingest", "query"]))
        if draw(st.booleans()):
            names = st.sampled_from([o.name for o in objects]) | st.sampled_from(HOSTILE_TEXT)
            spec = {
                "object": names,
                "operation": st.sampled_from(
                    ["insert", "update", "upsert", "delete", "hardDelete", "query", "queryAll", ""]
                ),
                "externalIdFieldName": st.sampled_from(["Id", "External_ID__c", "Name", ""]),
                "query": soql | st.sampled_from(HOSTILE_TEXT),
                "contentType": st.sampled_from(["CSV", "JSON", "XML", ""]),
                "columnDelimiter": st.sampled_from(["COMMA", "TAB", "PIPE", "NOPE"]),
                "lineEnding": st.sampled_from(["LF", "CRLF", "CR"]),
            }
            body = draw(st.fixed_dictionaries({}, optional=spec).map(_json))
            if draw(st.integers(0, 4)) == 0:
                body = draw(st.sampled_from(RAW_BODIES))
            return Call(f"bulk {kind} create", "POST", f"{API}/jobs/{kind}",
                        {**headers, "Content-Type": "application/json"}, body)  # fmt: skip
        job = _q(
            draw(
                st.sampled_from(["750000000000000AAA", "750Lf0000000001IAA"]) | st.text(max_size=20)
            )
        )
        rest = draw(
            st.sampled_from(["", "/results?maxRecords=-1", "/results?locator=%00", "/batches",
                             "/successfulResults", "/unprocessedrecords"])
        )  # fmt: skip
        method = draw(st.sampled_from(["GET", "GET", "PATCH", "DELETE", "PUT"]))
        patch = b'{"state":"UploadComplete"}' if method == "PATCH" else None
        return Call(f"bulk {kind} job", method, f"{API}/jobs/{kind}/{job}{rest}",
                    {**headers, "Content-Type": "application/json"}, patch)  # fmt: skip

    return st.one_of(
        soql_calls, soql_calls, sosl_calls, parameterized, parameterized_post,
        writes(), composites(), paths(), bulk_jobs(),
    )  # fmt: skip
