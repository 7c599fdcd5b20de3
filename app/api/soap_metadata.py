"""The Metadata API (`/services/Soap/m/`): its calls that read the org's schema
(describeMetadata, listMetadata, readMetadata), those that change a sandbox's custom objects
and fields (createMetadata, updateMetadata, upsertMetadata, deleteMetadata), and their XML;
its other calls answer a fault naming them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from xml.etree.ElementTree import Element
from xml.sax.saxutils import escape

from fastapi import Response

from app.api.routing import SalesforceRouter
from app.api.soap import XSI_NS, UnexpectedElement, client_fault, local_name
from app.api.soap_calls import Call, Operation, SoapApi, soap_endpoint
from app.api.threads import run_in_request_thread
from app.errors import FeatureNotSupported, SalesforceError
from app.metadata import metadata_wire
from app.metadata.metadata_wire import NAMESPACE, metadata_xml
from app.services.metadata_components import describe_metadata, list_components, read_components
from app.services.schema_admin import (
    Changer,
    SaveResult,
    change_field,
    change_object,
    rename_object,
)

XSI_TYPE = f"{{{XSI_NS}}}type"
MAX_COMPONENTS = 10
# How deep a component's elements may nest (a CustomObject's fields' value sets: 5).
MAX_DEPTH = 16


def _children(element: Element, name: str) -> list[Element]:
    return [child for child in element if local_name(child) == name]


def _child_text(element: Element, name: str) -> str:
    found = _children(element, name)
    return (found[0].text or "").strip() if found else ""


async def describe_metadata_call(call: Call) -> Response:
    await call.session()
    return call.respond(f"<result>{metadata_xml(describe_metadata())}</result>")


async def list_metadata_call(call: Call) -> Response:
    ctx = await call.org()
    queries = _children(call.soap.operation, "queries")
    types = [_child_text(query, "type") for query in queries]

    def listed() -> list[dict[str, Any]]:
        return [item for name in types for item in list_components(ctx.registry, name)]

    found = await run_in_request_thread(listed)
    return call.respond("".join(f"<result>{metadata_xml(item)}</result>" for item in found))


async def read_metadata_call(call: Call) -> Response:
    ctx = await call.org()
    operation = call.soap.operation
    type_name = _child_text(operation, "type")
    names = [(e.text or "").strip() for e in _children(operation, "fullNames")]
    records = await run_in_request_thread(read_components, ctx.registry, type_name, names)
    written = "".join(
        '<records xsi:nil="true"/>'
        if record is None
        else f'<records xsi:type="{escape(type_name)}">{metadata_xml(record)}</records>'
        for record in records
    )
    return call.respond(f"<result>{written}</result>")


def element_values(element: Element) -> Any:
    """A request's element as data (its text, or its children by name). No component nests
    deeper than MAX_DEPTH: a request that does is refused."""
    try:
        return metadata_wire.element_values(element, MAX_DEPTH)
    except metadata_wire.NestedTooDeep as error:
        raise UnexpectedElement(error.element) from None


def _component_type(element: Element) -> str:
    """A `<metadata xsi:type="...">`'s type, without its namespace prefix."""
    return (element.get(XSI_TYPE) or "").rpartition(":")[2]


def _result_xml(result: SaveResult) -> str:
    errors = [
        {"fields": list(error.fields), "message": error.message, "statusCode": error.status_code}
        for error in result.errors
    ]
    values = {
        "created": result.created if result.created is not None else None,
        "errors": errors,
        "fullName": result.full_name,
        "success": result.success,
    }
    return f"<result>{metadata_xml(values)}</result>"


def _writes(operation: str, with_created: bool) -> Operation:
    """createMetadata, updateMetadata or upsertMetadata: each `<metadata>` component saved on
    its own (a CustomField; another type is refused by name)."""

    async def write(call: Call) -> Response:
        sandbox = await call.sandbox()
        components = _children(call.soap.operation, "metadata")
        _at_most(len(components))
        changes = [_changer(_component_type(component)) for component in components]
        try:  # read whole before any is saved
            values = [element_values(component) for component in components]
        except UnexpectedElement as error:
            return client_fault(str(error))

        def save() -> list[SaveResult]:
            sandboxes = call.state.sandboxes
            return [
                change(sandboxes, sandbox, operation, value)
                for change, value in zip(changes, values, strict=True)
            ]

        results = await run_in_request_thread(save)
        if not with_created:
            results = [replace(result, created=None) for result in results]
        return call.respond("".join(_result_xml(result) for result in results))

    return write


async def delete_metadata_call(call: Call) -> Response:
    sandbox = await call.sandbox()
    operation = call.soap.operation
    change = _changer(_child_text(operation, "type"))
    names = [(e.text or "").strip() for e in _children(operation, "fullNames")]
    _at_most(len(names))

    def delete() -> list[SaveResult]:
        sandboxes = call.state.sandboxes
        return [change(sandboxes, sandbox, "delete", {"fullName": name}) for name in names]

    results = await run_in_request_thread(delete)
    return call.respond("".join(_result_xml(result) for result in results))


def _at_most(count: int) -> None:
    # The CRUD calls take at most 10 components each; the fault's code and wording are the
    # SOAP API's for a call over its own limit [belief].
    if count > MAX_COMPONENTS:
        raise SalesforceError(
            f"record limit reached. cannot submit more than {MAX_COMPONENTS} records into "
            "this call",
            error_code="EXCEEDED_ID_LIMIT",
        )


async def rename_metadata_call(call: Call) -> Response:
    """renameMetadata of a CustomObject this sandbox created (renaming fields is not built)."""
    sandbox = await call.sandbox()
    operation = call.soap.operation
    type_name = _child_text(operation, "type")
    if type_name != "CustomObject":
        raise FeatureNotSupported(
            f"renaming the Metadata API's {type_name or 'untyped'} components"
        )
    old, new = _child_text(operation, "oldFullName"), _child_text(operation, "newFullName")
    result = await run_in_request_thread(rename_object, call.state.sandboxes, sandbox, old, new)
    return call.respond(_result_xml(result))


# The component types the CRUD calls change, and what changes each.
CHANGERS: dict[str, Changer] = {"CustomField": change_field, "CustomObject": change_object}


def _changer(type_name: str) -> Changer:
    found = CHANGERS.get(type_name)
    if found is None:
        raise FeatureNotSupported(
            f"changing the Metadata API's {type_name or 'untyped'} components"
        )
    return found


OPERATIONS: dict[str, Operation] = {
    "createMetadata": _writes("create", with_created=False),
    "updateMetadata": _writes("update", with_created=False),
    "upsertMetadata": _writes("upsert", with_created=True),
    "deleteMetadata": delete_metadata_call,
    "renameMetadata": rename_metadata_call,
    "describeMetadata": describe_metadata_call,
    "listMetadata": list_metadata_call,
    "readMetadata": read_metadata_call,
}
# The Metadata WSDL's other calls.
UNBUILT = frozenset(
    {
        "cancelDeploy", "checkDeployStatus", "checkRetrieveStatus", "deploy",
        "deployRecentValidation", "describeValueType", "retrieve",
    }
)  # fmt: skip
METADATA = SoapApi(
    name="the Metadata API",
    namespace=NAMESPACE,
    operations=OPERATIONS,
    unbuilt=UNBUILT,
)

router = SalesforceRouter()
for path in ("/services/Soap/m/{version}", "/services/Soap/m/{version}/{org_id}"):
    # XML described by a WSDL, not OpenAPI.
    router.add_api_route(path, soap_endpoint(METADATA), methods=["POST"], include_in_schema=False)
