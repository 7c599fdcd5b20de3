"""The SOAP APIs' endpoints: one route per API, dispatching on the Body's operation.

The partner API (`/services/Soap/u/`) serves login, logout, getUserInfo, getServerTimestamp,
query, queryAll and queryMore; the enterprise API (`/services/Soap/c/`) all but the queries
(its records are typed by the WSDL). Any other call of their WSDLs answers a fault naming it,
after the session is checked; a call no WSDL has is a soapenv:Client fault. The Metadata API's
calls are soap_metadata's; the Tooling and Apex SOAP APIs answer every call with a fault
naming the API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request, Response

from app.api.auth import sandbox_login
from app.api.deps import RawBodyDep, StateDep, org_context_at, sandbox_of, session_for
from app.api.routing import SalesforceRouter, public_base_url
from app.api.soap import (
    SoapCall,
    UnexpectedElement,
    api_fault,
    client_fault,
    login_arguments,
    login_response,
    parse_call,
    soap_response,
    user_info_xml,
)
from app.api.soap_records import query_result_xml
from app.api.state import AppState
from app.api.threads import run_in_request_thread
from app.errors import FeatureNotSupported, InvalidSession, NotFound, SalesforceError
from app.metadata.values import format_datetime_z
from app.sandbox.model import Sandbox
from app.services.auth import Session, end_sessions
from app.services.context import OrgContext
from app.services.org import parse_version
from app.services.query import batch_size_from, query_more, run_query

router = SalesforceRouter()
# The SOAP API's default batch of query records (QueryOptions' batchSize asks for 200..2000).
SOAP_BATCH_SIZE = 500
INVALID_SESSION = "Invalid Session ID found in SessionHeader: Illegal Session"
INVALID_LOGIN = "Invalid username, password, security token; or user locked out."


@dataclass(frozen=True)
class Call:
    """A call being answered: the request, the API it came to, and what it carries."""

    request: Request
    state: AppState
    api: SoapApi
    api_version: str
    soap: SoapCall

    async def session(self) -> Session:
        """The session its SessionHeader names (InvalidSession when none does)."""
        token = self.soap.header_value("SessionHeader", "sessionId")
        return await session_for(self.request, token or None)

    async def sandbox(self) -> Sandbox:
        await self.session()
        return await sandbox_of(self.request)

    async def org(self) -> OrgContext:
        await self.session()
        return await org_context_at(self.request, self.api_version)

    def respond(self, result: str) -> Response:
        return soap_response(self.api.namespace, self.soap.name, result)


Operation = Callable[[Call], Awaitable[Response]]


@dataclass(frozen=True)
class SoapApi:
    name: str
    namespace: str
    operations: dict[str, Operation]
    # Calls its WSDL has that localforce does not build: a fault names them.
    unbuilt: frozenset[str]

    @property
    def fault_namespace(self) -> str:
        return self.namespace.replace("urn:", "urn:fault.", 1)


async def login(call: Call) -> Response:
    """The one call without a session."""
    try:
        arguments = login_arguments(call.soap.operation)
    except UnexpectedElement as error:
        return client_fault(str(error))
    if arguments is None:
        raise SalesforceError(INVALID_LOGIN, error_code="INVALID_LOGIN")
    username, password = arguments
    state = call.state
    session = await run_in_request_thread(
        sandbox_login, state, username=username, password=password, credentials=state.credentials
    )
    return login_response(
        public_base_url(call.request),
        call.api.namespace,
        call.api_version,
        session,
        state.settings.session_idle_seconds,
    )


async def logout(call: Call) -> Response:
    session = await call.session()
    await run_in_request_thread(end_sessions, call.state.platform, [session.token])
    call.state.sessions.clear()
    return call.respond("")


async def get_user_info(call: Call) -> Response:
    session = await call.session()
    seconds = call.state.settings.session_idle_seconds
    return call.respond(f"<result>{user_info_xml(session, seconds)}</result>")


async def get_server_timestamp(call: Call) -> Response:
    stamp = format_datetime_z((await call.sandbox()).clock.now())
    return call.respond(f"<result><timestamp>{stamp}</timestamp></result>")


def _batch_size(call: Call) -> int:
    asked = call.soap.header_value("QueryOptions", "batchSize")
    return batch_size_from(f"batchSize={asked}") if asked else SOAP_BATCH_SIZE


def _locator(result: dict[str, object]) -> str | None:
    url = result.get("nextRecordsUrl")
    return str(url).rsplit("/", 1)[-1] if url else None


def _query_call(include_deleted: bool) -> Operation:
    async def query(call: Call) -> Response:
        ctx = await call.org()
        sandbox = await call.sandbox()
        text = call.soap.argument("queryString")

        def run() -> dict[str, object]:
            with sandbox.engine.connect() as conn:
                return run_query(
                    conn,
                    ctx,
                    call.state.cursors,
                    text,
                    include_deleted=include_deleted,
                    batch_size=_batch_size(call),
                )

        result = await run_in_request_thread(run)
        return call.respond(query_result_xml(result, "result", _locator(result)))

    return query


async def query_more_call(call: Call) -> Response:
    ctx = await call.org()
    locator = (call.soap.argument("queryLocator") or "").strip()
    result = await run_in_request_thread(query_more, ctx, call.state.cursors, locator)
    return call.respond(query_result_xml(result, "result", _locator(result)))


SESSION_CALLS: dict[str, Operation] = {
    "login": login,
    "logout": logout,
    "getUserInfo": get_user_info,
    "getServerTimestamp": get_server_timestamp,
}
QUERY_CALLS: dict[str, Operation] = {
    "query": _query_call(include_deleted=False),
    "queryAll": _query_call(include_deleted=True),
    "queryMore": query_more_call,
}
# The other calls of the partner and enterprise WSDLs.
WSDL_CALLS = frozenset(
    {
        "convertLead", "create", "delete", "deleteByExample", "describeAllTabs",
        "describeApprovalLayout", "describeAppMenu", "describeAvailableQuickActions",
        "describeCompactLayouts", "describeDataCategoryGroups",
        "describeDataCategoryGroupStructures", "describeDataCategoryMappings", "describeGlobal",
        "describeGlobalTheme", "describeKnowledgeSettings", "describeLayout",
        "describeNouns", "describePathAssistants", "describePrimaryCompactLayouts",
        "describeQuickActions", "describeQuickActionsForRecordType", "describeSearchLayouts",
        "describeSearchScopeOrder", "describeSObject", "describeSObjectListViews",
        "describeSObjects", "describeSoftphoneLayout", "describeSoqlListViews", "describeTabs",
        "describeTheme", "describeVisualForce", "emptyRecycleBin", "executeListView",
        "findDuplicates", "findDuplicatesByIds", "getDeleted", "getUpdated",
        "invalidateSessions", "merge", "performQuickActions", "process", "renderEmailTemplate",
        "renderStoredEmailTemplate", "resetPassword", "retrieve", "search", "sendEmail",
        "sendEmailMessage", "setPassword", "undelete", "update", "upsert",
    }
)  # fmt: skip
PARTNER = SoapApi(
    name="the partner SOAP API",
    namespace="urn:partner.soap.sforce.com",
    operations={**SESSION_CALLS, **QUERY_CALLS},
    unbuilt=WSDL_CALLS,
)
ENTERPRISE = SoapApi(
    name="the enterprise SOAP API",
    namespace="urn:enterprise.soap.sforce.com",
    operations=SESSION_CALLS,
    unbuilt=WSDL_CALLS | QUERY_CALLS.keys(),
)
# SOAP APIs not built: every call, once its session is good, is told which API it reached.
UNBUILT_APIS = {
    "T": ("the Tooling SOAP API", "urn:tooling.soap.sforce.com"),
    "s": ("the Apex SOAP API", "http://soap.sforce.com/2006/08/apex"),
    "class": ("Apex web services", "http://soap.sforce.com/schemas/class"),
}


async def dispatch(call: Call) -> Response:
    name = call.soap.name
    operation = call.api.operations.get(name)
    if operation is not None:
        return await operation(call)
    if name not in call.api.unbuilt:
        return client_fault(
            f"No operation available for request {call.soap.qualified_name}, please check "
            "the WSDL for the service."
        )
    await call.session()  # a bad session is told so first
    raise FeatureNotSupported(f"the {name}() call of {call.api.name}")


async def answer(
    request: Request, raw: bytes, state: AppState, api: SoapApi, version: str
) -> Response:
    soap = parse_call(raw)
    try:
        api_version = parse_version("v" + version)
    except NotFound:
        return api_fault(
            "UNSUPPORTED_API_VERSION", f"Unsupported API version: {version}", api.fault_namespace
        )
    if soap is None:
        # No envelope to read: a login Salesforce cannot read is an invalid login.
        return api_fault("INVALID_LOGIN", INVALID_LOGIN, api.fault_namespace)
    try:
        return await dispatch(Call(request, state, api, api_version, soap))
    except InvalidSession:
        return api_fault("INVALID_SESSION_ID", INVALID_SESSION, api.fault_namespace)
    except SalesforceError as error:
        return api_fault(error.error_code, error.message, api.fault_namespace)


def soap_endpoint(api: SoapApi) -> Callable[..., Awaitable[Response]]:
    async def endpoint(
        version: str, request: Request, raw: RawBodyDep, state: StateDep
    ) -> Response:
        return await answer(request, raw, state, api, version)

    return endpoint


for letter, soap_api in (("u", PARTNER), ("c", ENTERPRISE)):
    for path in (
        f"/services/Soap/{letter}/{{version}}",
        f"/services/Soap/{letter}/{{version}}/{{org_id}}",
    ):
        # XML described by a WSDL, not OpenAPI.
        router.add_api_route(
            path, soap_endpoint(soap_api), methods=["POST"], include_in_schema=False
        )


def _unbuilt_endpoint(feature: str, namespace: str) -> Callable[..., Awaitable[Response]]:
    fault_namespace = namespace

    async def endpoint(request: Request, raw: RawBodyDep) -> Response:
        soap = parse_call(raw)
        token = None if soap is None else soap.header_value("SessionHeader", "sessionId")
        try:
            await session_for(request, token or None)
        except InvalidSession:
            return api_fault("INVALID_SESSION_ID", INVALID_SESSION, fault_namespace)
        error = FeatureNotSupported(feature)
        return api_fault(error.error_code, error.message, fault_namespace)

    return endpoint


for letter, (feature, namespace) in UNBUILT_APIS.items():
    router.add_api_route(
        f"/services/Soap/{letter}/{{rest:path}}",
        _unbuilt_endpoint(feature, namespace),
        methods=["POST"],
        include_in_schema=False,
    )
