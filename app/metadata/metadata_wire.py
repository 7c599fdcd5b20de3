"""The Metadata API's XML as a client writes and reads it: a call's envelope, and the results
(or the fault) of its response, as plain data. The tools that change a schema for an agent
(app.agents.mcp) and the reference agent's API (app.tasks.solving) call the API with it, as any
client does; the server writes its components' elements with `metadata_xml` too."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from xml.etree.ElementTree import Element
from xml.sax.saxutils import escape

from defusedxml import ElementTree

NAMESPACE = "http://soap.sforce.com/2006/04/metadata"
ENVELOPE_NS = "http://schemas.xmlsoap.org/soap/envelope/"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
API_VERSION = "59.0"
PATH = f"/services/Soap/m/{API_VERSION}"


# An element's name as a component may give it (the caller's keys become tags).
ELEMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class InvalidElementName(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"{name!r} is not the name of a metadata element")


class MetadataFault(Exception):
    """A call the API answered with a SOAP fault."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return escape(str(value))


def metadata_xml(values: Mapping[str, Any]) -> str:
    """Elements for `values`: a mapping nests, a list repeats its element, None is left out."""
    parts = []
    for name, value in values.items():
        if not ELEMENT_NAME.match(name):
            raise InvalidElementName(name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is None:
                continue
            inner = metadata_xml(item) if isinstance(item, Mapping) else _text(item)
            parts.append(f"<{name}>{inner}</{name}>")
    return "".join(parts)


def envelope(session_id: str, operation: str, body: str) -> bytes:
    """A call of `operation` whose elements are `body`, in the session `session_id`."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="{ENVELOPE_NS}" '
        f'xmlns:xsi="{XSI_NS}" xmlns="{NAMESPACE}"><soapenv:Header><SessionHeader>'
        f"<sessionId>{escape(session_id)}</sessionId></SessionHeader></soapenv:Header>"
        f"<soapenv:Body><{operation}>{body}</{operation}></soapenv:Body></soapenv:Envelope>"
    ).encode()


def components_body(type_name: str, components: Sequence[Mapping[str, Any]]) -> str:
    """createMetadata's, updateMetadata's or upsertMetadata's elements: each component typed."""
    return "".join(
        f'<metadata xsi:type="{escape(type_name)}">{metadata_xml(component)}</metadata>'
        for component in components
    )


def read_body(type_name: str, full_names: Sequence[str]) -> str:
    """readMetadata's elements."""
    names = "".join(f"<fullNames>{escape(name)}</fullNames>" for name in full_names)
    return f"<type>{escape(type_name)}</type>{names}"


def _local(element: Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


class NestedTooDeep(ValueError):
    """An element nested deeper than its reader takes: `element` is the first too deep."""

    def __init__(self, element: Element) -> None:
        super().__init__(_local(element))
        self.element = element


def element_values(element: Element, max_depth: int | None = None, depth: int = 0) -> Any:
    """An element as data: None where nil, its text, or its children by name (a list where a
    name repeats); nested deeper than `max_depth`, NestedTooDeep."""
    if element.get(f"{{{XSI_NS}}}nil") == "true":
        return None
    children = list(element)
    if not children:
        return (element.text or "").strip()
    if max_depth is not None and depth >= max_depth:
        raise NestedTooDeep(children[0])
    found: dict[str, Any] = {}
    for child in children:
        name, value = _local(child), element_values(child, max_depth, depth + 1)
        if name in found:
            previous = found[name]
            found[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            found[name] = value
    return found


def results(response: bytes | str) -> list[Any]:
    """The `result` elements of a response, as data; a fault raised as MetadataFault."""
    root = ElementTree.fromstring(response)
    body = next((child for child in root if _local(child) == "Body"), None)
    answer = next(iter(body), None) if body is not None else None
    if answer is None:
        raise MetadataFault("UNKNOWN_EXCEPTION", "The response has no body")
    if _local(answer) == "Fault":
        parts = {_local(child): (child.text or "").strip() for child in answer}
        code = parts.get("faultcode", "").rpartition(":")[2]
        raise MetadataFault(code, parts.get("faultstring", ""))
    return [element_values(child) for child in answer if _local(child) == "result"]


def read_records(found: Sequence[Any]) -> list[Any]:
    """readMetadata's records, of its results, in the order the call named them (None: no
    such component)."""
    result = found[0] if found else None
    records = result.get("records") if isinstance(result, dict) else []
    return records if isinstance(records, list) else [records]
