"""Query results in the partner SOAP API's XML, from the REST API's JSON of the same query.

A record is `<records xsi:type="sf:sObject">`: its `sf:type`, its `sf:Id` (nil when the query
did not select it), then each selected field as `sf:Field` in SELECT order, the Id again among
them as the partner API repeats it. A parent is a nested sObject, a child subquery a nested
QueryResult, a compound (an address) its components, a null `xsi:nil`. Datetimes are written
in UTC with `Z`, as the SOAP API writes them.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from app.metadata.values import rest_datetime_as_z


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return escape(rest_datetime_as_z(str(value)))


def record_xml(record: dict[str, Any], element: str = "records", prefix: str = "sf:") -> str:
    """A record as an sObject; `prefix` is its fields' namespace prefix (the partner API's
    `sf:`, none in Bulk API 1.0's XML)."""
    attributes = record.get("attributes", {})
    record_id = record.get("Id")  # nil unless selected
    parts = [
        f'<{element} xsi:type="{prefix}sObject">',
        f"<{prefix}type>{escape(str(attributes.get('type', '')))}</{prefix}type>",
        f"<{prefix}Id>{escape(str(record_id))}</{prefix}Id>"
        if record_id
        else f'<{prefix}Id xsi:nil="true"/>',
    ]
    parts.extend(
        _field_xml(name, value, prefix) for name, value in record.items() if name != "attributes"
    )
    parts.append(f"</{element}>")
    return "".join(parts)


def _field_xml(name: str, value: Any, prefix: str) -> str:
    tag = f"{prefix}{name}"
    if value is None:
        return f'<{tag} xsi:nil="true"/>'
    if isinstance(value, dict) and "records" in value:
        return query_result_xml(value, tag)
    if isinstance(value, dict) and "attributes" not in value:
        return _compound_xml(tag, value)
    if isinstance(value, dict):
        return record_xml(value, tag, prefix)
    return f"<{tag}>{_text(value)}</{tag}>"


def _compound_xml(tag: str, value: dict[str, Any]) -> str:
    """A compound's value (an address, a location): its type, then each component."""
    kind = "address" if "street" in value else "location"
    parts = "".join(_field_xml(key, part, "") for key, part in value.items())
    return f'<{tag} xsi:type="{kind}">{parts}</{tag}>'


def query_result_xml(result: dict[str, Any], element: str, locator: str | None = None) -> str:
    """A QueryResult: done, queryLocator, the records, size."""
    records = "".join(record_xml(record) for record in result.get("records", []))
    located = (
        f"<queryLocator>{escape(locator)}</queryLocator>"
        if locator
        else '<queryLocator xsi:nil="true"/>'
    )
    return (
        f'<{element} xsi:type="QueryResult">'
        f"<done>{_text(bool(result.get('done', True)))}</done>"
        f"{located}{records}"
        f"<size>{int(result.get('totalSize', 0))}</size>"
        f"</{element}>"
    )
