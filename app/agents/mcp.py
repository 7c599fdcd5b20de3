"""The Model Context Protocol endpoint at /mcp: streamable HTTP (stateless and answering in
JSON, so any worker serves any call), with tools over the org's REST API.

A tool call carries the caller's bearer token (an access token of the org, of a sandbox or of
an episode) and runs as an in-process request to the REST API with that token: the same
authentication, the same sandbox a token reaches and no other, the same call log and the same
errors. A REST error comes back as a tool error reading "<errorCode>: <message>", as CRMArena's
connector shows errors to its agents. `submit_answer` grades an episode's answer. CRMArena's
own function-calling tools are there too (`crmarena_tools`), over its connector's rules.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import orjson
from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.agents.asgi_call import AsgiResponse, UrlTooLong, asgi_call
from app.agents.crmarena_tools import add_crmarena_tools
from app.agents.episode_tools import EpisodeToolGate
from app.agents.mcp_direct import DirectCalls, direct_call
from app.api.deps import resolve_token, token_in
from app.api.episodes import answer
from app.api.state import AppState
from app.api.subrequests import body_first
from app.errors import InvalidSession, SalesforceError
from app.metadata import metadata_wire
from app.metadata.prompt_schema import crmarena_schema, schema_text

API = "/services/data/v59.0"
# MCP's hints of what a tool does to the org: a client (and the OpenEnv environment, which reads
# the sandbox's diff again after a tool that writes) may rely on them.
READS = ToolAnnotations(readOnlyHint=True)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False)
DELETES = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True)
PATH = "/mcp"
# Which agent interface a call comes through, as the results store files an answer: the
# OpenEnv environment's calls say so (a label: it grants nothing).
CHANNEL_HEADER = "x-localforce-channel"
INSTRUCTIONS = (
    "A Salesforce org served by localforce. Send your access token as 'Authorization: Bearer "
    "<token>'. Query with soql_query and sosl_search, read the schema with describe_global and "
    "describe, change records with create_record, update_record and delete_record, and custom "
    "objects and fields with read_metadata, create_metadata and update_metadata. In an "
    "episode, list_tools names the tools its task allows, and submit_answer gives the final "
    "answer, once: it ends the episode."
)


# What a tool of the org's API answers: its result as structured content, and the same JSON as
# text for a client that reads text only (compact: an agent's context is counted in tokens).
Structured = Annotated[CallToolResult, dict[str, Any]]


def structured(data: dict[str, Any]) -> CallToolResult:
    text = orjson.dumps(data).decode()
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _segment(value: str) -> str:
    """A path segment: nothing in it may climb to another endpoint."""
    return quote(value, safe="")


class ApiError(ToolError):
    """A REST call's error: '<errorCode>: <message>' for each error it holds."""


def _tool_error(response: AsgiResponse) -> ApiError:
    """The REST error as a tool error: '<errorCode>: <message>' for each error it holds."""
    try:
        body = json.loads(response.body)
        errors = body if isinstance(body, list) else [body]
        text = "; ".join(f"{e['errorCode']}: {e['message']}" for e in errors)
    except (ValueError, KeyError, TypeError):
        text = f"HTTP {response.status}: {response.body.decode(errors='replace')[:200]}"
    return ApiError(text)


class OrgApi:
    """The app's REST API, called in process with the MCP request's token."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def call(
        self,
        ctx: Context,
        method: str,
        path: str,
        params: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        headers = {}
        authorization = (ctx.headers or {}).get("authorization")
        if authorization:
            headers["Authorization"] = authorization
        content = b""
        if body is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(body).encode()
        query = urlencode(params) if params else ""
        try:
            response = await asgi_call(self.app, method, f"{API}{path}", query, headers, content)
        except UrlTooLong as error:  # a query too long for a URL: a server's 414
            raise ApiError(f"HTTP 414: URI Too Long ({error})") from error
        if response.status >= 400:
            raise _tool_error(response)
        return orjson.loads(response.body) if response.body else None

    async def metadata(self, ctx: Context, operation: str, body: str) -> list[Any]:
        """A Metadata API call (SOAP) in the caller's session: its results, as data."""
        token = token_in(ctx.headers or {}) or ""
        headers = {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": '""'}
        content = metadata_wire.envelope(token, operation, body)
        response = await asgi_call(self.app, "POST", metadata_wire.PATH, "", headers, content)
        try:
            return metadata_wire.results(response.body)
        except metadata_wire.MetadataFault as fault:
            raise ApiError(str(fault)) from fault

    async def change_metadata(
        self, ctx: Context, operation: str, metadata_type: str, components: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """createMetadata or updateMetadata of `components`: each one's SaveResult."""
        try:
            body = metadata_wire.components_body(metadata_type, components)
        except ValueError as error:
            raise ApiError(f"INVALID_INPUT: {error}") from error
        return {"results": await self.metadata(ctx, operation, body)}

    async def query_all(self, ctx: Context, soql: str) -> dict[str, Any]:
        """Every record of a query, page after page."""
        result = await self.call(ctx, "GET", "/query", {"q": soql})
        records = list(result["records"])
        while not result["done"]:
            result = await self.call(ctx, "GET", result["nextRecordsUrl"].removeprefix(API))
            records += result["records"]
        return {"totalSize": result["totalSize"], "done": True, "records": records}

    async def run_query(self, ctx: Context, text: str) -> tuple[Any, int]:
        """CRMArena's connector (crmarena.md 6.1): SOSL for a text starting FIND, else
        query_all with code fences stripped; `attributes` dropped at the top level and the
        columns null in every row dropped; an error's text and 0 instead of records and 1."""
        try:
            if text.startswith("FIND"):
                records = (await self.call(ctx, "GET", "/search", {"q": text}))["searchRecords"]
            else:
                soql = text.replace("```sql", "").replace("```", "")
                records = (await self.query_all(ctx, soql))["records"]
        except ApiError as error:
            return str(error), 0
        for record in records:
            record.pop("attributes", None)
        if records:
            empty = [key for key in records[0] if all(r.get(key) is None for r in records)]
            for record in records:
                for key in empty:
                    record.pop(key, None)
        return records, 1


@contextmanager
def _logging_left_alone() -> Iterator[None]:
    """The SDK's server configures the process's root logger when made (a handler, level
    INFO): the host's logging is the host's, so its state is put back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def build_mcp(app: FastAPI, state: AppState, orgs: list[str]) -> MCPServer:
    """The MCP server of the app, its tools reaching the app's REST API, with the schema of
    each of `orgs` as a resource."""
    with _logging_left_alone():
        server = MCPServer("localforce", instructions=INSTRUCTIONS)
    api = OrgApi(app)

    @server.tool(annotations=READS)
    async def soql_query(query: str, ctx: Context) -> Structured:
        """Run a SOQL query; every page of the result, as query_all gives it."""
        return structured(await api.query_all(ctx, query))

    @server.tool(annotations=READS)
    async def sosl_search(search: str, ctx: Context) -> Structured:
        """Run a SOSL search (FIND {term} IN ... RETURNING ...)."""
        return structured(await api.call(ctx, "GET", "/search", {"q": search}))

    @server.tool(annotations=READS)
    async def describe_global(ctx: Context) -> Structured:
        """The org's objects: names, labels and what may be done with each."""
        return structured(await api.call(ctx, "GET", "/sobjects"))

    @server.tool(annotations=READS)
    async def describe(sobject: str, ctx: Context) -> Structured:
        """An object's fields, their types, picklist values and relationships."""
        return structured(await api.call(ctx, "GET", f"/sobjects/{_segment(sobject)}/describe"))

    @server.tool(annotations=READS)
    async def get_record(
        sobject: str, record_id: str, ctx: Context, fields: list[str] | None = None
    ) -> Structured:
        """One record by Id, with the given fields (all of them if none are given)."""
        params = {"fields": ",".join(fields)} if fields else None
        path = f"/sobjects/{_segment(sobject)}/{_segment(record_id)}"
        return structured(await api.call(ctx, "GET", path, params))

    @server.tool(annotations=WRITES)
    async def create_record(sobject: str, fields: dict[str, Any], ctx: Context) -> Structured:
        """Create a record; its Id comes back."""
        return structured(
            await api.call(ctx, "POST", f"/sobjects/{_segment(sobject)}", body=fields)
        )

    @server.tool(annotations=WRITES)
    async def update_record(
        sobject: str, record_id: str, fields: dict[str, Any], ctx: Context
    ) -> Structured:
        """Set fields of a record."""
        path = f"/sobjects/{_segment(sobject)}/{_segment(record_id)}"
        await api.call(ctx, "PATCH", path, body=fields)
        return structured({"id": record_id, "success": True})

    @server.tool(annotations=DELETES)
    async def delete_record(sobject: str, record_id: str, ctx: Context) -> Structured:
        """Delete a record."""
        await api.call(ctx, "DELETE", f"/sobjects/{_segment(sobject)}/{_segment(record_id)}")
        return structured({"id": record_id, "success": True})

    @server.tool(annotations=READS)
    async def read_metadata(metadata_type: str, full_names: list[str], ctx: Context) -> Structured:
        """The Metadata API's readMetadata: components of a type (CustomObject; CustomField,
        named Object.Field__c) as their metadata, null for a name none has."""
        body = metadata_wire.read_body(metadata_type, full_names)
        records = metadata_wire.read_records(await api.metadata(ctx, "readMetadata", body))
        return structured({"records": records})

    @server.tool(annotations=WRITES)
    async def create_metadata(
        metadata_type: str, components: list[dict[str, Any]], ctx: Context
    ) -> Structured:
        """The Metadata API's createMetadata: new components of a type (CustomObject,
        CustomField), each its metadata by element name (fullName, label, type, length, ...);
        each one's SaveResult comes back."""
        return structured(
            await api.change_metadata(ctx, "createMetadata", metadata_type, components)
        )

    @server.tool(annotations=WRITES)
    async def update_metadata(
        metadata_type: str, components: list[dict[str, Any]], ctx: Context
    ) -> Structured:
        """The Metadata API's updateMetadata: each component's whole metadata, replacing what
        it was (read it first); each one's SaveResult comes back."""
        return structured(
            await api.change_metadata(ctx, "updateMetadata", metadata_type, components)
        )

    @server.tool(annotations=READS)
    async def submit_answer(response: str, ctx: Context) -> Structured:
        """In an episode: give the final answer, once. It is graded and recorded, and the
        episode ends: its reward comes back (a write task's from what the episode changed in
        the org), and no tool reaches the org after it."""
        return structured(await run_in_threadpool(_submit, state, (ctx.headers or {}), response))

    add_crmarena_tools(server, api.run_query)
    for org in orgs:
        _add_schema(server, state, org)
    server.middleware.append(EpisodeToolGate(state, server))
    return server


def _add_schema(server: MCPServer, state: AppState, org: str) -> None:
    @server.resource(
        f"localforce://schema/{org}",
        name=f"{org}-schema",
        description=f"The {org} org's objects and fields, as CRMArena's prompt describes them",
        mime_type="text/markdown",
    )
    def schema() -> str:
        return schema_text(crmarena_schema(org, state.settings.seed_dir))


def _submit(state: AppState, headers: Mapping[str, str], response: str) -> dict[str, Any]:
    """The episode's answer, graded and kept once; what the agent learns is its reward and
    that the episode ended, never the expected answer."""
    token = token_in(headers)
    resolved = None if token is None else resolve_token(state, token)
    if resolved is None:
        raise ToolError(_text(InvalidSession()))
    episode_id = resolved.session.sandbox_id
    channel = "openenv" if headers.get(CHANNEL_HEADER) == "openenv" else "mcp"
    try:
        graded = answer(state, episode_id, response, channel)
    except SalesforceError as error:
        raise ToolError(_text(error)) from error
    return {
        "episode": episode_id,
        "reward": graded["reward"],
        "metric": graded["metric"],
        "done": True,
    }


def _text(error: SalesforceError) -> str:
    return f"{error.error_code}: {error}"


class McpEndpoint:
    """The /mcp endpoint. The SDK's session manager runs once per instance, and an app's
    lifespan may run more than once (each test client of it runs it), so each run makes its
    own."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.app: ASGIApp | None = None
        gate = next(layer for layer in server.middleware if isinstance(layer, EpisodeToolGate))
        self.direct: DirectCalls | None = DirectCalls(server, gate)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        http_app = self.server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.app = http_app.routes[0].endpoint  # type: ignore[attr-defined]
        try:
            async with self.server.session_manager.run():
                yield
        finally:
            self.app = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:  # outside the lifespan: nothing serves MCP
            raise SalesforceError(
                "The MCP endpoint is not running", error_code="SERVER_UNAVAILABLE", status_code=503
            )
        if self.direct is not None and scope["method"] == "POST":
            body = await _body(receive)
            call = direct_call(scope, body)
            if call is not None:
                answer = await self.direct.answer(call)
                headers = [(b"content-type", b"application/json")]
                headers.append((b"content-length", str(len(answer)).encode()))
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": answer})
                return
            receive = body_first(body, receive)
        await self.app(scope, receive, send)

    def route(self) -> BaseRoute:
        # POST only (and DELETE, which ends nothing here): a stateless server has no stream of
        # its own to open on GET, and the spec's answer to that GET is 405.
        return Route(PATH, endpoint=self, methods=["POST", "DELETE"])


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
