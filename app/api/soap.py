"""The SOAP login envelope: reading `<login>` requests and writing the response or fault.

Element names in the success body are unprefixed and the fault uses the literal `sf:` prefix,
because clients find them by tag name (simple-salesforce) or by regular expression (jsforce).
"""

from __future__ import annotations

from xml.etree.ElementTree import Element
from xml.sax.saxutils import escape

from defusedxml import ElementTree
from fastapi import Response

from app.services.auth import ORG_ID, Session

SOAP_MEDIA_TYPE = "text/xml; charset=utf-8"


def _local_name(element: Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


# The children of <login>, in the order the partner WSDL's sequence gives them.
LOGIN_ELEMENTS = ("username", "password")


class UnexpectedElement(Exception):
    """An element the login request's schema does not allow where it stands."""

    def __init__(self, element: Element) -> None:
        super().__init__(f"Element {element.tag} invalid at this location")


def parse_login_request(raw: bytes) -> tuple[str, str] | None:
    """(username, password) from a login envelope, or None when there is no readable login.

    Raises UnexpectedElement for a login holding anything but one username then one
    password: a second username must not silently win over the first."""
    try:
        root = ElementTree.fromstring(raw)
    except Exception:  # defusedxml raises several unrelated types for hostile or broken XML
        return None
    login = next((e for e in root.iter() if _local_name(e) == "login"), None)
    if login is None:
        return None
    values: dict[str, str] = {}
    for index, element in enumerate(login):
        if index >= len(LOGIN_ELEMENTS) or _local_name(element) != LOGIN_ELEMENTS[index]:
            raise UnexpectedElement(element)
        values[LOGIN_ELEMENTS[index]] = element.text or ""
    if "username" not in values:
        return None
    return values["username"], values.get("password", "")


def login_response(
    base_url: str, api_version: str, session: Session, seconds_valid: int
) -> Response:
    server_url = f"{base_url}/services/Soap/u/{api_version}/{ORG_ID[:15]}"
    metadata_url = f"{base_url}/services/Soap/m/{api_version}/{ORG_ID[:15]}"
    username = escape(session.username)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns="urn:partner.soap.sforce.com" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        "<soapenv:Body><loginResponse><result>"
        f"<metadataServerUrl>{metadata_url}</metadataServerUrl>"
        "<passwordExpired>false</passwordExpired>"
        "<sandbox>false</sandbox>"
        f"<serverUrl>{server_url}</serverUrl>"
        f"<sessionId>{session.token}</sessionId>"
        f"<userId>{session.user_id}</userId>"
        "<userInfo>"
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
        "</userInfo>"
        "</result></loginResponse></soapenv:Body></soapenv:Envelope>"
    )
    return Response(content=body, media_type=SOAP_MEDIA_TYPE)


def client_fault(message: str) -> Response:
    """A fault for a request the schema refuses (soapenv:Client), as HTTP 500 like every
    SOAP fault."""
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
        "<soapenv:Body><soapenv:Fault>"
        "<faultcode>soapenv:Client</faultcode>"
        f"<faultstring>{escape(message)}</faultstring>"
        "</soapenv:Fault></soapenv:Body></soapenv:Envelope>"
    )
    return Response(content=body, status_code=500, media_type=SOAP_MEDIA_TYPE)


def login_fault(code: str, message: str) -> Response:
    """A login fault as Salesforce sends it: HTTP 500 with the sf:-prefixed detail."""
    text = escape(message)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:sf="urn:fault.partner.soap.sforce.com" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        "<soapenv:Body><soapenv:Fault>"
        f"<faultcode>sf:{code}</faultcode>"
        f"<faultstring>{code}: {text}</faultstring>"
        '<detail><sf:LoginFault xsi:type="sf:LoginFault">'
        f"<sf:exceptionCode>{code}</sf:exceptionCode>"
        f"<sf:exceptionMessage>{text}</sf:exceptionMessage>"
        "</sf:LoginFault></detail>"
        "</soapenv:Fault></soapenv:Body></soapenv:Envelope>"
    )
    return Response(content=body, status_code=500, media_type=SOAP_MEDIA_TYPE)
