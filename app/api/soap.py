"""SOAP envelopes: reading a call (its operation and header blocks) and writing responses and
faults as Salesforce's SOAP APIs do.

Element names in a success body are unprefixed in the API's namespace and a fault's detail uses
the literal `sf:` prefix, because clients find them by tag name (simple-salesforce) or by
regular expression (jsforce). Every fault is HTTP 500, as SOAP faults are.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.etree.ElementTree import Element
from xml.sax.saxutils import escape

from defusedxml import ElementTree
from fastapi import Response

from app.services.auth import ORG_ID, Session

SOAP_MEDIA_TYPE = "text/xml; charset=utf-8"
ENVELOPE_NS = "http://schemas.xmlsoap.org/soap/envelope/"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"


def local_name(element: Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def namespace_of(element: Element) -> str:
    return element.tag[1:].partition("}")[0] if element.tag.startswith("{") else ""


@dataclass(frozen=True)
class SoapCall:
    """One request: its operation (the Body's element) and its header blocks by name."""

    operation: Element
    headers: dict[str, Element]

    @property
    def name(self) -> str:
        return local_name(self.operation)

    @property
    def qualified_name(self) -> str:
        return self.operation.tag

    def header_value(self, block: str, child: str) -> str | None:
        """The text of `<block><child>` in the Header (SessionHeader/sessionId, ...)."""
        found = self.headers.get(block)
        if found is None:
            return None
        value = next((e.text for e in found if local_name(e) == child), None)
        return None if value is None else value.strip()

    def argument(self, name: str) -> str | None:
        """The text of the operation's child element `name`."""
        return next((e.text or "" for e in self.operation if local_name(e) == name), None)


def parse_call(raw: bytes) -> SoapCall | None:
    """The call an envelope carries, or None when there is no readable envelope holding one."""
    try:
        root = ElementTree.fromstring(raw)
    except Exception:  # defusedxml raises several unrelated types for hostile or broken XML
        return None
    if local_name(root) != "Envelope":
        return None
    parts = {local_name(child): child for child in root}
    body = parts.get("Body")
    operation = None if body is None else next(iter(body), None)
    if operation is None:
        return None
    header = parts.get("Header")
    blocks = {} if header is None else {local_name(block): block for block in header}
    return SoapCall(operation=operation, headers=blocks)


# The children of <login>, in the order the partner WSDL's sequence gives them.
LOGIN_ELEMENTS = ("username", "password")


class UnexpectedElement(Exception):
    """An element the request's schema does not allow where it stands."""

    def __init__(self, element: Element) -> None:
        super().__init__(f"Element {element.tag} invalid at this location")


def login_arguments(login: Element) -> tuple[str, str] | None:
    """(username, password) of a `<login>`, or None without a username.

    Raises UnexpectedElement for a login holding anything but one username then one
    password: a second username must not silently win over the first."""
    values: dict[str, str] = {}
    for index, element in enumerate(login):
        if index >= len(LOGIN_ELEMENTS) or local_name(element) != LOGIN_ELEMENTS[index]:
            raise UnexpectedElement(element)
        values[LOGIN_ELEMENTS[index]] = element.text or ""
    if "username" not in values:
        return None
    return values["username"], values.get("password", "")


def soap_response(namespace: str, operation: str, result: str) -> Response:
    """`<{operation}Response>` holding `result` (already XML), in the API's namespace; the
    `sf:` prefix is bound to its records' namespace (the partner API's sObjects)."""
    records_ns = namespace.replace("urn:", "urn:sobject.", 1)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<soapenv:Envelope xmlns:soapenv="{ENVELOPE_NS}" xmlns="{namespace}" '
        f'xmlns:xsi="{XSI_NS}" xmlns:sf="{records_ns}">'
        f"<soapenv:Body><{operation}Response>{result}</{operation}Response></soapenv:Body>"
        "</soapenv:Envelope>"
    )
    return Response(content=body, media_type=SOAP_MEDIA_TYPE)


def user_info_xml(session: Session, seconds_valid: int) -> str:
    """The partner API's GetUserInfoResult fields (login's `userInfo`, getUserInfo's result)."""
    username = escape(session.username)
    return (
        "<accessibilityMode>false</accessibilityMode>"
        "<currencySymbol>$</currencySymbol>"
        "<orgDefaultCurrencyIsoCode>USD</orgDefaultCurrencyIsoCode>"
        "<organizationMultiCurrency>false</organizationMultiCurrency>"
        f"<organizationId>{ORG_ID}</organizationId>"
        "<organizationName>localforce</organizationName>"
        f"<sessionSecondsValid>{seconds_valid}</sessionSecondsValid>"
        f"<userEmail>{username}</userEmail>"
        f"<userFullName>{username}</userFullName>"
        f"<userId>{session.user_id}</userId>"
        "<userLanguage>en_US</userLanguage>"
        "<userLocale>en_US</userLocale>"
        f"<userName>{username}</userName>"
        "<userTimeZone>America/Los_Angeles</userTimeZone>"
        "<userType>Standard</userType>"
    )


def login_response(
    base_url: str, namespace: str, api_version: str, session: Session, seconds_valid: int
) -> Response:
    api = "c" if "enterprise" in namespace else "u"
    server_url = f"{base_url}/services/Soap/{api}/{api_version}/{ORG_ID[:15]}"
    metadata_url = f"{base_url}/services/Soap/m/{api_version}/{ORG_ID[:15]}"
    result = (
        "<result>"
        f"<metadataServerUrl>{metadata_url}</metadataServerUrl>"
        "<passwordExpired>false</passwordExpired>"
        "<sandbox>false</sandbox>"
        f"<serverUrl>{server_url}</serverUrl>"
        f"<sessionId>{session.token}</sessionId>"
        f"<userId>{session.user_id}</userId>"
        f"<userInfo>{user_info_xml(session, seconds_valid)}</userInfo>"
        "</result>"
    )
    return soap_response(namespace, "login", result)


def client_fault(message: str) -> Response:
    """A fault for a request the schema refuses (soapenv:Client)."""
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<soapenv:Envelope xmlns:soapenv="{ENVELOPE_NS}">'
        "<soapenv:Body><soapenv:Fault>"
        "<faultcode>soapenv:Client</faultcode>"
        f"<faultstring>{escape(message)}</faultstring>"
        "</soapenv:Fault></soapenv:Body></soapenv:Envelope>"
    )
    return Response(content=body, status_code=500, media_type=SOAP_MEDIA_TYPE)


# The fault type of each exception code (the API's WSDL), else UnexpectedErrorFault.
FAULT_TYPES = {
    "INVALID_LOGIN": "LoginFault",
    "UNSUPPORTED_API_VERSION": "LoginFault",
    "MALFORMED_QUERY": "MalformedQueryFault",
    "INVALID_FIELD": "InvalidFieldFault",
    "INVALID_TYPE": "InvalidSObjectFault",
    "INVALID_QUERY_LOCATOR": "InvalidQueryLocatorFault",
    "INVALID_QUERY_FILTER_OPERATOR": "InvalidQueryFilterOperatorFault",
}


def api_fault(code: str, message: str, fault_namespace: str) -> Response:
    """An API fault as Salesforce sends it: `sf:CODE`, then the typed detail."""
    text = escape(message)
    fault_type = FAULT_TYPES.get(code, "UnexpectedErrorFault")
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<soapenv:Envelope xmlns:soapenv="{ENVELOPE_NS}" '
        f'xmlns:sf="{fault_namespace}" xmlns:xsi="{XSI_NS}">'
        "<soapenv:Body><soapenv:Fault>"
        f"<faultcode>sf:{code}</faultcode>"
        f"<faultstring>{code}: {text}</faultstring>"
        f'<detail><sf:{fault_type} xsi:type="sf:{fault_type}">'
        f"<sf:exceptionCode>{code}</sf:exceptionCode>"
        f"<sf:exceptionMessage>{text}</sf:exceptionMessage>"
        f"</sf:{fault_type}></detail>"
        "</soapenv:Fault></soapenv:Body></soapenv:Envelope>"
    )
    return Response(content=body, status_code=500, media_type=SOAP_MEDIA_TYPE)
